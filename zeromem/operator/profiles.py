from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from consolidation.selectors import ReflectionScope
from profiles.models import MemoryProfile
from zeromem.operator.actions import reflection_scopes_now, report_to


@admin.register(MemoryProfile)
class MemoryProfileAdmin(admin.ModelAdmin):
    list_display = ("tenant", "user_id", "entity_id", "namespace", "version", "item_count", "updated_at")
    list_filter = ("tenant", "namespace")
    search_fields = ("user_id", "entity_id", "summary")
    fields = ("tenant", "user_id", "entity_id", "namespace", "version", "summary", "preference_items",
              "behavior_items", "fact_items", "created_at", "updated_at")
    readonly_fields = fields
    actions = ["trigger_reflection", "trigger_reflection_forced"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # profiles are written by reflection

    @admin.display(description="items")
    def item_count(self, profile: MemoryProfile) -> int:
        return len(profile.preferences) + len(profile.behaviors) + len(profile.facts)

    @admin.display(description="preferences")
    def preference_items(self, profile: MemoryProfile) -> str:
        return _items_table(profile.preferences)

    @admin.display(description="behaviors")
    def behavior_items(self, profile: MemoryProfile) -> str:
        return _items_table(profile.behaviors)

    @admin.display(description="facts")
    def fact_items(self, profile: MemoryProfile) -> str:
        return _items_table(profile.facts)

    @admin.action(description="Reflect now (the selected profiles)")
    def trigger_reflection(self, request: HttpRequest, queryset: QuerySet[MemoryProfile]) -> None:
        report_to(lambda text, level: self.message_user(request, text, level),
                  reflection_scopes_now(scopes=_scopes(queryset), force=False))

    @admin.action(description="Reflect now, forced (the current session included)")
    def trigger_reflection_forced(self, request: HttpRequest, queryset: QuerySet[MemoryProfile]) -> None:
        report_to(lambda text, level: self.message_user(request, text, level),
                  reflection_scopes_now(scopes=_scopes(queryset), force=True))


def _scopes(profiles: QuerySet[MemoryProfile]) -> list[ReflectionScope]:
    return [ReflectionScope(p.tenant_id, p.user_id, p.entity_id or None, p.namespace) for p in profiles]


def _memory_links(ids: list[str]) -> Any:
    return format_html_join(" ", '<a href="{}">{}</a>',
                            ((reverse("admin:zeromem_memory_change", args=[i]), i[:8]) for i in ids))


def _items_table(items: list[dict[str, Any]]) -> str:
    """Each item with its confidence, the semantic memory reflection wrote for it and its source memories."""
    if not items:
        return "—"
    rows = format_html_join(
        "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        ((item["category"], item["statement"], item["confidence"], _memory_links(item.get("memory_ids", [])),
          _memory_links(item["source_ids"])) for item in items))
    return format_html("<table><tr><th>category</th><th>statement</th><th>confidence</th><th>insight memory</th>"
                       "<th>sources</th></tr>{}</table>", rows)
