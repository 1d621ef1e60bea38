from __future__ import annotations

import json
import uuid
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from consolidation.corrections.review import Decided, review_decide_runs, review_states
from consolidation.models import (
    Canary,
    ConsolidationRun,
    LedgerEntry,
    RunKind,
    SessionEnd,
    WebhookDelivery,
    WebhookEndpoint,
)
from consolidation.selectors import clustering_backlog
from zeromem.models import Memory
from zeromem.operator.policies import policy_table
from zeromem.operator.run_words import run_changes, run_sentences
from zeromem.operator.wording import counted


class LedgerInline(admin.TabularInline):
    model = LedgerEntry
    fields = ("created_at", "action", "actor", "reason", "memory_ids", "scores", "undone_by", "reviewed_by")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    classes = ["collapse"]  # the run's page leads with the run in words; each row is one click away


@admin.register(ConsolidationRun)
class ConsolidationRunAdmin(admin.ModelAdmin):
    list_display = ("kind", "tenant", "user_id", "entity_id", "trigger", "status", "held", "reviewed",
                    "what_it_changed", "llm_calls", "cost_usd", "created_at")
    list_filter = ("kind", "status", "held", "trigger", "force", "tenant")
    search_fields = ("user_id", "entity_id", "=id")
    date_hierarchy = "created_at"
    list_select_related = ("tenant",)
    inlines = [LedgerInline]
    actions = ["approve_changes", "reject_changes"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # runs are requested through the triggers (API, the user page, commands, beat)

    def has_change_permission(self, request: HttpRequest, obj: ConsolidationRun | None = None) -> bool:
        return False  # a run is a record: its page reads, it has nothing to save

    def has_review_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("consolidation.change_ledgerentry")

    def get_readonly_fields(self, request: HttpRequest, obj: ConsolidationRun | None = None) -> list[str]:
        return ["in_words", "raw_result", "policy_used", *(f.name for f in ConsolidationRun._meta.fields)]

    def get_fieldsets(self, request: HttpRequest, obj: ConsolidationRun | None = None) -> Any:
        raw = [f.name for f in ConsolidationRun._meta.fields if f.name not in ("result", "timings", "policy")]
        return [(None, {"fields": ["in_words"]}),
                ("The run's fields", {"fields": raw, "classes": ["collapse"]}),
                ("The policy it ran under", {"fields": ["policy_used"], "classes": ["collapse"]}),
                ("Raw result and timings (JSON)", {"fields": ["raw_result"], "classes": ["collapse"]})]

    @admin.display(description="what it changed")
    def what_it_changed(self, run: ConsolidationRun) -> str:
        return run_changes(run)

    @admin.display(description="in words")
    def in_words(self, run: ConsolidationRun) -> str:
        backlog = (clustering_backlog(tenant=run.tenant, user_id=run.user_id, now=timezone.now())
                   if run.kind == RunKind.CLUSTERING and not run.reviewed else None)
        sentences = run_sentences(run, backlog=backlog, reviews=review_states(run_id=run.id))
        review = format_html('<li><a href="{}?run={}">Review this run\'s changes</a></li>', reverse("admin:review"),
                             run.id)
        return format_html('<ul class="run-in-words">{}{}</ul>',
                           format_html_join("", "<li>{}</li>", ((s,) for s in sentences)), review)

    @admin.display(description="result")
    def raw_result(self, run: ConsolidationRun) -> str:
        return format_html("<pre>{}</pre><pre>{}</pre>", json.dumps(run.result, indent=2, sort_keys=True),
                           json.dumps(run.timings, indent=2, sort_keys=True))

    @admin.action(description="Approve every undecided change of the selected runs", permissions=["review"])
    def approve_changes(self, request: HttpRequest, queryset: QuerySet[ConsolidationRun]) -> None:
        done = review_decide_runs(run_ids=list(queryset.values_list("id", flat=True)), decision="approve",
                                  actor=f"admin:{request.user.get_username()}")
        self._report(request, done, "approved")

    @admin.action(description="Reject (undo) every undecided change of the selected runs", permissions=["review"])
    def reject_changes(self, request: HttpRequest, queryset: QuerySet[ConsolidationRun]) -> None:
        done = review_decide_runs(run_ids=list(queryset.values_list("id", flat=True)), decision="reject",
                                  actor=f"admin:{request.user.get_username()}")
        self._report(request, done, "rejected")

    def _report(self, request: HttpRequest, done: Decided, verb: str) -> None:
        self.message_user(request, f"{counted(done.applied, 'change')} {verb}; {len(done.refused):,} refused.",
                          messages.WARNING if done.refused else messages.SUCCESS)
        for refusal in done.refused[:20]:
            self.message_user(request, f"Refused — {refusal}", messages.ERROR)

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
