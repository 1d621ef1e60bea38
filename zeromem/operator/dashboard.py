"""What the operator dashboard shows (issue 9), read from PostgreSQL: a few grouped queries, never a loop over
memories.

States over time are derived from each memory's timestamps (consolidated_at, archived_at): a memory counts as
archived from its archived_at on, consolidated from its consolidated_at until then, raw before. Deleted memories
leave the history, and an undo clears the timestamp it reverses, so this is today's view of the past.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.db.models import Count, F, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from consolidation.models import ConsolidationRun, RunStatus
from consolidation.selectors import consolidation_lag
from zeromem.models import LlmUsage, Memory, MemoryRelation, MemoryState, MemoryType, Tenant

RUN_OUTCOMES = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.SKIPPED)


@dataclass
class Dashboard:
    days: list[date]
    states: dict[str, list[float]]  # raw / consolidated / archived, at the end of each day
    created_by_type: dict[str, list[float]]  # memories created per day, by memory type
    runs: dict[str, list[float]]  # runs started per day, by outcome
    cost_by_tenant: list[tuple[str, float]]  # LLM cost (USD) over the window's months
    tokens_by_tenant: list[tuple[str, int, int]]  # (tenant, calls, tokens)
    lag: list[tuple[str, float]]  # (tenant / user, hours) for the users most behind
    totals: dict[str, int]


def _per_day(queryset: QuerySet[Any], field: str, days: list[date]) -> list[float]:
    counts = dict(queryset.filter(**{f"{field}__date__gte": days[0]}).annotate(day=TruncDate(field))
                  .values_list("day").annotate(n=Count("id")).values_list("day", "n"))
    return [float(counts.get(day, 0)) for day in days]


def _cumulative(queryset: QuerySet[Any], field: str, days: list[date]) -> list[float]:
    running = float(queryset.filter(**{f"{field}__date__lt": days[0]}).count())
    values = []
    for added in _per_day(queryset, field, days):
        running += added
        values.append(running)
    return values


def _states(memories: QuerySet[Memory], days: list[date]) -> dict[str, list[float]]:
    created = _cumulative(memories, "created_at", days)
    archived = _cumulative(memories.filter(archived_at__isnull=False), "archived_at", days)
    consolidated_ever = _cumulative(memories.filter(consolidated_at__isnull=False), "consolidated_at", days)
    consolidated_then_archived = _cumulative(
        memories.filter(consolidated_at__isnull=False, archived_at__isnull=False), "archived_at", days)
    consolidated = [c - a for c, a in zip(consolidated_ever, consolidated_then_archived, strict=True)]
    raw = [max(0.0, t - c - a) for t, c, a in zip(created, consolidated, archived, strict=True)]
    return {MemoryState.RAW: raw, MemoryState.CONSOLIDATED: consolidated, MemoryState.ARCHIVED: archived}


def dashboard_figures(*, days: int = 30, tenant_id: int | None = None) -> Dashboard:
    today = timezone.now().date()
    window = [today - timedelta(days=days - 1 - i) for i in range(days)]
    scope = Q() if tenant_id is None else Q(tenant_id=tenant_id)
    memories = Memory.objects.filter(scope)
    runs = ConsolidationRun.objects.filter(scope)
    names = dict(Tenant.objects.values_list("id", "name"))
    types = sorted(memories.values_list("memory_type", flat=True).distinct())
    usage: Any = (LlmUsage.objects.filter(scope, month__gte=window[0].replace(day=1)).values("tenant_id")
                  .annotate(cost=Sum("cost_usd"), calls=Sum("calls"),
                            tokens=Sum(F("prompt_tokens") + F("completion_tokens"))).order_by("-cost"))
    return Dashboard(
        days=window, states=_states(memories, window),
        created_by_type={t: _per_day(memories.filter(memory_type=t), "created_at", window) for t in types},
        runs={o: _per_day(runs.filter(status=o), "created_at", window) for o in RUN_OUTCOMES},
        cost_by_tenant=[(names[u["tenant_id"]], float(u["cost"] or 0)) for u in usage][:15],
        tokens_by_tenant=[(names[u["tenant_id"]], int(u["calls"] or 0), int(u["tokens"] or 0)) for u in usage][:15],
        lag=[(f"{names[t]} / {user}", hours) for t, user, hours in consolidation_lag(tenant_id)[:15] if hours > 0],
        totals={"memories": memories.count(),
                "active_semantic": memories.filter(state=MemoryState.RAW, memory_type=MemoryType.SEMANTIC).count(),
                "runs_failed_in_window": runs.filter(status=RunStatus.FAILED, created_at__date__gte=window[0]).count(),
                "flagged_contradictions": _flagged(tenant_id)})


def _flagged(tenant_id: int | None) -> int:

    relations = MemoryRelation.objects.filter(flagged=True)
    return (relations if tenant_id is None else relations.filter(tenant_id=tenant_id)).count()
