"""What a retired claim leaves of its memory (`consolidation/jobs/updates.py`): a remainder stands alone or is not
written — nothing in it points at a sentence it no longer holds or at another turn."""

from __future__ import annotations

import pytest

from consolidation.jobs.clustering import clustering_run_now
from tests.factories import DAY, ingest_one
from zeromem.models import Memory


def history(tenant, now, older_text):
    """`older_text` saying "I've visited 14 countries", then "15 countries" months later, and a current session:
    the older turn's id."""
    older = ingest_one(tenant, older_text, session="a", created_at=now - 90 * DAY)
    ingest_one(tenant, "Peru was amazing, I've visited 15 countries so far!", session="b", created_at=now - 5 * DAY)
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    return older


@pytest.mark.django_db(transaction=True)
def test_a_reaction_to_another_turn_is_left_out_of_the_remainder(tenant, now):
    history(tenant, now, "Wow, that must have been amazing! I've visited 14 countries so far. "
                         "My sister lives in Lisbon and loves the food there.")
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run
    assert run.claims_retired == 1
    remainder = Memory.objects.get(metadata__source_type="remainder")
    assert remainder.content == "My sister lives in Lisbon and loves the food there."


@pytest.mark.django_db(transaction=True)
def test_a_memory_whose_rest_leans_on_the_retired_claim_and_says_something_stays_as_it_was_said(tenant, now):
    older = history(tenant, now, "I've visited 14 countries so far. I've loved them for 3 years! "
                                 "My sister lives in Lisbon and loves the food there.")
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run
    assert run.claims_retired == 0
    assert not Memory.objects.filter(metadata__source_type__in=["remainder", "claim"]).exists()
    assert Memory.objects.get(id=older).state == "raw"
