from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from consolidation.models import ConsolidationRun
from consolidation.tasks import clustering_fan_out_task
from zeromem import services

pytestmark = pytest.mark.usefixtures("hash_embedder")


def test_the_daily_fan_out_queues_one_run_per_user_with_eligible_memories(tenant, other_tenant,
                                                                         django_capture_on_commit_callbacks):
    old, fresh = timezone.now() - timedelta(days=3), timezone.now() - timedelta(hours=1)
    for t, user, when in ((tenant, "old-user", old), (tenant, "fresh-user", fresh), (other_tenant, "old-user", old)):
        services.memories_ingest(tenant_id=t.id, items=[services.MemoryInput(content="x", user_id=user,
                                                                             created_at=when)])
    with django_capture_on_commit_callbacks() as callbacks:
        assert clustering_fan_out_task.run() == 2
        assert clustering_fan_out_task.run() == 0  # the runs are still pending: nothing queued twice
    runs = ConsolidationRun.objects.filter(kind="clustering", trigger="beat")
    assert sorted((r.tenant.name, r.user_id) for r in runs) == [("acme", "old-user"), ("globex", "old-user")]
    assert len(callbacks) == 2
