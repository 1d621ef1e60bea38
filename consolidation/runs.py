"""Run claims in PostgreSQL: one active clustering or reflection run per (tenant, user), held by a live worker.

- `run_request` inserts a pending run; the partial unique constraint makes a concurrent second request
  fail, and it gets the active run back instead (to join it, or to wait for it when it is of another kind). An
  active run whose worker died (`run_recover_dead`) is released and requeued first: nobody joins a dead run.
- `run_start` claims a run with a conditional UPDATE: pending, or running with a stale heartbeat (the worker
  that held it died). A redelivered task whose run is done gets None; `run_take` makes one whose run another
  worker still holds retry later, since that worker may have died a moment ago and its heartbeat is not yet stale.
- While a worker holds a run, `run_heartbeat` (a thread of its process) stamps the row's `heartbeat_at` every
  few seconds, through long LLM calls where no write comes for a minute. A heartbeat older than the stale-after
  setting means the worker is gone: the sweep (`runs_recover_dead`) or a trigger releases the run and requeues
  its task.
- `run_fence` stamps the heartbeat inside each write transaction and fails when the run was released or taken
  over, so a worker that lost its run (it was only slow) can never write twice.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from consolidation.models import ACTIVE_STATUSES, MEMORY_RUN_KINDS, ConsolidationRun, RunKind, RunStatus
from zeromem.core.domain.policy import Policy
from zeromem.core.events import event_emit
from zeromem.core.policies import policy_for
from zeromem.core.tasks import enqueue_on_commit

# The registered names of the run tasks (consolidation.tasks), sent by name so nothing here imports them.
RUN_TASKS = {RunKind.CLUSTERING: "consolidation.clustering_run", RunKind.REFLECTION: "consolidation.reflection_run"}
LIFECYCLE_RUN = "consolidation.lifecycle_run"  # a tenant's lifecycle task (it requests or joins the tenant's run)

logger = logging.getLogger(__name__)

# Key of `ConsolidationRun.result`, true while the run's last stop (a failure, or a release for a retry) was an
# unavailable LLM: what the tasks retry on. run_finish and run_release set or clear it with the error they record.
LLM_UNAVAILABLE = "llm_unavailable"


def run_llm_unavailable(run: ConsolidationRun) -> bool:
    """Whether the run last stopped because the LLM did not answer (a later try may succeed)."""
    return run.result.get(LLM_UNAVAILABLE) is True


def _mark_llm_unavailable(run_id: uuid.UUID, unavailable: bool) -> ConsolidationRun:
    """Set or clear the mark on a run this transaction has already updated (and so holds locked)."""
    run = ConsolidationRun.objects.get(pk=run_id)
    if run_llm_unavailable(run) != unavailable:
        result = {k: v for k, v in run.result.items() if k != LLM_UNAVAILABLE}
        run.result = {**result, LLM_UNAVAILABLE: True} if unavailable else result
        run.save(update_fields=["result"])
    return run


def run_policy(run: ConsolidationRun) -> Policy:
    """The tenant's policy, read once as the run starts and recorded on it: what the run page shows, and what
    a run taken over by another worker is recorded with again. PolicyInvalid when the tenant's overrides do not
    fit (the run then fails with that message)."""
    policy = policy_for(tenant_id=run.tenant_id)
    ConsolidationRun.objects.filter(pk=run.id).update(policy=policy.as_json())
    return policy


def stale_after() -> timedelta:
    """A held run whose heartbeat is older than this lost its worker (ZEROMEMORY_RUN_STALE_SECONDS)."""
    return timedelta(seconds=settings.ZEROMEMORY_RUN_STALE_SECONDS)


def _dead(now: datetime) -> Q:
    return Q(status=RunStatus.RUNNING, heartbeat_at__lt=now - stale_after())


class LeaseLost(Exception):
    """Our run was released (our heartbeat went stale) or taken over by another worker; our writes must not land."""


class RunHeld(Exception):
    """Another worker holds the run and stamped its heartbeat lately. The task retries: by then the run is finished,
    or the holder died and its stale run is taken over."""


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def active_run(*, tenant_id: int, user_id: str, kind: str = RunKind.CLUSTERING) -> ConsolidationRun | None:
    """The run that blocks a new one of `kind`: the user's clustering or reflection run, or for lifecycle the
    tenant's lifecycle run (the two partial unique constraints)."""
    runs = ConsolidationRun.objects.filter(tenant_id=tenant_id, status__in=ACTIVE_STATUSES)
    if kind == RunKind.LIFECYCLE:
        return runs.filter(kind=RunKind.LIFECYCLE).first()
    return runs.filter(user_id=user_id, kind__in=MEMORY_RUN_KINDS).first()


