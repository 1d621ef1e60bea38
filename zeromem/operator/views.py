"""The operator pages (thin: read the selectors, call the review service, render)."""

from __future__ import annotations

import uuid
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from consolidation.corrections import review
from consolidation.models import LedgerEntry, RunStatus
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.models import Tenant
from zeromem.operator import actions, charts
from zeromem.operator.dashboard import dashboard_figures
from zeromem.operator.home import user_page
from zeromem.operator.run_words import nothing_to_cluster, run_changes
from zeromem.operator.wording import counted, duration_words

BULK_DECISIONS = ("approve", "reject")  # a flagged contradiction is resolved one at a time, with its note
JOBS = ("cluster", "reflect")
OUTCOME_COLORS = {RunStatus.SUCCEEDED: "#38a169", RunStatus.FAILED: "#e53e3e", RunStatus.SKIPPED: "#a0aec0"}


def _require(request: HttpRequest, permission: str) -> None:
    if not request.user.has_perm(permission):
        raise PermissionDenied(f"needs the {permission} permission")


def _tenant_filter(request: HttpRequest) -> Tenant | None:
    value = request.GET.get("tenant", "")
    return Tenant.objects.filter(id=int(value)).first() if value.isdigit() else None


def dashboard(request: HttpRequest) -> HttpResponse:
    _require(request, "consolidation.view_consolidationrun")
    tenant = _tenant_filter(request)
    figures = dashboard_figures(tenant_id=tenant.id if tenant else None)
    days = [d.strftime("%b %d") for d in figures.days]
    svgs = [
        charts.line_chart("Memories by state (end of day)", days, figures.states),
        charts.stacked_bars("Memories created per day, by type", days, figures.created_by_type),
        charts.stacked_bars("Consolidation runs per day, by outcome", days, figures.runs, colors=OUTCOME_COLORS),
        charts.horizontal_bars("LLM cost per tenant (this window's months)", figures.cost_by_tenant, unit="USD"),
        charts.horizontal_bars("Consolidation lag, users most behind", figures.lag, threshold=24,
                               value_words=duration_words),
    ]
    return render(request, "admin/operator_dashboard.html", {
        **admin.site.each_context(request), "title": "Operator dashboard", "charts": [mark_safe(s) for s in svgs],
        "figures": figures, "tenants": Tenant.objects.order_by("name"), "tenant": tenant})


def review_queue(request: HttpRequest) -> HttpResponse:
    _require(request, "consolidation.view_ledgerentry")
    scope, form = _review_filter(request)
    entries = review.review_queue(scope=scope)
    page = Paginator(entries, 20).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "admin/operator_review.html", {
        **admin.site.each_context(request), "title": "Review queue", "page": page, "form": form,
        "items": review.review_items(list(page.object_list)), "query": query.urlencode(), "scope": scope,
        "can_decide": request.user.has_perm("consolidation.change_ledgerentry")})


class ReviewFilterForm(forms.Form):
    tenant = forms.ModelChoiceField(Tenant.objects.order_by("name"), required=False, empty_label="all tenants")
    user = forms.CharField(required=False, max_length=200)
    action = forms.ChoiceField(choices=[("", "all changes"), *[(a, a) for a in review.REVIEWABLE]], required=False,
                               label="Change")
    since = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    held = forms.BooleanField(required=False, label="Held runs only")
    run = forms.UUIDField(required=False, widget=forms.HiddenInput)


def _review_filter(request: HttpRequest) -> tuple[review.ReviewFilter, ReviewFilterForm]:
    """The queue's filter from the query string; a value that does not parse filters nothing (and says so)."""
    form = ReviewFilterForm(request.GET)
    data = form.cleaned_data if form.is_valid() else {}
    tenant = data.get("tenant")
    return review.ReviewFilter(tenant_id=tenant.id if tenant else None, user_id=data.get("user") or None,
                               action=data.get("action") or None, run_id=data.get("run"), since=data.get("since"),
                               until=data.get("until"), held=bool(data.get("held"))), form


