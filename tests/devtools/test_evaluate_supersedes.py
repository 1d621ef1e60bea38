"""What the evaluations report as superseded (zeromem/devtools/evaluation/supersedes.py): the memories clustering
archived as superseded with what replaced them, and evaluate locomo's count, rate and list of them."""

from __future__ import annotations

import pytest

from tests.factories import DAY, ingest
from zeromem.core.domain.transitions import SUPERSEDED
from zeromem.devtools.evaluation.retrieval import supersedes
from zeromem.devtools.evaluation.supersedes import superseded_memories
from zeromem.models import Memory, MemoryState


def retire(memory_id, *, reason: str = SUPERSEDED, by=None) -> None:
    """Arrange what a clustering run leaves behind (the run itself is tested in tests/consolidation)."""
    Memory.objects.filter(id=memory_id).update(state=MemoryState.ARCHIVED, archive_reason=reason, superseded_by=by)


@pytest.fixture
def retired(tenant, now) -> None:
    rent, raised, _, chatter = ingest(tenant, ["My rent is $1,400.", "The landlord raised my rent to $1,550.",
                                                  "I play bass in a jazz trio.", "Haha, sure!"],
                                         embed=False, created_at=now - DAY)
    [other_user] = ingest(tenant, ["I drive a blue van."], embed=False, user="u2", created_at=now - 2 * DAY)
    retire(rent, by=raised)
    retire(other_user)  # its successor is gone
    retire(chatter, reason="uninformative")


@pytest.mark.django_db
def test_it_lists_the_superseded_memories_oldest_first_with_their_successor(tenant, retired):
    found = superseded_memories(tenant_id=tenant.id)

    assert [m.content for m in found] == ["I drive a blue van.", "My rent is $1,400."]
    assert [m.content for m in superseded_memories(tenant_id=tenant.id, user_id="u1")] == ["My rent is $1,400."]


@pytest.mark.django_db
def test_locomo_reports_the_count_the_rate_per_1000_turns_and_the_pairs(tenant, retired):
    figures = supersedes(tenant.id, turns=400)

    assert (figures["supersedes"], figures["supersedes_per_1000_turns"]) == (2, 5.0)
    assert figures["supersedes_list"] == [
        {"user_id": "u2", "older": "I drive a blue van.", "newer": None},
        {"user_id": "u1", "older": "My rent is $1,400.", "newer": "The landlord raised my rent to $1,550."}]
