from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import admin
from django.utils.safestring import SafeString

from consolidation.models import (
    Canary,
    ConsolidationRun,
    LedgerEntry,
    SessionEnd,
    WebhookDelivery,
    WebhookEndpoint,
)
from zeromem.models import Memory
from zeromem.operator.policies import policy_table


class LedgerInline(admin.TabularInline):
    model = LedgerEntry
    fields = ("created_at", "action", "actor", "reason", "memory_ids", "scores", "undone_by", "reviewed_by")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(ConsolidationRun)
class ConsolidationRunAdmin(admin.ModelAdmin):
    list_display = ("kind", "tenant", "user_id", "entity_id", "trigger", "status", "reviewed", "clusters",
                    "merged", "created", "superseded", "claims_retired", "flagged", "archived", "llm_calls", "cost_usd",
                    "created_at")
    list_filter = ("kind", "status", "trigger", "tenant")
    search_fields = ("user_id", "entity_id", "=id")
    date_hierarchy = "created_at"
    readonly_fields = [*(f.name for f in ConsolidationRun._meta.fields if f.name != "policy"), "policy_used"]
    inlines = [LedgerInline]

    @admin.display(description="policy")
    def policy_used(self, run: ConsolidationRun) -> SafeString:
        """The policy the run worked under, what differs from the defaults in bold."""
        return policy_table(run.policy)


@admin.register(LedgerEntry)
class LedgerEntryAdmin(admin.ModelAdmin):
    list_display = ("created_at", "action", "actor", "tenant", "user_id", "run", "reason", "undoable")
    list_filter = ("action", "undoable", "tenant")
    search_fields = ("user_id", "reason", "actor")
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in LedgerEntry._meta.fields]


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ("url", "tenant", "event_types", "active", "created_at")
    list_filter = ("tenant", "active")


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    """The delivery log: every event sent to an endpoint, its attempts and the last answer."""

    list_display = ("created_at", "endpoint", "event_type", "status", "attempts", "last_status_code",
                    "delivered_at")
    list_filter = ("status", "event_type", "endpoint__tenant")
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: Any) -> bool:
        return False


@admin.register(SessionEnd)
class SessionEndAdmin(admin.ModelAdmin):
    list_display = ("created_at", "tenant", "user_id", "session_id")
    list_filter = ("tenant",)
    search_fields = ("user_id", "session_id")
    readonly_fields = ("tenant", "user_id", "session_id", "created_at")


class CanaryForm(forms.ModelForm):
    class Meta:
        model = Canary
        fields = ("tenant", "user_id", "query", "expected_memory_ids", "active", "note")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        tenant, user_id, expected = data.get("tenant"), data.get("user_id"), data.get("expected_memory_ids")
        if tenant is None or not user_id or expected is None:
            return data
        try:
            ids = [uuid.UUID(str(value)) for value in expected]
        except (TypeError, ValueError):
            raise forms.ValidationError({"expected_memory_ids": "a JSON list of memory ids"}) from None
        if not ids:
            raise forms.ValidationError({"expected_memory_ids": "name at least one memory the query must find"})
        found = set(Memory.objects.filter(tenant=tenant, user_id=user_id, id__in=ids).values_list("id", flat=True))
        missing = [str(i) for i in ids if i not in found]
        if missing:
            raise forms.ValidationError({"expected_memory_ids": f"not memories of this user in this tenant: "
                                                                f"{', '.join(missing[:5])}"})
        data["expected_memory_ids"] = [str(i) for i in ids]
        return data


@admin.register(Canary)
class CanaryAdmin(admin.ModelAdmin):
    """Queries that must keep finding their memories: replayed before and after every clustering and
    reflection run of the user; a run that makes them worse is undone (the policy's canaries.max_drop)."""

    form = CanaryForm
    list_display = ("query", "tenant", "user_id", "active", "created_at")
    list_filter = ("tenant", "active")
    search_fields = ("user_id", "query", "note")