@require_POST
def review_bulk(request: HttpRequest) -> HttpResponse:
    """One decision for the selected changes, or for every undecided change of a run."""
    _require(request, "consolidation.change_ledgerentry")
    decision, actor = request.POST.get("decision", ""), f"admin:{request.user.get_username()}"
    run_id = _uuid(request.POST.get("run", ""))
    if decision not in BULK_DECISIONS:
        messages.error(request, f"Not applied: choose {' or '.join(BULK_DECISIONS)}.")
    elif run_id is not None:
        _report(request, review.review_decide_runs(run_ids=[run_id], decision=decision, actor=actor), decision)
    else:
        entries = LedgerEntry.objects.filter(id__in=[int(i) for i in request.POST.getlist("entry") if i.isdigit()])
        _report(request, review.review_decide_many(entries=list(entries.order_by("-created_at")), decision=decision,
                                                   actor=actor), decision)
    return HttpResponseRedirect(request.POST.get("next") if _safe_next(request) else reverse("admin:review"))


def _report(request: HttpRequest, done: review.Decided, decision: str) -> None:
    messages.success(request, f"{decision.capitalize()}: {counted(done.applied, 'change')} decided.")
    for refusal in done.refused[:20]:
        messages.error(request, f"Not applied — {refusal}")


def _tenant_or_404(value: str) -> Tenant:
    return get_object_or_404(Tenant, id=int(value) if value.isdigit() else 0)


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def operator_user(request: HttpRequest) -> HttpResponse:
    """One user: memories by state, what clustering may read now, runs in words, profiles, clustering/reflect."""
    _require(request, "zeromem.view_memory")
    tenant, user_id = _tenant_or_404(request.GET.get("tenant", "")), request.GET.get("user", "")
    figures = user_page(tenant=tenant, user_id=user_id)
    return render(request, "admin/operator_user.html", {
        **admin.site.each_context(request), "title": f"User {user_id} ({tenant.name})", "page": figures,
        "runs": [(run, run_changes(run)) for run in figures.runs],
        "nothing_to_cluster": nothing_to_cluster(figures.backlog),
        "can_run": request.user.has_perm("consolidation.add_consolidationrun")})


@require_POST
def operator_user_run(request: HttpRequest, job: str) -> HttpResponse:
    """Run clustering now / Reflect now for the user of the page, forced when the box is ticked."""
    _require(request, "consolidation.add_consolidationrun")
    if job not in JOBS:
        raise Http404(f"no job {job!r}: {' or '.join(JOBS)}")
    tenant, user_id = _tenant_or_404(request.POST.get("tenant", "")), request.POST.get("user", "")
    force = request.POST.get("force") == "on"
    report = (actions.clustering_now(users=[(tenant.id, user_id)], force=force) if job == "cluster"
              else actions.reflection_now(tenant_id=tenant.id, user_id=user_id, force=force))
    actions.report_to(lambda text, level: messages.add_message(request, level, text), report)
    return HttpResponseRedirect(reverse("admin:operator_user") + "?" + urlencode({"tenant": tenant.id,
                                                                                 "user": user_id}))


@require_POST
def review_decision(request: HttpRequest, entry_id: int, decision: str) -> HttpResponse:
    _require(request, "consolidation.change_ledgerentry")
    try:
        record = review.review_decide(entry_id=entry_id, decision=decision,
                                      actor=f"admin:{request.user.get_username()}",
                                      note=request.POST.get("note", "")[:500])
        messages.success(request, f"Recorded: {record.action} of change #{entry_id}.")
    except TransitionRefused as exc:  # refused reviews and undos both say why
        messages.error(request, f"Not applied: {exc}")
    return HttpResponseRedirect(request.POST.get("next") if _safe_next(request) else reverse("admin:review"))


def _safe_next(request: HttpRequest) -> bool:
    return str(request.POST.get("next", "")).startswith(reverse("admin:review"))
