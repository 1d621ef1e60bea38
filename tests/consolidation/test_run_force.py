"""A forced request never loses its force: a pending run is upgraded before it starts, a running one is followed
by a forced run of the same job, and an in-process forced request that joined it runs that follow-up."""

from __future__ import annotations

import threading

import pytest
from django.db import IntegrityError, connections

from consolidation.jobs.clustering import clustering_run_now
from consolidation.models import ConsolidationRun, RunKind, RunStatus
from consolidation.runs import run_finish, run_request, run_start
from tests.conftest import wait_until
from tests.factories import ingest_clusterable
from zeromem.models import Memory, MemoryState

pytestmark = pytest.mark.usefixtures("hash_embedder")


def request(tenant, *, force: bool) -> tuple[ConsolidationRun, bool]:
    return run_request(tenant_id=tenant.id, user_id="u1", kind=RunKind.CLUSTERING, trigger="cli", force=force)


def ingest_today_and_older(tenant, *, today, older) -> None:
    """Three clusterable episodes in an old session and three in the current one (only a forced run takes those)."""
    for when, session, at in (("old", "s-old", older), ("today", "s-now", today)):
        ingest_clusterable(tenant, [f"The billing-api Redis cache hit its limit, {when} {i}." for i in range(3)],
                           session=session, created_at=at)


@pytest.mark.django_db
def test_a_forced_request_upgrades_a_pending_unforced_run(tenant):
    pending, _ = request(tenant, force=False)

    joined, created = request(tenant, force=True)

    assert not created and joined.id == pending.id and joined.force and not joined.forced_follow_up


@pytest.mark.django_db
def test_a_forced_request_that_meets_a_running_run_gets_a_forced_run_after_it(tenant):
    running, _ = request(tenant, force=False)
    run_start(run_id=running.id, worker="w1")

    joined, _ = request(tenant, force=True)
    assert joined.id == running.id and not joined.force and joined.forced_follow_up

    run_finish(run_id=running.id, worker="w1", status=RunStatus.SUCCEEDED)
    follow_up = ConsolidationRun.objects.exclude(id=running.id).get()
    assert (follow_up.status, follow_up.force, follow_up.result) == (RunStatus.PENDING, True,
                                                                      {"follows": str(running.id)})


@pytest.mark.django_db
def test_an_unforced_request_joins_without_changing_the_run(tenant):
    running, _ = request(tenant, force=False)
    run_start(run_id=running.id, worker="w1")

    joined, _ = request(tenant, force=False)

    assert joined.id == running.id and not joined.force and not joined.forced_follow_up


@pytest.mark.django_db(transaction=True)
def test_a_forced_cli_run_that_joined_an_unforced_one_consolidates_the_current_session_too(tenant, now,
                                                                                         three_days_ago):
    ingest_today_and_older(tenant, today=now, older=three_days_ago)
    held, _ = request(tenant, force=False)
    run_start(run_id=held.id, worker="another-worker")  # an unforced run another worker is busy with
    outcome: list = []

    def forced_cli_run() -> None:
        try:
            outcome.append(clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True,
                                              wait_seconds=60))
        finally:
            connections.close_all()

    thread = threading.Thread(target=forced_cli_run)
    thread.start()
    assert wait_until(lambda: ConsolidationRun.objects.filter(id=held.id, forced_follow_up=True).exists())
    run_finish(run_id=held.id, worker="another-worker", status=RunStatus.SUCCEEDED)
    thread.join(60)

    forced = outcome[0].run
    assert forced.force and forced.id != held.id and not outcome[0].joined and forced.merged == 6
    assert not Memory.objects.filter(tenant=tenant, memory_type="episodic", state=MemoryState.RAW).exists()


@pytest.mark.django_db(transaction=True)
def test_a_request_for_a_tenant_that_is_gone_raises_instead_of_retrying_forever(tenant):
    gone = tenant.id
    tenant.delete()

    with pytest.raises(IntegrityError):
        run_request(tenant_id=gone, user_id="u1", kind=RunKind.CLUSTERING, trigger="beat")
