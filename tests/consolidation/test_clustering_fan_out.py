from __future__ import annotations

import pytest

from consolidation.models import ConsolidationRun
from consolidation.tasks import clustering_fan_out_task
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
    assert len(callbacks) == 2


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