# A request that finds no active run after its insert was refused tries again: the blocking run may have finished in
# between. More than a few in a row means the refusal was something else (a foreign key), which must surface.
REQUEST_ATTEMPTS = 5


def run_request(*, tenant_id: int, user_id: str, kind: str, trigger: str, entity_id: str | None = None,
                namespace: str | None = None, force: bool = False) -> tuple[ConsolidationRun, bool]:
    """A new pending run (True), or the user's active run that blocks it (False). A forced request that meets
    the same job unforced keeps its force (`run_force`). An insert refused for another reason than an active run
    (the tenant was deleted while a task for it was queued) raises IntegrityError instead of retrying forever."""
    for attempt in range(REQUEST_ATTEMPTS):
        try:
            with transaction.atomic():
                run = ConsolidationRun.objects.create(tenant_id=tenant_id, user_id=user_id, kind=kind,
                                                      trigger=trigger, entity_id=entity_id, namespace=namespace,
                                                      force=force)
            return run, True
        except IntegrityError:
            existing = active_run(tenant_id=tenant_id, user_id=user_id, kind=kind)
            if existing is not None:
                existing = run_recover_dead(existing)
                if force and same_job(existing, kind, entity_id, namespace):
                    existing = run_force(existing)
                return existing, False
            if attempt == REQUEST_ATTEMPTS - 1:
                raise
            # The blocking run finished between our insert and our read: try again.
    raise AssertionError("unreachable")  # the loop returns or raises


def run_force(run: ConsolidationRun) -> ConsolidationRun:
    """Give an active run a forced request's force: upgraded while still pending (conditional UPDATE, so a worker
    claiming it at the same moment either sees the force or has already started unforced), else marked so that
    a forced run of the same job follows it when it finishes (`run_finish`)."""
    unforced = ConsolidationRun.objects.filter(pk=run.pk, force=False)
    if not unforced.filter(status=RunStatus.PENDING).update(force=True):
        unforced.filter(status=RunStatus.RUNNING).update(forced_follow_up=True)
    return ConsolidationRun.objects.get(pk=run.pk)


def run_start(*, run_id: uuid.UUID, worker: str, now: datetime | None = None) -> ConsolidationRun | None:
    """Claim the run for `worker`; None when it is finished or another live worker holds it. The same worker may
    take its own run back (a task retried in the process that held it, e.g. after a dropped connection). The
    caller holds it inside `run_heartbeat`."""
    now = now or timezone.now()
    claimable = Q(status=RunStatus.PENDING) | _dead(now) | Q(status=RunStatus.RUNNING, worker=worker)
    claimed = (ConsolidationRun.objects.filter(claimable, pk=run_id)
               .update(status=RunStatus.RUNNING, worker=worker, heartbeat_at=now))
    if not claimed:
        return None
    ConsolidationRun.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=now)
    return ConsolidationRun.objects.get(pk=run_id)


def run_take(*, run_id: uuid.UUID, worker: str) -> ConsolidationRun | None:
    """A task's claim: the run, or None when it is finished. A message redelivered because its worker was killed
    can arrive before that worker's heartbeat goes stale; returning then would leave the run to the sweep, so it
    raises RunHeld and the task retries."""
    run = run_start(run_id=run_id, worker=worker)
    if run is None and ConsolidationRun.objects.filter(pk=run_id, status=RunStatus.RUNNING).exists():
        raise RunHeld(f"run {run_id} is held by another worker")
    return run


