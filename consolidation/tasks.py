"""Thin Celery wrappers for the jobs. Ids in, one service call, idempotent under redelivery."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta

from celery import Task, shared_task
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from consolidation.clustering_jobs import clustering_execute, clustering_run_now
from consolidation.lifecycle import lifecycle_run_now
from consolidation.models import ConsolidationRun, RunKind, RunStatus, RunTrigger
from consolidation.reflection_jobs import reflection_execute, reflection_run_now
from consolidation.runs import run_finish, run_release, run_request, run_start, run_wait, worker_name
from consolidation.selectors import ReflectionScope, reflection_eligible_scopes, users_with_eligible_memories
from consolidation.services import session_end_record
from consolidation.webhooks import DeliveryFailed, webhook_deliver
from zeromem.llm import LLMUnavailable
from zeromem.models import Tenant
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


# --- reflection ------------------------------------------------------------------------------------------------

class RunBusy(Exception):
    """The user's memories are held by another job (clustering, or another entity's reflection) past the wait."""

    def __init__(self, run: ConsolidationRun) -> None:
        super().__init__(f"another {run.kind} run ({run.id}) is working on this user's memories; try again later")
        self.run = run


def reflection_trigger(*, scope: ReflectionScope, trigger: str, force: bool = False) -> tuple[ConsolidationRun, bool]:
    """Request a reflection run and enqueue its task after commit; (the user's active run, False) when blocked."""
    run, created = run_request(tenant_id=scope.tenant_id, user_id=scope.user_id, kind=RunKind.REFLECTION,
                               trigger=trigger, entity_id=scope.entity_id, namespace=scope.namespace)
    if created:
        enqueue_on_commit(reflection_run_task, run_id=str(run.id), force=force)
    return run, created


def reflection_request(*, scope: ReflectionScope, trigger: str, wait_seconds: float,
                       force: bool = False) -> ConsolidationRun:
    """Reflect a scope now (API): start a run, or join the one already reflecting this scope, and wait for it up
    to `wait_seconds`; the run comes back as it is then (still active past the wait). Raises RunBusy when
    another job holds the user's memories for the whole wait."""
    deadline = time.monotonic() + wait_seconds
    while True:
        run, created = reflection_trigger(scope=scope, trigger=trigger, force=force)
        blocked = not created and (run.kind, run.entity_id, run.namespace) != (
            RunKind.REFLECTION, scope.entity_id, scope.namespace)
        run = run_wait(run_id=run.id, timeout=max(0.0, deadline - time.monotonic()))
        if not blocked:
            return run
        if time.monotonic() >= deadline:
            raise RunBusy(run)


@shared_task(name="consolidation.reflection_run", bind=True, soft_time_limit=3000, time_limit=3300,
             **{**TASK_OPTIONS, "max_retries": 8})
def reflection_run_task(self: Task, *, run_id: str, force: bool = False) -> str:
    """Claim and execute a reflection run. An unavailable LLM releases the run and retries the task later with
    backoff (the same run id); past the last retry the run fails with the reason."""
    worker = worker_name()
    run = run_start(run_id=uuid.UUID(run_id), worker=worker)
    if run is None:
        return "done or held by a live worker"
    try:
        return reflection_execute(run=run, worker=worker, force=force).status
    except LLMUnavailable as exc:
        if self.request.retries >= self.max_retries:
            run_finish(run_id=run.id, worker=worker, status=RunStatus.FAILED,
                       error=f"LLM unavailable after {self.request.retries + 1} attempts: {exc}")
            return RunStatus.FAILED
        run_release(run_id=run.id, worker=worker, reason=f"LLM unavailable, retrying: {exc}")
        countdown = min(3600, settings.ZEROMEMORY_LLM_RETRY_SECONDS * 2 ** self.request.retries)
        raise self.retry(exc=exc, countdown=countdown) from exc


@shared_task(name="consolidation.reflection_fan_out", soft_time_limit=1800, time_limit=1900, expires=6 * 3600,
             **TASK_OPTIONS)
def reflection_fan_out_task() -> int:
    """Weekly (Sunday 04:45 UTC): one task per user with eligible scopes; it reflects them one after the other
    (runs of one user never overlap)."""
    users = sorted({(s.tenant_id, s.user_id) for s in reflection_eligible_scopes()})
    for tenant_id, user_id in users:
        reflection_user_task.delay(tenant_id=tenant_id, user_id=user_id)
    return len(users)


@shared_task(name="consolidation.reflection_user", bind=True, soft_time_limit=3000, time_limit=3300,
             **TASK_OPTIONS)
def reflection_user_task(self: Task, *, tenant_id: int, user_id: str, trigger: str = RunTrigger.BEAT) -> int:
    """Reflect every eligible scope of one user. Idempotent: a redelivered task finds reflected scopes no longer
    eligible. An unavailable LLM retries the whole task later."""
    outcomes = [reflection_run_now(scope=scope, trigger=trigger, wait_seconds=2400)
                for scope in reflection_eligible_scopes(tenant_id=tenant_id, user_id=user_id)]
    unavailable = [o.run for o in outcomes if o.run.error.startswith("LLM unavailable")]
    if unavailable:
        raise self.retry(countdown=min(3600, 60 * 2 ** self.request.retries))
    return len(outcomes)


def reflection_trigger_scopes(*, scopes: Iterable[ReflectionScope], trigger: str) -> tuple[int, int]:
    """Trigger reflection for each scope (no threshold); returns (runs created, scopes whose user was busy)."""
    created = [reflection_trigger(scope=scope, trigger=trigger)[1] for scope in scopes]
    return sum(created), len(created) - sum(created)


# --- webhooks, lifecycle, session end --------------------------------------------------------------------------

@shared_task(name="consolidation.webhook_deliver", bind=True, soft_time_limit=120, time_limit=150, acks_late=True,
             reject_on_worker_lost=True, max_retries=50)
def webhook_deliver_task(self: Task, *, delivery_id: int) -> bool:
    """POST one webhook delivery; retried with exponential backoff until it succeeds or its attempts run out."""
    try:
        return webhook_deliver(delivery_id=delivery_id)
    except DeliveryFailed as exc:
        backoff = settings.ZEROMEMORY_WEBHOOK_BACKOFF_SECONDS * 2 ** self.request.retries
        raise self.retry(exc=exc, countdown=min(6 * 3600, backoff)) from exc


@shared_task(name="consolidation.lifecycle_fan_out", soft_time_limit=600, time_limit=660, expires=6 * 3600,
             **TASK_OPTIONS)
def lifecycle_fan_out_task() -> int:
    """Daily: one lifecycle task per tenant."""
    tenants = list(Tenant.objects.values_list("id", flat=True))
    for tenant_id in tenants:
        lifecycle_run_task.delay(tenant_id=tenant_id)
    return len(tenants)


@shared_task(name="consolidation.lifecycle_run", soft_time_limit=3000, time_limit=3300, **TASK_OPTIONS)
def lifecycle_run_task(*, tenant_id: int) -> str:
    return lifecycle_run_now(tenant_id=tenant_id, trigger=RunTrigger.BEAT, wait_seconds=60).run.status


def session_end(*, tenant_id: int, user_id: str, session_id: str) -> bool:
    """Record the end of a session and, the first time only, enqueue a consolidation pass after commit."""
    created = session_end_record(tenant_id=tenant_id, user_id=user_id, session_id=session_id)
    if created:
        enqueue_on_commit(consolidation_pass_task, tenant_id=tenant_id, user_id=user_id)
    return created


@shared_task(name="consolidation.consolidation_pass", bind=True, soft_time_limit=3000, time_limit=3300,
             **TASK_OPTIONS)
def consolidation_pass_task(self: Task, *, tenant_id: int, user_id: str) -> str:
    """Clustering for the user (forced: the session is over, so it is no longer the current one), then
    reflection for each of the user's entities that has become eligible."""
    clustering = clustering_run_now(tenant_id=tenant_id, user_id=user_id, trigger=RunTrigger.SESSION_END,
                                    force=True, wait_seconds=2400).run
    reflected = [reflection_run_now(scope=scope, trigger=RunTrigger.SESSION_END, force=True, wait_seconds=2400).run
                 for scope in reflection_eligible_scopes(tenant_id=tenant_id, user_id=user_id)]
    if any(run.error.startswith("LLM unavailable") for run in reflected):
        raise self.retry(countdown=min(3600, 60 * 2 ** self.request.retries))
    return f"clustering {clustering.status}; {len(reflected)} reflection run(s)"


# --- the sweep for runs whose task was lost ----------------------------------------------------------------------

STALE_AFTER = timedelta(minutes=10)


def requeue_stale_runs(*, now: datetime | None = None) -> int:
    """Enqueue again the task of every run still pending STALE_AFTER after it was requested, or running with a
    lease expired that long ago: its message was lost (a broker restarted without persistence) or its worker
    died without a redelivery. Safe to repeat: a duplicate task finds the run claimed or finished and returns."""
    now = now or timezone.now()
    stale = ConsolidationRun.objects.filter(
        Q(status=RunStatus.PENDING, created_at__lt=now - STALE_AFTER)
        | Q(status=RunStatus.RUNNING, lease_expires_at__lt=now - STALE_AFTER))
    count = 0
    for run in stale:
        if run.kind == RunKind.CLUSTERING:
            clustering_run_task.delay(run_id=str(run.id))
        elif run.kind == RunKind.REFLECTION:
            reflection_run_task.delay(run_id=str(run.id))
        else:
            lifecycle_run_task.delay(tenant_id=run.tenant_id)
        count += 1
    return count


@shared_task(name="consolidation.requeue_stale_runs", soft_time_limit=120, time_limit=150, expires=240,
             **TASK_OPTIONS)
def requeue_stale_runs_task() -> int:
    """Every 5 minutes: nothing a lost message held up stays stuck."""
    return requeue_stale_runs()
