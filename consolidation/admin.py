from __future__ import annotations

from django.contrib import admin

from consolidation.models import ConsolidationRun, LedgerEntry


class LedgerInline(admin.TabularInline):
    model = LedgerEntry
    fields = ("created_at", "action", "actor", "reason", "memory_ids", "scores")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(ConsolidationRun)
class ConsolidationRunAdmin(admin.ModelAdmin):
    list_display = ("kind", "tenant", "user_id", "entity_id", "trigger", "status", "reviewed", "clusters",
                    "merged", "created", "superseded", "archived", "llm_calls", "cost_usd", "created_at")
    list_filter = ("kind", "status", "trigger", "tenant")
    search_fields = ("user_id", "entity_id", "=id")
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in ConsolidationRun._meta.fields]
    inlines = [LedgerInline]


@admin.register(LedgerEntry)
class LedgerEntryAdmin(admin.ModelAdmin):
    list_display = ("created_at", "action", "actor", "tenant", "user_id", "run", "reason", "undoable")
    list_filter = ("action", "undoable", "tenant")
    search_fields = ("user_id", "reason", "actor")
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in LedgerEntry._meta.fields]