def run_fence(*, run_id: uuid.UUID, worker: str) -> None:
    """Stamp the heartbeat; call inside each write transaction so a lost run aborts the write."""
    if not run_beat(run_id=run_id, worker=worker):
        raise LeaseLost(f"run {run_id} is no longer held by {worker}")


def run_beat(*, run_id: uuid.UUID, worker: str) -> bool:
    """Stamp the heartbeat of a run `worker` holds; False when it no longer holds it."""
    held = ConsolidationRun.objects.filter(pk=run_id, status=RunStatus.RUNNING, worker=worker)
    return bool(held.update(heartbeat_at=timezone.now()))


def _beat_unless_locked(*, run_id: uuid.UUID, worker: str) -> bool:
    """The heartbeat thread's stamp; False when `worker` no longer holds the run. A row locked by a write
    transaction is skipped, not waited for: that transaction stamps the heartbeat itself when it is the worker's
    own (run_fence), and a thread waiting for its own process's transaction could never be joined."""
    with transaction.atomic():
        row = (ConsolidationRun.objects.select_for_update(skip_locked=True).filter(pk=run_id)
               .values_list("status", "worker").first())
        if row is None:
            return True
        if row != (RunStatus.RUNNING, worker):
            return False
        return run_beat(run_id=run_id, worker=worker)


class Heartbeat:
    """A thread that stamps a held run's heartbeat every `interval` seconds until stopped, or until the run is no
    longer ours (then `lost`; the next fenced write raises LeaseLost). A database that does not answer costs a
    beat, not the thread: the next beat reconnects."""

    def __init__(self, *, run_id: uuid.UUID, worker: str, interval: float) -> None:
        self.run_id, self.worker, self.interval = run_id, worker, interval
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{run_id}", daemon=True)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    if not _beat_unless_locked(run_id=self.run_id, worker=self.worker):
                        self.lost = True
                        logger.warning("run %s is no longer held by %s: its heartbeat stops", self.run_id,
                                       self.worker)
                        return
                except DatabaseError as exc:  # the failed transaction closed the broken connection: the next reconnects
                    logger.warning("heartbeat of run %s missed (database unavailable: %s)", self.run_id, exc)
        finally:
            connection.close()  # this thread's own connection


@contextmanager
def run_heartbeat(*, run_id: uuid.UUID, worker: str, interval: float | None = None) -> Iterator[Heartbeat]:
    """Hold a claimed run alive while the block works (ZEROMEMORY_RUN_HEARTBEAT_SECONDS by default)."""
    heartbeat = Heartbeat(run_id=run_id, worker=worker,
                          interval=settings.ZEROMEMORY_RUN_HEARTBEAT_SECONDS if interval is None else interval)
    heartbeat.start()
    try:
        yield heartbeat
    finally:
        heartbeat.stop()


def run_recover_dead(run: ConsolidationRun, *, now: datetime | None = None) -> ConsolidationRun:
    """The run as it is after releasing it when its worker is dead (heartbeat stale): pending again, its task
    requeued after commit. A live run comes back unchanged."""
    if run.status != RunStatus.RUNNING or not run_release_dead(run, now=now or timezone.now()):
        return run
    return ConsolidationRun.objects.get(pk=run.pk)


def run_release_dead(run: ConsolidationRun, *, now: datetime) -> bool:
    """Release the run if its heartbeat is stale (conditional UPDATE: a sweep and a trigger never both release
    it, and a run a live worker beat for meanwhile stays held) and requeue its task after commit."""
    with transaction.atomic():
        released = (ConsolidationRun.objects.filter(_dead(now), pk=run.pk)
                    .update(status=RunStatus.PENDING, worker="",
                            error=f"worker {run.worker} stopped heartbeating; released at {now.isoformat()}"))
        if released:
            logger.warning("%s run %s of user %s: worker %s stopped heartbeating, released and requeued", run.kind,
                           run.id, run.user_id, run.worker)
            name, arguments = run_task_message(run)
            enqueue_on_commit(name, **arguments)
    return bool(released)


