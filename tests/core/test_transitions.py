"""The state table of ARCHITECTURE.md, "States", enforced by consolidation.ledger.memory_transition."""

from __future__ import annotations

import itertools
import threading

import pytest
from django.db import connection
from django.utils import timezone

from consolidation.ledger import memory_transition
from consolidation.models import LedgerEntry
from zeromem.core.domain.transitions import (
    STATES,
    TRANSITIONS,
    TransitionRefused,
    allowed_pairs,
    check_transition,
)
from zeromem.core.services import content_hash
from zeromem.models import Memory

ALLOWED = {
    ("consolidate", "raw", "consolidated"),
    ("decay", "raw", "archived"),
    ("supersede", "raw", "archived"),
    ("uninformative", "raw", "archived"),
    ("retract", "raw", "archived"),
    ("retention", "consolidated", "archived"),
    ("unmerge", "consolidated", "raw"),
    ("restore", "archived", "raw"),
}


def make_memory(tenant, state="raw", archive_reason="", text="a memory"):
    """Specific to this file (not `ingest`): a row written directly in any state, since ingestion only ever
    stores raw memories and these tests start from every state."""
    return Memory.objects.create(tenant=tenant, user_id="u1", content=text, content_hash=content_hash(text),
                                 state=state, archive_reason=archive_reason, created_at=timezone.now())


def test_the_table_is_exactly_the_documented_one():
    assert {(t.operation, t.from_state, t.to_state) for t in TRANSITIONS.values()} == ALLOWED
    assert allowed_pairs() == {(f, t) for _, f, t in ALLOWED}


@pytest.mark.parametrize("operation,from_state", [(op, s) for op in sorted(TRANSITIONS) for s in STATES])
def test_pure_check_allows_only_the_operations_own_from_state(operation, from_state):
    transition = TRANSITIONS[operation]
    if from_state == transition.from_state:
        assert check_transition(operation=operation, current_state=from_state).to_state == transition.to_state
    else:
        with pytest.raises(TransitionRefused, match=f"{operation} moves"):
            check_transition(operation=operation, current_state=from_state)


def test_an_unknown_operation_is_refused_with_the_allowed_ones_listed():
    with pytest.raises(TransitionRefused, match="allowed"):
        check_transition(operation="resurrect", current_state="archived")


@pytest.mark.parametrize("operation,from_state,to_state", sorted(ALLOWED))
def test_every_allowed_transition_moves_the_memory_and_writes_a_ledger_row(tenant, operation, from_state,
                                                                          to_state):
    memory = make_memory(tenant, state=from_state)
    assert memory_transition(tenant_id=tenant.id, memory_ids=[memory.id], operation=operation,
                             actor="test") == 1
    memory.refresh_from_db()
    assert memory.state == to_state
    entry = LedgerEntry.objects.get(action=f"transition.{operation}")
    assert entry.memory_ids == [str(memory.id)] and entry.actor == "test"


@pytest.mark.parametrize("operation,from_state", [
    (op, s) for op, s in itertools.product(sorted(TRANSITIONS), STATES) if TRANSITIONS[op].from_state != s])
def test_every_refused_transition_changes_nothing(tenant, operation, from_state):
    memory = make_memory(tenant, state=from_state)
    with pytest.raises(TransitionRefused, match=f"the memory is {from_state}"):
        memory_transition(tenant_id=tenant.id, memory_ids=[memory.id], operation=operation, actor="test")
    memory.refresh_from_db()
    assert memory.state == from_state
    assert not LedgerEntry.objects.exists()


def test_timestamps_follow_the_state(tenant):
    memory = make_memory(tenant)
    memory_transition(tenant_id=tenant.id, memory_ids=[memory.id], operation="supersede", actor="t")
    memory.refresh_from_db()
    assert memory.archived_at and memory.archive_reason == "supersede"
    memory_transition(tenant_id=tenant.id, memory_ids=[memory.id], operation="restore", actor="t")
    memory.refresh_from_db()
    assert memory.archived_at is None and memory.archive_reason == ""


def test_restore_refuses_a_memory_an_undo_retracted(tenant):
    memory = make_memory(tenant)
    memory_transition(tenant_id=tenant.id, memory_ids=[memory.id], operation="retract", actor="unmerge")
    with pytest.raises(TransitionRefused, match="undo retracted"):
        memory_transition(tenant_id=tenant.id, memory_ids=[memory.id], operation="restore", actor="t")
    memory.refresh_from_db()
    assert memory.state == "archived"


def test_a_batch_moves_all_or_none(tenant):
    ok, wrong = make_memory(tenant, text="one"), make_memory(tenant, state="archived", text="two")
    with pytest.raises(TransitionRefused):
        memory_transition(tenant_id=tenant.id, memory_ids=[ok.id, wrong.id], operation="consolidate", actor="t")
    ok.refresh_from_db()
    assert ok.state == "raw"


def test_another_tenants_memory_is_refused(tenant, other_tenant):
    memory = make_memory(other_tenant)
    with pytest.raises(TransitionRefused, match="does not exist in this tenant"):
        memory_transition(tenant_id=tenant.id, memory_ids=[memory.id], operation="consolidate", actor="t")


@pytest.mark.django_db(transaction=True)
def test_two_connections_race_and_exactly_one_wins(tenant):
    memory = make_memory(tenant)
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def contender(operation: str) -> None:
        try:
            barrier.wait()
            memory_transition(tenant_id=tenant.id, memory_ids=[memory.id], operation=operation, actor=operation)
            outcomes.append("won")
        except TransitionRefused:
            outcomes.append("refused")
        finally:
            connection.close()  # each thread has its own connection

    threads = [threading.Thread(target=contender, args=(op,)) for op in ("consolidate", "decay")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["refused", "won"]
    memory.refresh_from_db()
    assert memory.state in {"consolidated", "archived"}
    assert LedgerEntry.objects.filter(action__startswith="transition.").count() == 1
