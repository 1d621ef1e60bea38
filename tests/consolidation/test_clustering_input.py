"""What clustering reads, in what order: memories that share a created_at (every turn of an imported chat session
does) come out in the order they were written, never in the order of their content hashes."""

from __future__ import annotations

import pytest
from django.conf import settings

from consolidation.jobs.clustering import clustering_run_now
from consolidation.selectors import clustering_input
from tests.factories import HOUR, ingest, ingest_clusterable
from zeromem.core.services import content_hash
from zeromem.models import Memory

pytestmark = pytest.mark.usefixtures("hash_embedder")

# Said in this order; their content hashes sort otherwise (checked below, so the test cannot pass by chance).
SAID = ["The billing-api Redis cache hit its memory limit on Monday morning.",
        "We raised the billing-api Redis maxmemory from 2 GB to 4 GB that afternoon.",
        "The billing-api Redis evictions stopped by Tuesday.",
        "The billing-api Redis dashboard now pages the on-call engineer at 80 percent memory."]


def test_the_said_order_is_not_the_order_of_the_content_hashes() -> None:
    assert sorted(SAID, key=content_hash) != SAID


@pytest.mark.django_db(transaction=True)
def test_memories_written_at_one_time_are_read_in_the_order_they_were_written(tenant, three_days_ago):
    first = ingest_clusterable(tenant, SAID[:2], created_at=three_days_ago)
    second = ingest_clusterable(tenant, SAID[2:], created_at=three_days_ago)  # a later batch, the same time
    loaded = clustering_input(Memory.objects.filter(tenant=tenant), settings.ZEROMEMORY_EMBEDDING_DIM)
    assert loaded.ids == [*first, *second]
    assert [row.content for row in loaded.rows] == SAID


@pytest.mark.django_db(transaction=True)
def test_a_merge_of_memories_written_at_one_time_keeps_the_order_they_were_said_in(tenant, three_days_ago):
    ingest_clusterable(tenant, SAID, created_at=three_days_ago)
    ingest(tenant, "Lunch was great.", entities=(), session="s2", created_at=three_days_ago + HOUR)
    outcome = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    assert outcome.run.status == "succeeded" and outcome.run.created == 1
    merged = Memory.objects.get(tenant=tenant, memory_type="semantic").content
    positions = [merged.find(marker) for marker in ("Monday", "4 GB", "Tuesday", "80 percent")]
    assert -1 not in positions, merged
    assert positions == sorted(positions), merged
