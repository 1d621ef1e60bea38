"""The lifecycle job for one tenant (ARCHITECTURE.md, "Jobs"): decay, retention, purge.

1. refresh `activation` = importance × 2^(−days since last access (or creation) / half-life) of raw memories;
2. decay: raw memories with activation below the archive threshold and importance below the keep floor → archived;
3. retention: consolidated episodic memories older than the retention window with importance below the
   retention importance → archived (higher-importance ones stay as the audit trail);
4. purge: archived memories archived longer ago than the purge window → deleted (provenance keeps id and hash).
   A semantic memory that still cites consolidated memories is kept: it is their only citation.

Each step works in batches of ZEROMEMORY_LIFECYCLE_BATCH in short transactions: the batch is locked with
SKIP LOCKED (a row a consolidation run holds is left for the next pass instead of waited on), moved through
`memory_transition` or deleted, counted in the run, written to the ledger, and announced after commit
(`memory.archived` / `memory.deleted` with the batch's ids). Every threshold is the tenant's policy's (lifecycle).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

from consolidation.corrections.erasure import memories_delete
from consolidation.ledger import memory_transition
from consolidation.models import ConsolidationRun, RunKind, RunStatus
from consolidation.runs import LeaseLost, RunOutcome, run_fence, run_finish, run_in_process, run_policy
from consolidation.selectors import EPISODIC_TYPES
from zeromem.core.domain.policy import LifecyclePolicy, PolicyInvalid
from zeromem.core.events import event_emit
from zeromem.core.policies import policy_of
from zeromem.models import Memory, MemoryState, Tenant

# --- selection -------------------------------------------------------------------------------------------------

def activation_sql(now: datetime, half_life_days: float) -> RawSQL:
    return RawSQL("importance * power(2.0, -(extract(epoch from (%s::timestamptz - coalesce(last_accessed_at, "
                  "created_at))) / 86400.0) / %s)", [now, half_life_days])


def decay_candidates(tenant_id: int, policy: LifecyclePolicy, now: datetime) -> QuerySet[Memory]:
    """Raw memories below the archive threshold (activation computed for `now`) and the keep floor."""
    return (Memory.objects.filter(tenant_id=tenant_id, state=MemoryState.RAW, importance__lt=policy.keep_floor)
            .alias(current=activation_sql(now, policy.decay_half_life_days))
            .filter(current__lt=policy.archive_threshold))


def retention_candidates(tenant_id: int, policy: LifecyclePolicy, now: datetime) -> QuerySet[Memory]:
    return Memory.objects.filter(tenant_id=tenant_id, state=MemoryState.CONSOLIDATED, memory_type__in=EPISODIC_TYPES,
                                 importance__lt=policy.retention_importance,
                                 created_at__lt=now - timedelta(days=policy.retention_days))


def purge_candidates(tenant_id: int, policy: LifecyclePolicy, now: datetime) -> QuerySet[Memory]:
    return (Memory.objects.filter(tenant_id=tenant_id, state=MemoryState.ARCHIVED,
                                  archived_at__lt=now - timedelta(days=policy.purge_days))
            .exclude(source_links__source__state=MemoryState.CONSOLIDATED))


# --- running ---------------------------------------------------------------------------------------------------

STEPS: tuple[tuple[str, Callable[[int, LifecyclePolicy, datetime], QuerySet[Memory]]], ...] = (
    ("decay", decay_candidates), ("retention", retention_candidates), ("purge", purge_candidates))


def lifecycle_counts(*, tenant: Tenant, now: datetime | None = None) -> dict[str, int]:
    """What a run would do now (dry run): how many memories each step would take."""
    now = now or timezone.now()
    policy = policy_of(tenant).lifecycle
    return {name: select(tenant.id, policy, now).count() for name, select in STEPS}


def refresh_activation(tenant_id: int, policy: LifecyclePolicy, now: datetime) -> int:
    return Memory.objects.filter(tenant_id=tenant_id, state=MemoryState.RAW).update(
        activation=activation_sql(now, policy.decay_half_life_days))


def lifecycle_execute(*, run: ConsolidationRun, worker: str, now: datetime | None = None) -> ConsolidationRun:
    """Do the work of a claimed lifecycle run (module docstring) and close it."""
    now = now or timezone.now()
    tenant = Tenant.objects.get(id=run.tenant_id)
    try:
        policy = run_policy(run).lifecycle
    except PolicyInvalid as invalid:
        return run_finish(run_id=run.id, worker=worker, status=RunStatus.FAILED, error=str(invalid))
    counts = {"decay": 0, "retention": 0, "purge": 0}
    try:
        refresh_activation(tenant.id, policy, now)
        for name, select in STEPS:
            while moved := _one_batch(run, worker, name, select(tenant.id, policy, now)):
                counts[name] += moved
    except LeaseLost:
        return ConsolidationRun.objects.get(pk=run.id)
    ConsolidationRun.objects.filter(pk=run.id).update(result=counts)
    return run_finish(run_id=run.id, worker=worker, status=RunStatus.SUCCEEDED)


def _one_batch(run: ConsolidationRun, worker: str, step: str, candidates: QuerySet[Memory]) -> int:
    with transaction.atomic():
        run_fence(run_id=run.id, worker=worker)
        ids = list(candidates.select_for_update(skip_locked=True, of=("self",)).order_by("id")
                   .values_list("id", flat=True)[:settings.ZEROMEMORY_LIFECYCLE_BATCH])
        if not ids:
            return 0
        if step == "purge":
            memories_delete(tenant_id=run.tenant_id, memory_ids=ids, actor=f"run:{run.id}", run_id=run.id,
                            reason="purged: archived longer than the purge window")
            ConsolidationRun.objects.filter(pk=run.id).update(deleted=F("deleted") + len(ids))
        else:
            _archive(run, step, ids)
    return len(ids)


def _archive(run: ConsolidationRun, step: str, ids: list[uuid.UUID]) -> None:
    reason = {"decay": "activation decayed below the archive threshold",
              "retention": "consolidated, low importance, past the retention window"}[step]
    memory_transition(tenant_id=run.tenant_id, memory_ids=ids, operation=step, actor=f"run:{run.id}",
                      run_id=run.id, reason=reason)
    ConsolidationRun.objects.filter(pk=run.id).update(archived=F("archived") + len(ids))
    event_emit(event="memory.archived", tenant_id=run.tenant_id,
               data={"memory_ids": [str(i) for i in ids], "reason": step})


def lifecycle_run_now(*, tenant_id: int, trigger: str, now: datetime | None = None,
                      wait_seconds: float = 3600) -> RunOutcome:
    """Run the lifecycle of one tenant in this process, or join the one under way."""
    return run_in_process(tenant_id=tenant_id, user_id="", kind=RunKind.LIFECYCLE, trigger=trigger,
                          wait_seconds=wait_seconds,
                          execute=lambda run, worker: lifecycle_execute(run=run, worker=worker, now=now))


def lifecycle_summary(run: ConsolidationRun) -> dict[str, Any]:
    return {"run_id": str(run.id), "status": run.status, "archived": run.archived, "deleted": run.deleted,
            **{k: run.result.get(k, 0) for k in ("decay", "retention", "purge")}}
