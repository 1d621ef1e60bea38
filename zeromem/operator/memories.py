from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString

from consolidation.corrections.undo import memory_restore, memory_unmerge
from consolidation.selectors import ReflectionScope
from zeromem.core import services
from zeromem.core.domain.policy import PolicyInvalid
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.core.policies import policy_of
from zeromem.models import ApiKey, IdempotencyKey, LlmUsage, Memory, MemoryRelation, MemorySource, Tenant
from zeromem.operator.actions import clustering_now, reflection_scopes_now, report_to
from zeromem.operator.policies import TenantForm, policy_table


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    fields = ("name", "user_id", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # keys are issued on the API key page, where the secret is shown once


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    form = TenantForm
    list_display = ("name", "created_at", "monthly_token_budget")
    search_fields = ("name",)
    readonly_fields = ("effective_policy",)
    inlines = [ApiKeyInline]

    @admin.display(description="policy in effect")
    def effective_policy(self, tenant: Tenant) -> SafeString:
        try:
            return policy_table(policy_of(tenant).as_json())
        except PolicyInvalid as invalid:
            return format_html("<p>{}</p>", f"{invalid}: the runs of this tenant fail until the overrides are fixed")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("prefix", "name", "tenant", "user_id", "created_at", "last_used_at", "revoked_at")
    list_filter = ("tenant", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("prefix", "name", "tenant__name", "user_id")
    readonly_fields = ("prefix", "created_at", "last_used_at", "revoked_at")
    fields = ("tenant", "name", "user_id", "prefix", "created_at", "last_used_at", "revoked_at")

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> tuple[str, ...]:
        # A key's user scope is fixed when it is issued: widening a live key would hand its holder other users.
        return (*self.readonly_fields, "user_id") if obj is not None else self.readonly_fields
    actions = ["revoke"]

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        secret = services.apikey_issue(key=obj)
        self.message_user(request, f"New API key for {obj.tenant} (copy it now, it is shown only once): "
                                   f"{secret}", messages.WARNING)

    @admin.action(description="Revoke selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        for key in queryset:
            services.apikey_revoke(key=key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).")


class SourceInline(admin.TabularInline):
    model = MemorySource
    fk_name = "memory"
    fields = ("source", "source_memory_id", "source_content_hash", "source_content", "source_state")
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name = "source"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="content")
    def source_content(self, link: MemorySource) -> str:
        return link.source.content if link.source else "(deleted)"

    @admin.display(description="state")
    def source_state(self, link: MemorySource) -> str:
        return link.source.state if link.source else "deleted"


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    list_display = ("short_content", "tenant", "user_id", "entity_id", "namespace", "memory_type", "state",
                    "kind", "importance", "created_at")
    list_filter = ("tenant", "memory_type", "state", "kind", "namespace",
                   ("entity_id", admin.AllValuesFieldListFilter))
    search_fields = ("content", "user_id", "entity_id", "=id")
    date_hierarchy = "created_at"
    list_select_related = ("tenant",)
    inlines = [SourceInline]
    exclude = ("embedding",)
    # The state machine owns state and its timestamps: nothing here may assign them (STYLE.md §3).
    readonly_fields = ("id", "tenant", "state", "archive_reason", "content_hash", "consolidated_at",
                       "reflected_at", "archived_at", "superseded_by", "created_at", "updated_at",
                       "has_embedding")

    @admin.display(description="content")
    def short_content(self, memory: Memory) -> str:
        return memory.content[:100]

    @admin.display(boolean=True)
    def has_embedding(self, memory: Memory) -> bool:
        return memory.embedding is not None

    actions = ["run_clustering_now", "run_clustering_now_forced", "trigger_reflection", "trigger_reflection_forced",
               "unmerge", "restore"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # memories arrive through the API

    @admin.action(description="Run clustering now (for the users of the selected memories)")
    def run_clustering_now(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        report_to(lambda text, level: self.message_user(request, text, level),
                  clustering_now(users=queryset.values_list("tenant_id", "user_id").distinct(), force=False))

    @admin.action(description="Run clustering now, forced (recency window and current session included)")
    def run_clustering_now_forced(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        report_to(lambda text, level: self.message_user(request, text, level),
                  clustering_now(users=queryset.values_list("tenant_id", "user_id").distinct(), force=True))

    @admin.action(description="Reflect now (for the entities of the selected memories)")
    def trigger_reflection(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        report_to(lambda text, level: self.message_user(request, text, level),
                  reflection_scopes_now(scopes=_scopes(queryset), force=False))

    @admin.action(description="Reflect now, forced (the current session included)")
    def trigger_reflection_forced(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        report_to(lambda text, level: self.message_user(request, text, level),
                  reflection_scopes_now(scopes=_scopes(queryset), force=True))

    @admin.action(description="Unmerge selected semantic memories (sources back to raw)")
    def unmerge(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:

        self._undo(request, queryset, lambda m: memory_unmerge(tenant_id=m.tenant_id, semantic_id=m.id,
                                                                actor=f"admin:{request.user}"), "unmerged")

    @admin.action(description="Restore selected archived memories")
    def restore(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:

        self._undo(request, queryset, lambda m: memory_restore(tenant_id=m.tenant_id, memory_id=m.id,
                                                                actor=f"admin:{request.user}"), "restored")

    def _undo(self, request: HttpRequest, queryset: QuerySet[Memory], undo: Any, done: str) -> None:

        count, refusals = 0, []
        for memory in queryset:
            try:
                undo(memory)
                count += 1
            except TransitionRefused as exc:
                refusals.append(f"{memory.id}: {exc}")
        self.message_user(request, f"{count} memory(ies) {done}.")
        for refusal in refusals:
            self.message_user(request, f"Refused — {refusal}", messages.ERROR)


def _scopes(memories: QuerySet[Memory]) -> list[ReflectionScope]:
    return [ReflectionScope(*row) for row in memories.values_list(
        "tenant_id", "user_id", "entity_id", "namespace").distinct().order_by()]


@admin.register(MemoryRelation)
class MemoryRelationAdmin(admin.ModelAdmin):
    list_display = ("relation_type", "from_memory", "to_memory", "flagged", "score", "created_at")
    list_filter = ("relation_type", "flagged", "tenant")
    raw_id_fields = ("from_memory", "to_memory")


@admin.register(IdempotencyKey)
class IdempotencyKeyAdmin(admin.ModelAdmin):
    list_display = ("key", "tenant", "created_at")
    list_filter = ("tenant",)
    search_fields = ("key",)
    readonly_fields = ("tenant", "key", "request_hash", "response", "created_at")



@admin.register(LlmUsage)
class LlmUsageAdmin(admin.ModelAdmin):
    list_display = ("tenant", "month", "purpose", "calls", "prompt_tokens", "completion_tokens", "cost_usd")
    list_filter = ("tenant", "purpose", "month")
    readonly_fields = [f.name for f in LlmUsage._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
