"""Prometheus metrics, computed from PostgreSQL (and the broker) at scrape time.

Nothing is counted in process memory, so the figures are the same whichever web process answers the scrape and
however many prefork workers ran the jobs (ARCHITECTURE.md, "Runtime"): runs, LLM usage and prunes are rows already.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from django.db.models import Count, F, Sum
from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from consolidation.models import ConsolidationRun, RunKind
from consolidation.selectors import consolidation_lag
from zeromem.core.events import redis_client
from zeromem.models import LlmUsage, Memory, MemoryState, MemoryType, Tenant

CELERY_QUEUE = "celery"


class DatabaseCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        names = dict(Tenant.objects.values_list("id", "name"))
        yield _lag(names)
        yield _facts_per_batch(names)
        yield _queue_depth()
        yield _prunes(names)
        yield _semantic_store(names)
        yield _runs()
        yield from _llm(names)


def _lag(names: dict[int, str]) -> Metric:
    metric = GaugeMetricFamily("zeromem_consolidation_lag_hours", "Hours the oldest eligible raw memory has waited",
                               labels=["tenant", "user_id"])
    for tenant_id, user_id, hours in consolidation_lag():
        metric.add_metric([names[tenant_id], user_id], hours)
    return metric


def _facts_per_batch(names: dict[int, str]) -> Metric:
    """Insights kept per reflection call over the last 7 days (normal: 2–8)."""
    metric = GaugeMetricFamily("zeromem_facts_per_batch", "Insights kept per reflection call, last 7 days",
                               labels=["tenant"])
    since = timezone.now() - timedelta(days=7)
    facts: dict[int, int] = defaultdict(int)
    calls: dict[int, int] = defaultdict(int)
    for tenant_id, result in ConsolidationRun.objects.filter(kind=RunKind.REFLECTION, finished_at__gte=since) \
            .values_list("tenant_id", "result"):
        facts[tenant_id] += len(result.get("insights", []))
        calls[tenant_id] += int(result.get("calls_done", 0))
    for tenant_id, count in calls.items():
        metric.add_metric([names[tenant_id]], round(facts[tenant_id] / count, 3) if count else 0.0)
    return metric


def _queue_depth() -> Metric:
    metric = GaugeMetricFamily("zeromem_queue_depth", "Tasks waiting in the broker queue", labels=["queue"])
    with contextlib.suppress(Exception):  # the broker is down: the sample is absent, which is itself alertable
        metric.add_metric([CELERY_QUEUE], float(redis_client().llen(CELERY_QUEUE)))
    return metric


def _prunes(names: dict[int, str]) -> Metric:
    metric = CounterMetricFamily("zeromem_prune", "Memories archived or deleted by the lifecycle job",
                                 labels=["tenant"])
    rows = (ConsolidationRun.objects.filter(kind=RunKind.LIFECYCLE).values("tenant_id")
            .annotate(n=Sum(F("archived") + F("deleted"))))
    for row in rows:
        metric.add_metric([names[row["tenant_id"]]], float(row["n"] or 0))
    return metric


def _semantic_store(names: dict[int, str]) -> Metric:
    metric = GaugeMetricFamily("zeromem_semantic_store_size", "Active semantic memories per user",
                               labels=["tenant", "user_id"])
    rows = (Memory.objects.filter(state=MemoryState.RAW, memory_type=MemoryType.SEMANTIC).values("tenant_id", "user_id")
            .annotate(n=Count("id")))
    for row in rows:
        metric.add_metric([names[row["tenant_id"]], row["user_id"]], float(row["n"]))
    return metric


def _runs() -> Metric:
    metric = CounterMetricFamily("zeromem_runs", "Consolidation runs by kind and status", labels=["kind", "status"])
    for row in ConsolidationRun.objects.values("kind", "status").annotate(n=Count("id")).order_by("kind", "status"):
        metric.add_metric([row["kind"], row["status"]], float(row["n"]))
    return metric


def _llm(names: dict[int, str]) -> Iterator[Metric]:
    calls = CounterMetricFamily("zeromem_llm_calls", "LLM calls", labels=["tenant"])
    tokens = CounterMetricFamily("zeromem_llm_tokens", "LLM prompt + completion tokens", labels=["tenant"])
    cost = CounterMetricFamily("zeromem_llm_cost_usd", "LLM cost in USD (litellm's price map)", labels=["tenant"])
    rows: Any = LlmUsage.objects.values("tenant_id").annotate(
        calls=Sum("calls"), tokens=Sum(F("prompt_tokens") + F("completion_tokens")), cost=Sum("cost_usd"))
    for row in rows:
        label = [names[row["tenant_id"]]]
        calls.add_metric(label, float(row["calls"] or 0))
        tokens.add_metric(label, float(row["tokens"] or 0))
        cost.add_metric(label, float(row["cost"] or 0))
    yield from (calls, tokens, cost)
