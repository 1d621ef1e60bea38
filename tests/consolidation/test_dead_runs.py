"""A run whose worker died (no heartbeat for ZEROMEMORY_RUN_STALE_SECONDS) is released and requeued by the sweep
and by any trigger that meets it; no trigger joins it. Time is controlled through the run row's heartbeat and the
sweep's `now`; the heartbeat thread itself is waited on by condition, never by a sleep."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import transaction

from consolidation.jobs.clustering import clustering_run_now
from consolidation.models import ConsolidationRun
from consolidation.runs import LeaseLost, run_fence, run_heartbeat, run_request, run_start
from consolidation.triggers import clustering_trigger, runs_recover_dead, session_end
from tests.conftest import wait_until
from tests.factories import HOUR, ingest, ingest_clusterable
from zeromem.celery import app

pytestmark = pytest.mark.usefixtures("hash_embedder")


@pytest.fixture
def broker_queue():
    """The real broker's default queue, emptied first; returns the (task name, kwargs) of each message in it."""
    with app.connection_for_write() as conn:
        client = conn.default_channel.client
        client.delete("celery")

        def messages() -> list[tuple[str, dict]]:
            found = []
            for raw in client.lrange("celery", 0, -1):
                message = json.loads(raw)
                body = json.loads(__import__("base64").b64decode(message["body"]))
                found.append((message["headers"]["task"], body[1]))
            return found

        yield messages
        client.delete("celery")


def claimed_by_a_dead_worker(tenant, settings, user="u1"):
    """A clustering run claimed by a worker that then stopped heartbeating (its last beat past the threshold)."""
    run, _ = run_request(tenant_id=tenant.id, user_id=user, kind="clustering", trigger="beat")
    assert run_start(run_id=run.id, worker="dead-host:4242") is not None
    stale_since = run.created_at - timedelta(seconds=settings.ZEROMEMORY_RUN_STALE_SECONDS + 1)
    ConsolidationRun.objects.filter(id=run.id).update(heartbeat_at=stale_since)
    return run


def work_for_one_run(tenant, now):
    ingest_clusterable(tenant, [f"billing-api Redis outage {i}." for i in range(2)], created_at=now - 3 * 24 * HOUR)
    ingest(tenant, "The current session.", entities=(), session="s2", created_at=now - 2 * 24 * HOUR)


@pytest.mark.django_db(transaction=True)
def test_a_session_end_releases_and_requeues_a_dead_workers_run_instead_of_joining_it(tenant, settings,
                                                                                     broker_queue):
    dead = claimed_by_a_dead_worker(tenant, settings)
    ended = session_end(tenant_id=tenant.id, user_id="u1", session_id="s1")
    run = ConsolidationRun.objects.get(id=dead.id)
    assert ended.run_ids == (dead.id,)
    assert (run.status, run.worker) == ("pending", "")  # no longer held by the dead worker
    assert ("consolidation.clustering_run", {"run_id": str(dead.id)}) in broker_queue()


@pytest.mark.django_db(transaction=True)
def test_an_in_process_trigger_takes_over_a_dead_workers_run_and_finishes_it(tenant, settings, now):
    work_for_one_run(tenant, now)
    dead = claimed_by_a_dead_worker(tenant, settings)
    outcome = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True, wait_seconds=1)
    assert not outcome.joined
    assert (outcome.run.id, outcome.run.status) == (dead.id, "succeeded")


@pytest.mark.django_db(transaction=True)
def test_a_trigger_joins_a_run_whose_worker_is_alive(tenant, settings, broker_queue):
    run, _ = run_request(tenant_id=tenant.id, user_id="u1", kind="clustering", trigger="beat")
    run_start(run_id=run.id, worker="live-host:1")
    run_id, created = clustering_trigger(tenant_id=tenant.id, user_id="u1", trigger="api")
    assert (run_id, created) == (run.id, False)
    assert ConsolidationRun.objects.get(id=run.id).worker == "live-host:1"
    assert broker_queue() == []


@pytest.mark.django_db(transaction=True)
def test_the_sweep_releases_and_requeues_only_runs_whose_heartbeat_is_stale(tenant, settings, broker_queue):
    dead = claimed_by_a_dead_worker(tenant, settings, user="u1")
    live, _ = run_request(tenant_id=tenant.id, user_id="u2", kind="clustering", trigger="beat")
    run_start(run_id=live.id, worker="live-host:1")
    live.refresh_from_db()
    assert runs_recover_dead(now=live.heartbeat_at) == 1
    assert ConsolidationRun.objects.get(id=dead.id).status == "pending"
    assert ConsolidationRun.objects.get(id=live.id).worker == "live-host:1"
    assert broker_queue() == [("consolidation.clustering_run", {"run_id": str(dead.id)})]
    assert runs_recover_dead(now=live.heartbeat_at) == 0  # released once: a second sweep sends nothing more


