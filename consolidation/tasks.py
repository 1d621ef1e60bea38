"""Thin Celery wrappers for the jobs. Ids in, one service call, idempotent under redelivery."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from celery import shared_task
from django.utils import timezone

from consolidation.clustering_jobs import clustering_execute
from consolidation.models import RunKind, RunTrigger
from consolidation.runs import run_request, run_start, worker_name
from consolidation.selectors import users_with_eligible_memories
from zeromem.tasks import TASK_OPTIONS, enqueue_on_commit


def clustering_trigger(*, tenant_id: int, user_id: str, trigger: str) -> tuple[uuid.UUID, bool]:
    """Request a clustering run and enqueue its task after commit. Returns (run id, created); when the user
    already has an active run, nothing new is enqueued and that run's id is returned."""
    run, created = run_request(tenant_id=tenant_id, user_id=user_id, kind=RunKind.CLUSTERING, trigger=trigger)
    if created:
        enqueue_on_commit(clustering_run_task, run_id=str(run.id))
    return run.id, created


def clustering_trigger_users(*, users: Iterable[tuple[int, str]], trigger: str) -> tuple[int, int]:
    """Trigger clustering for each (tenant, user); returns (runs created, users that already had one)."""
    created = [clustering_trigger(tenant_id=t, user_id=u, trigger=trigger)[1] for t, u in users]
    return sum(created), len(created) - sum(created)


@shared_task(name="consolidation.clustering_fan_out", soft_time_limit=1800, time_limit=1900, expires=3 * 3600,
             **TASK_OPTIONS)
def clustering_fan_out_task() -> int:
    """Daily (03:30 UTC): one clustering run per (tenant, user) with eligible memories."""
    return clustering_trigger_users(users=users_with_eligible_memories(now=timezone.now()),
                                    trigger=RunTrigger.BEAT)[0]


# The hard limit stays below the broker's visibility timeout (settings) so a running task is never
# delivered twice while alive; a killed worker's task comes back and takes over the expired lease.
@shared_task(name="consolidation.clustering_run", soft_time_limit=3000, time_limit=3300, **TASK_OPTIONS)
def clustering_run_task(*, run_id: str) -> str:
    worker = worker_name()
    run = run_start(run_id=uuid.UUID(run_id), worker=worker)
    if run is None:
        return "done or held by a live worker"  # a redelivered message finds its run finished
    return clustering_execute(run=run, worker=worker).status
