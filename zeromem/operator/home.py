"""What the operator home and a user's page show (selectors: a few grouped queries each, never a loop over
memories). The home answers the questions of a day: what ran and what it changed, what failed, what waits for
review, what the LLM cost, who is behind, what changed yesterday."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.db.models import Count, Q, Sum
from django.utils import timezone

from consolidation.corrections.review import ReviewFilter, review_queue
from consolidation.models import ConsolidationRun, LedgerEntry, RunStatus
from consolidation.selectors import ClusteringBacklog, clustering_backlog, consolidation_lag
from profiles.models import MemoryProfile
from zeromem.models import LlmUsage, Memory, MemoryState, Tenant
from zeromem.operator.wording import duration_words

RECENT_RUNS = 50
LAGGING_USERS = 10
ACTIVE_USERS = 15


@dataclass(frozen=True)
class Lag:
    tenant_id: int
    tenant: str
    user_id: str
    hours: float

    @property
    def words(self) -> str:
        return duration_words(self.hours)


@dataclass(frozen=True)
class Yesterday:
    day: date
    memories: int  # arrived that day
    runs: dict[str, int]  # by status
    changes: dict[str, int]  # ledger rows by action (merge, supersede, …)


@dataclass(frozen=True)
class Home:
    since: datetime
    runs: list[ConsolidationRun]  # of the last 24 h, newest first (at most RECENT_RUNS)
    runs_by_status: dict[str, int]
    failures: list[ConsolidationRun]
    review_waiting: dict[str, int]  # undecided changes by action
    cost_24h: Decimal
    llm_calls_24h: int
    cost_this_month: Decimal
    lag: list[Lag]
    yesterday: Yesterday
    active_users: list[tuple[int, str, str, int]]  # (tenant id, tenant, user, memories) that arrived in 24 h

    @property
    def review_total(self) -> int:
        return sum(self.review_waiting.values())


def operator_home(*, now: datetime | None = None, tenant_id: int | None = None) -> Home:
    now = now or timezone.now()
    since = now - timedelta(hours=24)
    scope = Q() if tenant_id is None else Q(tenant_id=tenant_id)
    runs = ConsolidationRun.objects.filter(scope, created_at__gte=since).select_related("tenant")
    money = runs.aggregate(cost=Sum("cost_usd"), calls=Sum("llm_calls"))
    waiting = review_queue(scope=ReviewFilter(tenant_id=tenant_id)).order_by().values_list("action").annotate(
        n=Count("id"))
    names = dict(Tenant.objects.values_list("id", "name"))
    return Home(
        since=since, runs=list(runs.order_by("-created_at")[:RECENT_RUNS]),
        runs_by_status=dict(runs.order_by().values_list("status").annotate(n=Count("id"))),
        failures=list(runs.filter(status=RunStatus.FAILED).order_by("-created_at")[:RECENT_RUNS]),
        review_waiting=dict(waiting), cost_24h=money["cost"] or Decimal(0), llm_calls_24h=money["calls"] or 0,
        cost_this_month=LlmUsage.objects.filter(scope, month=now.date().replace(day=1)).aggregate(
            cost=Sum("cost_usd"))["cost"] or Decimal(0),
        lag=[Lag(t, names[t], user, hours) for t, user, hours in consolidation_lag(tenant_id)[:LAGGING_USERS]
             if hours > 0],
        yesterday=what_changed_on(day=now.date() - timedelta(days=1), tenant_id=tenant_id),
        active_users=[(t, names[t], user, n) for t, user, n in Memory.objects.filter(scope, created_at__gte=since)
                      .values_list("tenant_id", "user_id").annotate(n=Count("id")).order_by("-n")[:ACTIVE_USERS]])


def what_changed_on(*, day: date, tenant_id: int | None = None) -> Yesterday:
    scope = Q() if tenant_id is None else Q(tenant_id=tenant_id)
    changes = (LedgerEntry.objects.filter(scope, created_at__date=day).exclude(action__startswith="transition.")
               .order_by().values_list("action").annotate(n=Count("id")))
    return Yesterday(
        day=day, memories=Memory.objects.filter(scope, created_at__date=day).count(),
        runs=dict(ConsolidationRun.objects.filter(scope, created_at__date=day).order_by().values_list("status")
                  .annotate(n=Count("id"))),
        changes=dict(sorted(changes, key=lambda row: -row[1])))


@dataclass(frozen=True)
class UserPage:
    tenant: Tenant
    user_id: str
    states: dict[str, dict[str, int]]  # memory type -> state -> count
    backlog: ClusteringBacklog
    lag_hours: float | None  # None: nothing waits past the recency window
    runs: list[ConsolidationRun]
    profiles: list[MemoryProfile]
    review_waiting: int

    @property
    def lag_words(self) -> str:
        return duration_words(self.lag_hours) if self.lag_hours is not None else "none (nothing waits past the window)"


def user_page(*, tenant: Tenant, user_id: str, now: datetime | None = None) -> UserPage:
    """One user: memories by type and state, what clustering may read now, recent runs, profiles, the queue."""
    now = now or timezone.now()
    states: dict[str, dict[str, int]] = {}
    for memory_type, state, count in (Memory.objects.filter(tenant=tenant, user_id=user_id).order_by()
                                      .values_list("memory_type", "state").annotate(n=Count("id"))):
        states.setdefault(memory_type, {s: 0 for s in MemoryState.values})[state] = count
    lag = next((hours for _, user, hours in consolidation_lag(tenant.id) if user == user_id and hours > 0), None)
    return UserPage(
        tenant=tenant, user_id=user_id, states=states, backlog=clustering_backlog(tenant=tenant, user_id=user_id,
                                                                                  now=now),
        lag_hours=lag, runs=list(ConsolidationRun.objects.filter(tenant=tenant, user_id=user_id)
                                 .select_related("tenant").order_by("-created_at")[:20]),
        profiles=list(MemoryProfile.objects.filter(tenant=tenant, user_id=user_id).order_by("entity_id")),
        review_waiting=review_queue(scope=ReviewFilter(tenant_id=tenant.id, user_id=user_id)).count())

