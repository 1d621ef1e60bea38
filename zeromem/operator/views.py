"""The operator pages (thin: read the selectors, call the review service, render)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from consolidation.corrections import review
from consolidation.models import RunStatus
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.models import Tenant
from zeromem.operator import charts
from zeromem.operator.dashboard import dashboard_figures

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
        charts.horizontal_bars("Consolidation lag, users most behind", figures.lag, unit="h", threshold=24),
    ]
    return render(request, "admin/operator_dashboard.html", {
        **admin.site.each_context(request), "title": "Operator dashboard", "charts": [mark_safe(s) for s in svgs],
        "figures": figures, "tenants": Tenant.objects.order_by("name"), "tenant": tenant})


def review_queue(request: HttpRequest) -> HttpResponse:
    _require(request, "consolidation.view_ledgerentry")
    tenant = _tenant_filter(request)
    action = request.GET.get("action") if request.GET.get("action") in review.REVIEWABLE else None
    entries = review.review_queue(tenant_id=tenant.id if tenant else None, action=action)
    page = Paginator(entries, 20).get_page(request.GET.get("page"))
    return render(request, "admin/operator_review.html", {
        **admin.site.each_context(request), "title": "Review queue", "page": page,
        "items": review.review_items(list(page.object_list)), "tenants": Tenant.objects.order_by("name"),
        "tenant": tenant, "action": action, "actions": review.REVIEWABLE,
        "can_decide": request.user.has_perm("consolidation.change_ledgerentry")})


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
