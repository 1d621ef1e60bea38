"""The services that create, join and enqueue runs (API, admin, commands, beat fan-outs and session ends call
these). Tasks are sent by their registered name after commit, so nothing here imports `consolidation.tasks`."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from consolidation.models import ACTIVE_STATUSES, ConsolidationRun, RunKind, RunStatus, RunTrigger, SessionEnd
from consolidation.runs import (
    LIFECYCLE_RUN,
    RUN_TASKS,
    run_release_dead,
    run_request,
    run_task_message,
    run_wait,
    runs_dead,
    same_job,
)
from consolidation.selectors import ReflectionScope
from zeromem.core.tasks import enqueue_on_commit, send_task

# The names `consolidation.tasks` registers; queued messages and beat rows refer to them, so they never change.
CLUSTERING_RUN = RUN_TASKS[RunKind.CLUSTERING]
REFLECTION_RUN = RUN_TASKS[RunKind.REFLECTION]
CONSOLIDATION_PASS = "consolidation.consolidation_pass"
CLUSTERING_RUNS = "consolidation.clustering_runs"  # several small users' runs in one task
TASK_NAMES = (CLUSTERING_RUN, REFLECTION_RUN, LIFECYCLE_RUN, CONSOLIDATION_PASS, CLUSTERING_RUNS)
BATCH_RUNS = 50  # runs a shared task holds at most: a batch stays minutes, and big fleets keep their parallelism


def clustering_trigger(*, tenant_id: int, user_id: str, trigger: str, force: bool = False) -> tuple[uuid.UUID, bool]:
    """Request a clustering run and enqueue its task after commit. Returns (run id, created); when the user
    already has an active run, nothing new is enqueued and that run's id is returned (a forced request gives a
    clustering run its force: `run_force`)."""
    run, created = run_request(tenant_id=tenant_id, user_id=user_id, kind=RunKind.CLUSTERING, trigger=trigger,
                               force=force)
    if created:
        enqueue_on_commit(CLUSTERING_RUN, run_id=str(run.id))
    return run.id, created


def clustering_trigger_users(*, users: Iterable[tuple[int, str]], trigger: str, force: bool = False
                             ) -> tuple[int, int]:
    """Trigger clustering for each (tenant, user); returns (runs created, users that already had one)."""
    created = [clustering_trigger(tenant_id=t, user_id=u, trigger=trigger, force=force)[1] for t, u in users]
    return sum(created), len(created) - sum(created)


def clustering_fan_out(*, users: Iterable[tuple[int, str, int]], trigger: str) -> tuple[int, int]:
    """A clustering run for each (tenant, user, eligible episodes), like `clustering_trigger_users`, but small
    users' runs share a task (`small_batches`): one message, one claim loop and one database connection for many
    runs of a few episodes each, where a task each cost more than most of those runs. Returns (created, joined)."""
    created: list[tuple[uuid.UUID, int]] = []
    joined = 0
    for tenant_id, user_id, episodes in users:
        run, new = run_request(tenant_id=tenant_id, user_id=user_id, kind=RunKind.CLUSTERING, trigger=trigger)
        if new:
            created.append((run.id, episodes))
        else:
            joined += 1
    for batch in small_batches(created, budget=settings.ZEROMEMORY_CLUSTERING_BATCH_EPISODES, most=BATCH_RUNS):
        if len(batch) == 1:
            enqueue_on_commit(CLUSTERING_RUN, run_id=str(batch[0]))
        else:
            enqueue_on_commit(CLUSTERING_RUNS, run_ids=[str(run_id) for run_id in batch])
    return len(created), joined


def small_batches(sized: Sequence[tuple[uuid.UUID, int]], *, budget: int, most: int) -> list[list[uuid.UUID]]:
    """Runs in the order given, grouped while a group's episodes stay within `budget` and its runs within
    `most`; a run of `budget` episodes or more goes alone (so does every run when `budget` is 0)."""
    batches: list[list[uuid.UUID]] = []
    total = 0
    for run_id, episodes in sized:
        if batches and episodes < budget and total + episodes <= budget and len(batches[-1]) < most:
            batches[-1].append(run_id)
            total += episodes
        else:
            batches.append([run_id])
            total = episodes
    return batches


class RunBusy(Exception):
    """The user's memories are held by another job (clustering, or another entity's reflection) past the wait."""

    def __init__(self, run: ConsolidationRun) -> None:
        super().__init__(f"another {run.kind} run ({run.id}) is working on this user's memories; try again later")
        self.run = run


def reflection_trigger(*, scope: ReflectionScope, trigger: str, force: bool = False) -> tuple[ConsolidationRun, bool]:
    """Request a reflection run and enqueue its task after commit; (the user's active run, False) when blocked."""
    run, created = run_request(tenant_id=scope.tenant_id, user_id=scope.user_id, kind=RunKind.REFLECTION,
                               trigger=trigger, entity_id=scope.entity_id, namespace=scope.namespace, force=force)
    if created:
        enqueue_on_commit(REFLECTION_RUN, run_id=str(run.id))
    return run, created


# A run no worker has claimed this long after it was requested is answered at once (202 + its id), not after
# the whole wait: no worker is running, or all are busy.
CLAIM_WAIT_SECONDS = 2.0


def reflection_request(*, scope: ReflectionScope, trigger: str, wait_seconds: float,
                       force: bool = False) -> ConsolidationRun:
    """Reflect a scope now (API): start a run, or join the one already reflecting this scope, and wait for it up
    to `wait_seconds`; the run comes back as it is then (still active past the wait, or still pending when no
    worker claimed it within CLAIM_WAIT_SECONDS). A forced request that joined an unforced run waits for the
    forced run that follows it. Raises RunBusy when another job holds the user's memories for the whole wait."""
    deadline = time.monotonic() + wait_seconds
    while True:
        run, created = reflection_trigger(scope=scope, trigger=trigger, force=force)
        blocked = not created and not same_job(run, RunKind.REFLECTION, scope.entity_id, scope.namespace)
        run = _wait_claimed_then_done(run, deadline)
        follow_up_due = force and not run.force and run.status not in ACTIVE_STATUSES
        if not blocked and not follow_up_due:
            return run  # done, still working past the wait, or unclaimed (the caller answers with its id)
        if time.monotonic() >= deadline:
            if blocked:
                raise RunBusy(run)
            return run


def _wait_claimed_then_done(run: ConsolidationRun, deadline: float) -> ConsolidationRun:
    claim_deadline = min(deadline, time.monotonic() + CLAIM_WAIT_SECONDS)
    run = run_wait(run_id=run.id, timeout=max(0.0, claim_deadline - time.monotonic()), until_claimed=True)
    if run.status == RunStatus.PENDING:
        return run
    return run_wait(run_id=run.id, timeout=max(0.0, deadline - time.monotonic()))


def reflection_trigger_scopes(*, scopes: Iterable[ReflectionScope], trigger: str, force: bool = False
                              ) -> tuple[int, int]:
    """Trigger reflection for each scope (no threshold); returns (runs created, scopes whose user was busy)."""
    created = [reflection_trigger(scope=scope, trigger=trigger, force=force)[1] for scope in scopes]
    return sum(created), len(created) - sum(created)


@dataclass(frozen=True)
class SessionEnded:
    queued: bool  # False: this session had already ended, nothing new was enqueued
    run_ids: tuple[uuid.UUID, ...]  # the forced clustering run the pass does first (reflection runs follow it)


def session_end(*, tenant_id: int, user_id: str, session_id: str) -> SessionEnded:
    """Record the end of a session and, the first time only, request the pass's forced clustering run (or give
    the user's active clustering run the force) and enqueue the consolidation pass after commit; the pass runs
    that clustering run, then reflects each entity that has become eligible."""
    with transaction.atomic():
        _, created = SessionEnd.objects.get_or_create(tenant_id=tenant_id, user_id=user_id, session_id=session_id)
        if not created:
            return SessionEnded(queued=False, run_ids=())
        run, _ = run_request(tenant_id=tenant_id, user_id=user_id, kind=RunKind.CLUSTERING,
                             trigger=RunTrigger.SESSION_END, force=True)
        enqueue_on_commit(CONSOLIDATION_PASS, tenant_id=tenant_id, user_id=user_id)
    return SessionEnded(queued=True, run_ids=(run.id,) if run.kind == RunKind.CLUSTERING else ())


STALE_AFTER = timedelta(minutes=10)


def requeue_stale_runs(*, now: datetime | None = None) -> int:
    """Enqueue again the task of every run still pending STALE_AFTER after it was requested: its message was lost
    (a broker restarted without persistence). Safe to repeat: a duplicate task finds the run claimed or finished
    and returns. (A run whose worker died is `runs_recover_dead`'s.)"""
    now = now or timezone.now()
    count = 0
    for run in ConsolidationRun.objects.filter(status=RunStatus.PENDING, created_at__lt=now - STALE_AFTER):
        name, arguments = run_task_message(run)
        send_task(name, **arguments)
        count += 1
    return count


def runs_recover_dead(*, now: datetime | None = None) -> int:
    """Release and requeue every run whose worker stopped heartbeating (the frequent sweep; triggers do the same
    for the run they meet). Returns how many were released."""
    now = now or timezone.now()
    return sum(run_release_dead(run, now=now) for run in runs_dead(now=now))
