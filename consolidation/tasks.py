"""Thin Celery wrappers for the jobs: ids in, one service call, idempotent under redelivery. The services that
create and enqueue runs are in `consolidation.triggers`; task names are explicit strings that never change."""

from __future__ import annotations

import uuid

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.utils import timezone

from consolidation.jobs.clustering import clustering_execute, clustering_run_now
from consolidation.jobs.lifecycle import lifecycle_run_now
from consolidation.jobs.reflection import reflection_execute, reflection_user_run_now
from consolidation.models import RunStatus, RunTrigger
from consolidation.runs import RunHeld, run_finish, run_heartbeat, run_release, run_take, worker_name
from consolidation.selectors import reflection_eligible_scopes, users_with_eligible_memories
from consolidation.triggers import clustering_fan_out, requeue_stale_runs, runs_recover_dead
from consolidation.webhooks import DeliveryFailed, webhook_deliver
from zeromem.core.adapters.llm import LLMUnavailable
from zeromem.core.policies import policies_for
from zeromem.core.tasks import TASK_OPTIONS, TRANSIENT_ERRORS
from zeromem.models import Tenant

# A run task also retries while another worker holds its run: a redelivery can come before a killed worker's
# heartbeat is stale, and the retry takes the run over (or finds it finished).
RUN_TASK_OPTIONS = {**TASK_OPTIONS, "autoretry_for": (*TRANSIENT_ERRORS, RunHeld)}


@shared_task(name="consolidation.clustering_fan_out", soft_time_limit=1800, time_limit=1900, expires=3 * 3600,
             **TASK_OPTIONS)
def clustering_fan_out_task() -> int:
    """Daily (03:30 UTC): one clustering run per (tenant, user) with eligible memories."""
    return clustering_fan_out(users=users_with_eligible_memories(now=timezone.now()), trigger=RunTrigger.BEAT)[0]


# The hard limit stays below the broker's visibility timeout (settings) so a running task is never
# delivered twice while alive; a killed worker's task comes back and takes over the expired lease.
@shared_task(name="consolidation.clustering_run", soft_time_limit=3000, time_limit=3300, **RUN_TASK_OPTIONS)
def clustering_run_task(*, run_id: str) -> str:
    worker = worker_name()
    run = run_take(run_id=uuid.UUID(run_id), worker=worker)
    if run is None:
        return "already finished"  # a redelivered message
    with run_heartbeat(run_id=run.id, worker=worker):
        return clustering_execute(run=run, worker=worker, force=run.force).status


@shared_task(name="consolidation.clustering_runs", soft_time_limit=3000, time_limit=3300, **RUN_TASK_OPTIONS)
def clustering_runs_task(*, run_ids: list[str]) -> list[str]:
    """Small users' runs one after another (the daily fan-out batches them). One run's error does not stop the
    others; the task then fails with it, and a redelivery skips the runs already finished. The soft time limit
    stops the task at once: the hard limit follows within minutes, and the runs not started stay pending for the
    requeue of lost runs."""
    statuses: list[str] = []
    failure: Exception | None = None
    for run_id in run_ids:
        try:
            statuses.append(clustering_run_task(run_id=run_id))
        except SoftTimeLimitExceeded:
            raise
        except Exception as exc:  # re-raised once the rest of the batch has run
            failure = failure or exc
            statuses.append(f"error: {exc}")
    if failure is not None:
        raise failure
    return statuses


@shared_task(name="consolidation.reflection_run", bind=True, soft_time_limit=3000, time_limit=3300,
             **{**RUN_TASK_OPTIONS, "max_retries": 8})
