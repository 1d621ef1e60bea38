"""GET …/profile: the stored lists as they are, plus `static` and `recent` — the summary and the strongest items within
`budget_chars`, split by when each item was first said. Profiles are written as rows; ages count back from the
test's `now`."""

from __future__ import annotations

from datetime import datetime

import pytest

from profiles.models import MemoryProfile
from profiles.selectors import profile_view
from tests.api.test_errors import error_of
from tests.factories import DAY, HOUR

SUMMARY = "Alice is a data engineer in Lisbon."
STRONGEST_FIRST = ["Alice reviews pull requests before lunch.", "Alice prefers green tea over coffee.",
                   "Alice moved to Lisbon.", "Alice runs 10 km on Sundays.",
                   "Alice paints watercolours of lighthouses."]


def item(statement: str, *, seen: datetime, confidence: float = 0.7, category: str = "preference",
         **newer: object) -> dict[str, object]:
    """A stored item first and last seen at `seen`; `newer`: the optional fields of newer items (valid_from,
    weight, replaced_by)."""
    return {"category": category, "subject": "alice", "statement": statement, "confidence": confidence,
            "source_ids": [], "memory_ids": [], "first_seen": seen.isoformat(), "last_seen": seen.isoformat(),
            **newer}


@pytest.fixture
def profile(tenant, now) -> MemoryProfile:
    """A summary and five items of known strength: three long-standing, two first said lately."""
    return MemoryProfile.objects.create(
        tenant=tenant, user_id="u1", entity_id="alice", summary=SUMMARY, version=3,
        preferences=[item("Alice prefers green tea over coffee.", seen=now - 200 * DAY, confidence=0.9),
                     item("Alice paints watercolours of lighthouses.", seen=now - 2 * DAY, confidence=0.65)],
        behaviors=[item("Alice reviews pull requests before lunch.", seen=now - 90 * DAY, confidence=0.6,
                        category="behavior", weight=0.95)],
        facts=[item("Alice moved to Lisbon.", seen=now - DAY, confidence=0.8, category="domain_fact",
                    valid_from=(now - 400 * DAY).isoformat()),
               item("Alice runs 10 km on Sundays.", seen=now - 5 * DAY, confidence=0.7, category="domain_fact")])


def statements(items: list[dict]) -> list[str]:
    return [i["statement"] for i in items]


def test_without_a_budget_every_item_is_split_into_static_and_recent_strongest_first(api, profile):
    body = api.get("/profile", user_id="u1", entity_id="alice").json()

    assert statements(body["static"]) == ["Alice reviews pull requests before lunch.",  # weight 0.95
                                          "Alice prefers green tea over coffee.",  # confidence 0.9
                                          "Alice moved to Lisbon."]  # valid_from 400 days ago, seen yesterday
    assert statements(body["recent"]) == ["Alice runs 10 km on Sundays.", "Alice paints watercolours of lighthouses."]
    assert body["summary"] == SUMMARY and body["budget_chars"] is None


def test_the_stored_lists_and_fields_are_answered_as_before(api, profile):
    body = api.get("/profile", user_id="u1", entity_id="alice", budget_chars=100).json()

    assert [len(body[name]) for name in ("preferences", "behaviors", "facts")] == [2, 1, 2]
    assert body["preferences"][0] == profile.preferences[0]
    assert (body["user_id"], body["entity_id"], body["namespace"], body["version"]) == ("u1", "alice", "global", 3)


@pytest.mark.parametrize(("budget", "fitting"), [(100, 1), (120, 2), (150, 3), (200, 4), (50_000, 5)])
def test_with_a_budget_the_summary_and_the_strongest_items_fit_and_never_exceed_it(api, profile, budget, fitting):
    body = api.get("/profile", user_id="u1", entity_id="alice", budget_chars=budget).json()

    kept = body["static"] + body["recent"]
    assert len(body["summary"]) + 1 + sum(len(i["statement"]) + 1 for i in kept) <= budget
    assert body["summary"] == SUMMARY and body["budget_chars"] == budget
    assert set(statements(kept)) == set(STRONGEST_FIRST[:fitting])


def test_an_item_that_does_not_fit_gives_way_to_a_weaker_one_that_does(api, tenant, now):
    MemoryProfile.objects.create(tenant=tenant, user_id="u1", facts=[
        item("Alice keeps every customer's data in the EU region, for compliance, and reviews the data residency "
             "audit every quarter.", seen=now, confidence=0.9),
        item("Alice has a daughter, Mia.", seen=now, confidence=0.8)])

    body = api.get("/profile", user_id="u1", budget_chars=100).json()

    assert statements(body["recent"]) == ["Alice has a daughter, Mia."]


def test_a_summary_longer_than_the_budget_is_left_out_and_the_items_get_the_budget(api, tenant, now):
    MemoryProfile.objects.create(tenant=tenant, user_id="u1", summary="x" * 120,
                                 facts=[item("Alice has a daughter, Mia.", seen=now)])

    body = api.get("/profile", user_id="u1", budget_chars=100).json()

    assert body["summary"] == "" and statements(body["recent"]) == ["Alice has a daughter, Mia."]


def test_equal_strength_puts_the_latest_seen_first(api, tenant, now):
    MemoryProfile.objects.create(tenant=tenant, user_id="u1", facts=[
        item("Alice likes jazz.", seen=now - 3 * DAY), item("Alice likes opera.", seen=now - DAY)])

    body = api.get("/profile", user_id="u1").json()

    assert statements(body["recent"]) == ["Alice likes opera.", "Alice likes jazz."]


def test_recent_means_first_said_within_the_configured_days(tenant, now):
    profile = MemoryProfile.objects.create(tenant=tenant, user_id="u1", facts=[
        item("Said seven days ago.", seen=now - 7 * DAY),
        item("Said just over seven days ago.", seen=now - 7 * DAY - HOUR),
        item("Seen today, said long ago.", seen=now, valid_from=(now - 30 * DAY).isoformat())])

    view = profile_view(profile=profile, budget_chars=None, now=now, recent_days=7)

    assert statements(view.recent) == ["Said seven days ago."]
    assert set(statements(view.static)) == {"Said just over seven days ago.", "Seen today, said long ago."}


@pytest.mark.parametrize("budget", ["99", "50001", "-5", "lots", "1e3", ""])
def test_a_budget_outside_100_to_50000_or_not_an_integer_answers_422_in_the_error_shape(api, profile, budget):
    error_of(api.get("/profile", user_id="u1", entity_id="alice", budget_chars=budget), 422, "invalid_input")
