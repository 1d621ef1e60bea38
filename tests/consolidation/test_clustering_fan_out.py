from __future__ import annotations

import base64
import json
import uuid

import pytest

from consolidation.models import ConsolidationRun
from consolidation.tasks import clustering_fan_out_task
from consolidation.triggers import small_batches
from tests.factories import HOUR, MINUTE, ingest

pytestmark = pytest.mark.usefixtures("hash_embedder")


def test_the_daily_fan_out_queues_one_run_per_user_with_eligible_memories(tenant, other_tenant,
                                                                         django_capture_on_commit_callbacks,
                                                                         now, three_days_ago):
    old, fresh = three_days_ago, now - HOUR
    for t, user, when in ((tenant, "old-user", old), (tenant, "fresh-user", fresh), (other_tenant, "old-user", old)):
        ingest(t, "x", user=user, created_at=when)
    with django_capture_on_commit_callbacks() as callbacks:
        assert clustering_fan_out_task.run() == 2
        assert clustering_fan_out_task.run() == 0  # the runs are still pending: nothing queued twice
    runs = ConsolidationRun.objects.filter(kind="clustering", trigger="beat")
    assert sorted((r.tenant.name, r.user_id) for r in runs) == [("acme", "old-user"), ("globex", "old-user")]
    assert len(callbacks) == 1  # two small users: one shared task


def test_small_users_share_a_task_and_a_big_one_gets_its_own(tenant, settings, django_capture_on_commit_callbacks,
                                                             three_days_ago):
    from zeromem.celery import app

    settings.ZEROMEMORY_CLUSTERING_BATCH_EPISODES = 5
    for user, episodes in (("small-1", 2), ("small-2", 3), ("small-3", 1), ("big", 5)):
        ingest(tenant, [f"{user} said thing {i}" for i in range(episodes)], user=user, created_at=three_days_ago)
    with app.connection_for_write() as conn:
        broker = conn.default_channel.client
        broker.delete("celery")
        with django_capture_on_commit_callbacks(execute=True):
            assert clustering_fan_out_task.run() == 4
        sent = [_task_of(message) for message in broker.lrange("celery", 0, -1)]
        broker.delete("celery")
    runs = {str(r.id): r.user_id for r in ConsolidationRun.objects.filter(kind="clustering")}
    named = sorted((name, sorted(runs[i] for i in kwargs.get("run_ids", [kwargs.get("run_id")])))
                   for name, kwargs in sent)
    assert named == [("consolidation.clustering_run", ["big"]),
                     ("consolidation.clustering_run", ["small-3"]),  # 2 + 3 filled the first task's 5 episodes
                     ("consolidation.clustering_runs", ["small-1", "small-2"])]


def _task_of(message: bytes) -> tuple[str, dict]:
    """(task name, keyword arguments) of a message as Celery queued it in the broker."""
    envelope = json.loads(message)
    _, kwargs, _ = json.loads(base64.b64decode(envelope["body"]))
    return envelope["headers"]["task"], kwargs


def test_batches_keep_to_their_budget_and_their_run_limit():
    runs = [(uuid.uuid4(), n) for n in (1, 1, 1, 499, 500, 2, 2)]
    ids = [run_id for run_id, _ in runs]
    assert small_batches(runs, budget=500, most=2) == [ids[0:2], ids[2:4], ids[4:5], ids[5:7]]
    assert small_batches(runs, budget=0, most=50) == [[i] for i in ids]


@pytest.mark.django_db(transaction=True)
def test_a_shared_task_runs_every_run_and_fails_after_them_with_the_first_error(tenant, three_days_ago):
    from consolidation.runs import run_request
    from consolidation.tasks import clustering_runs_task

    run_ids = []
    for user in ("u1", "u2"):
        ingest(tenant, [f"{user} likes green tea", f"{user} likes green tea a lot"], user=user,
               created_at=three_days_ago)
        run_ids.append(str(run_request(tenant_id=tenant.id, user_id=user, kind="clustering", trigger="beat")[0].id))
    with pytest.raises(ValueError):
        clustering_runs_task.run(run_ids=[run_ids[0], "not-a-run-id", run_ids[1]])
    assert set(ConsolidationRun.objects.filter(id__in=run_ids).values_list("status", flat=True)) == {"succeeded"}
    assert clustering_runs_task.run(run_ids=run_ids) == ["already finished"] * 2  # a redelivery


@pytest.mark.django_db(transaction=True)
def test_a_shared_task_stops_at_its_soft_time_limit_and_leaves_the_rest_pending(tenant, three_days_ago,
                                                                                 monkeypatch):
    from celery.exceptions import SoftTimeLimitExceeded

    from consolidation import tasks
    from consolidation.runs import run_request

    run_ids = [str(run_request(tenant_id=tenant.id, user_id=user, kind="clustering", trigger="beat")[0].id)
               for user in ("u1", "u2")]

    def out_of_time(**kwargs):
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(tasks, "clustering_execute", out_of_time)  # what Celery raises when the limit passes
    with pytest.raises(SoftTimeLimitExceeded):
        tasks.clustering_runs_task.run(run_ids=run_ids)
    assert ConsolidationRun.objects.get(id=run_ids[1]).status == "pending"


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_task_was_lost_is_requeued(tenant, now):
    from consolidation.runs import run_request
    from consolidation.triggers import requeue_stale_runs
    from zeromem.celery import app

    run, _ = run_request(tenant_id=tenant.id, user_id="u1", kind="clustering", trigger="beat")  # no task sent
    assert requeue_stale_runs() == 0  # young: its message may still be queued
    ConsolidationRun.objects.filter(id=run.id).update(created_at=now - 11 * MINUTE)
    app.conf.task_always_eager = True
    try:
        assert requeue_stale_runs() == 1
    finally:
        app.conf.task_always_eager = False
    run.refresh_from_db()
    assert run.status == "succeeded"
    assert requeue_stale_runs() == 0