def reflection_run_task(self: Task, *, run_id: str, force: bool = False) -> str:
    """Claim and execute a reflection run. An unavailable LLM releases the run and retries the task later with
    backoff (the same run id); past the last retry the run fails with the reason."""
    worker = worker_name()
    run = run_take(run_id=uuid.UUID(run_id), worker=worker)
    if run is None:
        return "already finished"
    try:
        with run_heartbeat(run_id=run.id, worker=worker):
            return reflection_execute(run=run, worker=worker, force=force or run.force).status
    except LLMUnavailable as exc:
        if self.request.retries >= self.max_retries:
            run_finish(run_id=run.id, worker=worker, status=RunStatus.FAILED,
                       error=f"LLM unavailable after {self.request.retries + 1} attempts: {exc}", llm_unavailable=True)
            return RunStatus.FAILED
        run_release(run_id=run.id, worker=worker, reason=f"LLM unavailable, retrying: {exc}", llm_unavailable=True)
        countdown = min(3600, settings.ZEROMEMORY_LLM_RETRY_SECONDS * 2 ** self.request.retries)
        raise self.retry(exc=exc, countdown=countdown) from exc


@shared_task(name="consolidation.reflection_fan_out", soft_time_limit=1800, time_limit=1900, expires=6 * 3600,
             **TASK_OPTIONS)
def reflection_fan_out_task() -> int:
    """Weekly (Sunday 04:45 UTC): one task per user with eligible scopes; it reflects them one after the other
    (runs of one user never overlap)."""
    users = sorted({(s.tenant_id, s.user_id) for s in reflection_eligible_scopes(policies=policies_for())})
    for tenant_id, user_id in users:
        reflection_user_task.delay(tenant_id=tenant_id, user_id=user_id)
    return len(users)


@shared_task(name="consolidation.reflection_user", bind=True, soft_time_limit=3000, time_limit=3300,
             **TASK_OPTIONS)
def reflection_user_task(self: Task, *, tenant_id: int, user_id: str, trigger: str = RunTrigger.BEAT) -> int:
    """Reflect every eligible scope of one user (small entities share calls). Idempotent: a redelivered task
    finds reflected scopes no longer eligible. An unavailable LLM retries the whole task later."""
    outcomes = reflection_user_run_now(tenant_id=tenant_id, user_id=user_id, trigger=trigger, wait_seconds=2400)
    if any(outcome.llm_unavailable for outcome in outcomes):
        raise self.retry(countdown=min(3600, 60 * 2 ** self.request.retries))
    return len(outcomes)


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


@shared_task(name="consolidation.consolidation_pass", bind=True, soft_time_limit=3000, time_limit=3300,
             **TASK_OPTIONS)
def consolidation_pass_task(self: Task, *, tenant_id: int, user_id: str) -> str:
    """Clustering for the user (forced: the session is over, so it is no longer the current one), then
    reflection for each of the user's entities that has become eligible."""
    clustering = clustering_run_now(tenant_id=tenant_id, user_id=user_id, trigger=RunTrigger.SESSION_END,
                                    force=True, wait_seconds=2400).run
    reflected = reflection_user_run_now(tenant_id=tenant_id, user_id=user_id, trigger=RunTrigger.SESSION_END,
                                        force=True, wait_seconds=2400)
    if any(outcome.llm_unavailable for outcome in reflected):
        raise self.retry(countdown=min(3600, 60 * 2 ** self.request.retries))
    return f"clustering {clustering.status}; {len(reflected)} reflection run(s)"


# --- the sweeps for runs whose task was lost or whose worker died ------------------------------------------------

@shared_task(name="consolidation.requeue_stale_runs", soft_time_limit=120, time_limit=150, expires=240,
             **TASK_OPTIONS)
def requeue_stale_runs_task() -> int:
    """Every 5 minutes: nothing a lost message held up stays stuck."""
    return requeue_stale_runs()


@shared_task(name="consolidation.recover_dead_runs", soft_time_limit=30, time_limit=40, expires=15, **TASK_OPTIONS)
def recover_dead_runs_task() -> int:
    """Every 15 seconds: a run whose worker stopped heartbeating is released and requeued."""
    return runs_recover_dead()