def runs_dead(*, now: datetime) -> list[ConsolidationRun]:
    return list(ConsolidationRun.objects.filter(_dead(now)))


def run_task_message(run: ConsolidationRun) -> tuple[str, dict[str, Any]]:
    """The task (registered name and arguments) that works on this run."""
    if run.kind == RunKind.LIFECYCLE:
        return LIFECYCLE_RUN, {"tenant_id": run.tenant_id}
    return RUN_TASKS[RunKind(run.kind)], {"run_id": str(run.id)}


def run_finish(*, run_id: uuid.UUID, worker: str, status: str, error: str = "",
               counts: dict[str, Any] | None = None, llm_unavailable: bool = False) -> ConsolidationRun:
    """Close the run (only its holder can) and return it; emits consolidation.run_completed after commit.
    `llm_unavailable`: the run stops because the LLM did not answer (`run_llm_unavailable`). When `worker` no
    longer holds the run nothing changes, and the run comes back as its current holder left it."""
    with transaction.atomic():
        finished = (ConsolidationRun.objects.filter(pk=run_id, status=RunStatus.RUNNING, worker=worker)
                    .update(status=status, error=error[:5000], finished_at=timezone.now(), **(counts or {})))
        if not finished:
            return ConsolidationRun.objects.get(pk=run_id)
        run = _mark_llm_unavailable(run_id, llm_unavailable)
        if run.forced_follow_up:
            _follow_up(run)
        _log_summary(run)
        event_emit(event="consolidation.run_completed", tenant_id=run.tenant_id, data={
            "run_id": str(run.id), "kind": run.kind, "user_id": run.user_id, "status": status,
            "clusters": run.clusters, "merged": run.merged, "created": run.created})
    return run


def _log_summary(run: ConsolidationRun) -> None:
    took = (run.finished_at - run.started_at).total_seconds() if run.started_at and run.finished_at else 0.0
    scope = run.user_id + (f"/{run.entity_id}" if run.entity_id else "")
    logger.info("%s run %s %s for tenant %s user %s%s: %d reviewed, %d clusters, %d merged, %d created, "
                "%d superseded, %d claims retired, %d flagged, %d archived, %d deleted, %d LLM calls in %.1f s%s",
                run.kind, run.id, run.status, run.tenant_id, scope, " (forced)" if run.force else "", run.reviewed,
                run.clusters, run.merged, run.created, run.superseded, run.claims_retired, run.flagged, run.archived,
                run.deleted, run.llm_calls, took,
                f"; error: {run.error[:200]}" if run.error else "")


def _follow_up(run: ConsolidationRun) -> None:
    """The forced run a forced request asked for while `run` worked unforced; enqueued after commit. Inside the
    finishing transaction, so no other run takes the user's slot in between."""
    try:
        with transaction.atomic():
            follow_up = ConsolidationRun.objects.create(
                tenant_id=run.tenant_id, user_id=run.user_id, kind=run.kind, trigger=run.trigger,
                entity_id=run.entity_id, namespace=run.namespace, force=True, result={"follows": str(run.id)})
    except IntegrityError:  # a run of another job got in first: it is forced when it is the same job
        blocking = active_run(tenant_id=run.tenant_id, user_id=run.user_id, kind=run.kind)
        if blocking is not None and same_job(blocking, run.kind, run.entity_id, run.namespace):
            run_force(blocking)
        return
    enqueue_on_commit(RUN_TASKS[RunKind(run.kind)], run_id=str(follow_up.id))


