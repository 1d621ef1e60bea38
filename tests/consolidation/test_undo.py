"""Undo: unmerge and restore, with ledger rows, compensating events after commit, and refusals."""

from __future__ import annotations

import pytest

from consolidation.corrections.undo import UndoRefused, memory_restore, memory_unmerge
from consolidation.jobs.clustering import clustering_run_now
from consolidation.ledger import memory_transition
from consolidation.models import LedgerEntry
from tests.factories import ingest_clusterable
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.models import Memory, MemoryRelation, MemorySource

pytestmark = pytest.mark.usefixtures("hash_embedder")


def snapshot(ids):
    rows = Memory.objects.filter(id__in=ids).values_list("id", "state", "consolidated_at", "archived_at")
    links = set(MemorySource.objects.filter(source_memory_id__in=ids).values_list("memory_id", "source_memory_id"))
    return sorted(rows), links


def merged(tenant, created_at, count=3):
    ids = ingest_clusterable(tenant, [f"The billing-api Redis cache filled up, incident {i}." for i in range(count)],
                             created_at=created_at)
    before = snapshot(ids)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True)
    return ids, before, Memory.objects.get(tenant=tenant, memory_type="semantic", state="raw")


@pytest.mark.django_db(transaction=True)
def test_unmerge_restores_every_members_state_and_links_as_before_the_merge(tenant, events, three_days_ago):
    ids, before, semantic = merged(tenant, three_days_ago)
    assert snapshot(ids) != before
    events.clear()
    result = memory_unmerge(tenant_id=tenant.id, semantic_id=semantic.id, actor="admin:ops")
    assert sorted(result.restored) == sorted(ids)
    assert snapshot(ids) == before
    semantic.refresh_from_db()
    assert semantic.state == "archived" and semantic.archive_reason == "retract"
    unmerge = LedgerEntry.objects.get(action="unmerge")
    assert LedgerEntry.objects.get(action="merge").undone_by == unmerge
    assert [e["event"] for e in events] == ["memory.unmerged"]
    assert sorted(events[0]["data"]["restored_ids"]) == sorted(str(i) for i in ids)


@pytest.mark.django_db(transaction=True)
def test_restore_refuses_a_memory_an_unmerge_retracted(tenant, three_days_ago):
    _, _, semantic = merged(tenant, three_days_ago)
    memory_unmerge(tenant_id=tenant.id, semantic_id=semantic.id, actor="admin:ops")
    with pytest.raises(TransitionRefused, match="undo retracted"):
        memory_restore(tenant_id=tenant.id, memory_id=semantic.id, actor="admin:ops")


@pytest.mark.django_db(transaction=True)
def test_restore_brings_a_superseded_memory_back(tenant, events, now, three_days_ago):
    old, new = ingest_clusterable(tenant, ["The desk is set to 110 cm.", "The desk is now at 104 cm."],
                                  entities=("desk",), created_at=three_days_ago)
    memory_transition(tenant_id=tenant.id, memory_ids=[old], operation="supersede", actor="run:x")
    Memory.objects.filter(id=old).update(superseded_by=new, valid_to=now)
    MemoryRelation.objects.create(tenant=tenant, from_memory_id=new, to_memory_id=old, relation_type="supersedes")
    events.clear()
    restored = memory_restore(tenant_id=tenant.id, memory_id=old, actor="admin:ops")
    assert restored.state == "raw" and restored.superseded_by_id is None and restored.valid_to is None
    assert not MemoryRelation.objects.filter(to_memory_id=old).exists()
    assert LedgerEntry.objects.get(action="restore").outputs == {"removed_supersedes_from": [str(new)]}
    assert [e["event"] for e in events] == ["memory.restored"]


@pytest.mark.django_db(transaction=True)
def test_unmerge_is_refused_when_a_later_merge_folded_the_memory(tenant, now, three_days_ago):
    _, _, semantic = merged(tenant, three_days_ago)
    later = Memory.objects.create(tenant=tenant, user_id="u1", memory_type="semantic", content="higher level",
                                  content_hash="h", created_at=now)
    MemorySource.objects.create(memory=later, source=semantic, source_memory_id=semantic.id,
                                source_content_hash=semantic.content_hash)
    memory_transition(tenant_id=tenant.id, memory_ids=[semantic.id], operation="consolidate", actor="run:y")
    with pytest.raises(UndoRefused, match="unmerge that first"):
        memory_unmerge(tenant_id=tenant.id, semantic_id=semantic.id, actor="admin:ops")


@pytest.mark.django_db(transaction=True)
def test_unmerge_is_refused_when_a_source_was_deleted(tenant, events, three_days_ago):
    ids, _, semantic = merged(tenant, three_days_ago)
    Memory.objects.filter(id=ids[0]).delete()
    events.clear()
    with pytest.raises(UndoRefused, match="deleted"):
        memory_unmerge(tenant_id=tenant.id, semantic_id=semantic.id, actor="admin:ops")
    semantic.refresh_from_db()
    assert semantic.state == "raw" and not events
    assert MemorySource.objects.filter(memory=semantic, source_memory_id=ids[0], source__isnull=True).exists()