@pytest.mark.django_db(transaction=True)
def test_the_sweep_judges_a_live_heartbeat_by_the_clock_it_is_given(tenant, settings, broker_queue):
    run, _ = run_request(tenant_id=tenant.id, user_id="u1", kind="clustering", trigger="beat")
    run_start(run_id=run.id, worker="quiet-host:1")
    run.refresh_from_db()
    threshold = timedelta(seconds=settings.ZEROMEMORY_RUN_STALE_SECONDS)
    assert runs_recover_dead(now=run.heartbeat_at + threshold - timedelta(seconds=1)) == 0
    assert runs_recover_dead(now=run.heartbeat_at + threshold + timedelta(seconds=1)) == 1


@pytest.mark.django_db(transaction=True)
def test_a_worker_whose_run_was_released_cannot_write(tenant, settings):
    dead = claimed_by_a_dead_worker(tenant, settings)
    runs_recover_dead()
    with pytest.raises(LeaseLost), transaction.atomic():
        run_fence(run_id=dead.id, worker="dead-host:4242")  # it was only slow: its next write is refused


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_keeps_a_run_alive_while_its_worker_waits_between_steps(tenant):
    run, _ = run_request(tenant_id=tenant.id, user_id="u1", kind="clustering", trigger="beat")
    claimed = run_start(run_id=run.id, worker="busy-host:1")
    with run_heartbeat(run_id=run.id, worker="busy-host:1", interval=0.05) as heartbeat:
        # a long LLM call: no write, no fence, yet the row shows the worker is alive
        assert wait_until(lambda: ConsolidationRun.objects.get(id=run.id).heartbeat_at > claimed.heartbeat_at, 30)
        assert heartbeat.running
    assert not heartbeat.running  # the thread is gone once the run is no longer held


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_stops_once_another_worker_took_the_run(tenant, settings):
    dead = claimed_by_a_dead_worker(tenant, settings)
    runs_recover_dead()
    taken = run_start(run_id=dead.id, worker="new-host:2")
    with run_heartbeat(run_id=dead.id, worker="dead-host:4242", interval=0.05) as heartbeat:
        assert wait_until(lambda: heartbeat.lost, 30)
    assert ConsolidationRun.objects.get(id=dead.id).heartbeat_at == taken.heartbeat_at


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_outlives_a_dropped_database_connection(tenant):
    from django.db import connection

    run, _ = run_request(tenant_id=tenant.id, user_id="u1", kind="clustering", trigger="beat")
    run_start(run_id=run.id, worker="busy-host:1")

    def beat_after(moment):
        return wait_until(lambda: ConsolidationRun.objects.get(id=run.id).heartbeat_at > moment, 30)

    with run_heartbeat(run_id=run.id, worker="busy-host:1", interval=0.05) as heartbeat:
        assert beat_after(ConsolidationRun.objects.get(id=run.id).heartbeat_at)
        with connection.cursor() as cursor:  # as a database restart does to the heartbeat thread's session
            cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database()"
                           " AND pid <> pg_backend_pid() AND backend_type = 'client backend'")
        assert beat_after(ConsolidationRun.objects.get(id=run.id).heartbeat_at)
        assert heartbeat.running and not heartbeat.lost


@pytest.mark.django_db(transaction=True)
def test_a_redelivery_that_comes_before_a_killed_workers_heartbeat_is_stale_retries_and_then_takes_over(
        tenant, settings, now):
    """The broker redelivers a killed worker's message after its visibility timeout, which can be sooner than the
    stale-after: the task must not return then (nothing else would run the run but the sweep); it retries, and
    the retry takes the run over once the heartbeat is stale."""
    from consolidation.runs import RunHeld
    from consolidation.tasks import clustering_run_task

    work_for_one_run(tenant, now)
    run, _ = run_request(tenant_id=tenant.id, user_id="u1", kind="clustering", trigger="beat")
    assert run_start(run_id=run.id, worker="killed-host:4242") is not None  # its heartbeat is fresh
    with pytest.raises(RunHeld):
        clustering_run_task.run(run_id=str(run.id))
    assert ConsolidationRun.objects.get(id=run.id).worker == "killed-host:4242"
    stale_since = run.created_at - timedelta(seconds=settings.ZEROMEMORY_RUN_STALE_SECONDS + 1)
    ConsolidationRun.objects.filter(id=run.id).update(heartbeat_at=stale_since)
    assert clustering_run_task.run(run_id=str(run.id)) == "succeeded"
    assert clustering_run_task.run(run_id=str(run.id)) == "already finished"


def test_the_run_tasks_retry_while_another_worker_holds_their_run():
    from consolidation.runs import RunHeld
    from consolidation.tasks import clustering_run_task, clustering_runs_task, reflection_run_task

    for task in (clustering_run_task, clustering_runs_task, reflection_run_task):
        assert RunHeld in task.autoretry_for