def run_release(*, run_id: uuid.UUID, worker: str, reason: str, llm_unavailable: bool = False) -> bool:
    """Give a claimed run back (pending, no lease) so a later retry of its task can claim it again.
    `llm_unavailable`: released because the LLM did not answer (`run_llm_unavailable`)."""
    with transaction.atomic():
        released = (ConsolidationRun.objects.filter(pk=run_id, status=RunStatus.RUNNING, worker=worker)
                    .update(status=RunStatus.PENDING, worker="", error=reason[:5000]))
        if released:
            _mark_llm_unavailable(run_id, llm_unavailable)
    return bool(released)


def run_progress(*, run_id: uuid.UUID, **values: Any) -> None:
    """Merge values into the run's `result` (what GET …/runs/{id} shows while it works)."""
    run = ConsolidationRun.objects.select_for_update().get(pk=run_id)
    run.result = {**run.result, **values}
    run.save(update_fields=["result"])


def run_wait(*, run_id: uuid.UUID, timeout: float, poll: float = 0.25, until_claimed: bool = False,
             sleep: Callable[[float], None] = time.sleep) -> ConsolidationRun:
    """The run once it is no longer active (`until_claimed`: no longer pending), or as it is when `timeout` runs
    out."""
    waiting = {RunStatus.PENDING} if until_claimed else set(ACTIVE_STATUSES)
    deadline = time.monotonic() + timeout
    while True:
        run = ConsolidationRun.objects.get(pk=run_id)
        if run.status not in waiting or time.monotonic() >= deadline:
            return run
        sleep(poll)


@dataclass(frozen=True)
class RunOutcome:
    run: ConsolidationRun
    joined: bool  # True: another trigger's run did (or is doing) the work

    @property
    def llm_unavailable(self) -> bool:
        """The run stopped because the LLM did not answer: worth trying again later."""
        return run_llm_unavailable(self.run)


def run_in_process(*, tenant_id: int, user_id: str, kind: str, trigger: str,
                   execute: Callable[[ConsolidationRun, str], ConsolidationRun], entity_id: str | None = None,
                   namespace: str | None = None, wait_seconds: float = 3600, force: bool = False) -> RunOutcome:
    """Run a job for one user in this process (CLI, admin, a per-user task): claim a run, or join one.
    `execute` reads the run's `force` (ours, or the joined run's after `run_force`).

    1. request a run; if the user's active run is the same job (kind and scope), wait for it and report it;
       a forced request that joined an unforced running run waits for the forced run that follows it;
    2. if it is another job (the other kind, another entity), wait for it to end, then request again;
    3. claim and execute.
    """
    deadline = time.monotonic() + wait_seconds
    worker = worker_name()
    while True:
        run, created = run_request(tenant_id=tenant_id, user_id=user_id, kind=kind, trigger=trigger,
                                   entity_id=entity_id, namespace=namespace, force=force)
        if not created and not same_job(run, kind, entity_id, namespace):
            run_wait(run_id=run.id, timeout=max(0.0, deadline - time.monotonic()))
            if time.monotonic() >= deadline:
                return RunOutcome(run, True)
            continue
        # Ours, or the same job nobody is working on (pending, or released when its worker died).
        claimed = run_start(run_id=run.id, worker=worker)
        if claimed is not None:
            with run_heartbeat(run_id=run.id, worker=worker):
                return RunOutcome(execute(claimed, worker), False)
        logger.info("%s run %s of user %s is under way (trigger %s): joining it", kind, run.id, user_id, run.trigger)
        joined = run_wait(run_id=run.id, timeout=max(0.0, deadline - time.monotonic()))
        if force and not joined.force and joined.status not in ACTIVE_STATUSES and time.monotonic() < deadline:
            continue  # it ran unforced: the forced run that follows it is ours to run or to join
        return RunOutcome(joined, True)


def same_job(run: ConsolidationRun, kind: str, entity_id: str | None, namespace: str | None) -> bool:
    if run.kind != kind:
        return False
    return kind != RunKind.REFLECTION or (run.entity_id, run.namespace) == (entity_id, namespace)
