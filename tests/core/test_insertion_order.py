"""Memory.insertion_order: numbered by the database at insert, in the order rows were written, and backfilled for
the rows a store held before the column existed (the tie-break after created_at wherever order matters)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from tests.factories import ingest
from zeromem.models import Memory

BEFORE = [("zeromem", "0010_memory_features")]


@pytest.mark.django_db(transaction=True)
def test_a_batch_is_numbered_in_the_order_it_was_given_and_later_writes_after_it(tenant):
    at = timezone.now()
    batch = ingest(tenant, [f"note number {n}" for n in range(5)], created_at=at)
    later = ingest(tenant, "a later note", created_at=at - timedelta(days=1))
    numbers = dict(Memory.objects.values_list("id", "insertion_order"))
    assert [numbers[i] for i in batch] == sorted(numbers[i] for i in batch)
    assert numbers[later[0]] > max(numbers[i] for i in batch)


@pytest.mark.django_db(transaction=True)
def test_create_reads_back_the_number_the_database_gave(tenant):
    first = Memory.objects.create(tenant=tenant, user_id="u1", content="one", content_hash="a",
                                  created_at=timezone.now())
    second = Memory.objects.create(tenant=tenant, user_id="u1", content="two", content_hash="b",
                                   created_at=timezone.now())
    assert isinstance(first.insertion_order, int) and second.insertion_order > first.insertion_order


@pytest.mark.django_db(transaction=True)
def test_the_migration_numbers_existing_memories_by_created_at_then_id(tenant):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps.get_model("zeromem", "Memory")
        at = timezone.now()
        written = [old.objects.create(tenant_id=tenant.id, user_id="u1", content=f"m{n}", content_hash=f"h{n}",
                                      created_at=at - timedelta(hours=n % 3)) for n in range(9)]
    finally:
        latest = MigrationExecutor(connection)
        latest.migrate(latest.loader.graph.leaf_nodes())  # the tests after this one need the current schema
    expected = [m.id for m in sorted(written, key=lambda m: (m.created_at, m.id))]
    assert list(Memory.objects.order_by("insertion_order").values_list("id", flat=True)) == expected
    newest = Memory.objects.create(tenant=tenant, user_id="u1", content="new", content_hash="n", created_at=at)
    assert newest.insertion_order == len(written) + 1
