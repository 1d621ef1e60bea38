"""POST …/context never says a sentence twice: reflection writes the profile summary again as a digest memory and
each profile item again as an insight memory, and a summary may be made of the items' statements."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from profiles.models import MemoryProfile
from tests.factories import DAY, ingest, ingest_entity
from zeromem.core.domain.text import normalised_sentence, sentences

pytestmark = pytest.mark.usefixtures("hash_embedder")

SUMMARY = "Alice drinks green tea every morning. Alice lives in Lisbon."
TEA = "Alice drinks green tea every morning."
RUNS = "Alice runs along the river on Sundays."
EPISODE = "Alice lives in Lisbon. She moved to Lisbon from Berlin in 2021."
QUERY = "Alice green tea Lisbon river Sundays Berlin"
LABEL = re.compile(r"^(?:Summary: |\* \w+: |- \[[\d-]+\] )")


def said(context: str) -> Counter[str]:
    """How often each sentence of the context is said, without the line labels ("Summary: ", "* fact: ", the date)
    and without a speaker or heading before a colon ("Alice: ", "alice, 2024-05-02 to 2024-05-09: ")."""
    texts = [LABEL.sub("", line) for line in context.splitlines()]
    return Counter(normalised_sentence(s.partition(": ")[2] or s) for text in texts for s in sentences(text))


@pytest.fixture
def repeated(tenant, now) -> dict[str, object]:
    """A profile whose summary says one item again, and the memories reflection writes beside it: a digest of the
    summary, an insight per item, plus an episode that says one sentence of the summary and one of its own."""
    seen = (now - 2 * DAY).isoformat()
    MemoryProfile.objects.create(tenant=tenant, user_id="u1", summary=SUMMARY, facts=[
        {"category": "preference", "statement": statement, "confidence": confidence, "source_ids": [],
         "memory_ids": [], "first_seen": seen, "last_seen": seen}
        for statement, confidence in ((TEA, 0.9), (RUNS, 0.8))])
    digest, tea, runs, episode = ingest(tenant, [SUMMARY, TEA, RUNS, EPISODE], user="u1", created_at=now - DAY)
    return {"digest": digest, "tea": tea, "runs": runs, "episode": episode}


def test_no_sentence_appears_twice_when_memories_repeat_the_profile(api, repeated):
    body = api.post("/context", {"query": QUERY, "user_id": "u1", "budget_chars": 5000}).json()

    counts = said(body["context"])
    assert counts and max(counts.values()) == 1, body["context"]
    assert set(counts) == {normalised_sentence(s) for s in (*sentences(SUMMARY), RUNS, *sentences(EPISODE))}


def test_an_item_the_summary_already_says_is_left_out(api, repeated):
    body = api.post("/context", {"query": QUERY, "user_id": "u1", "budget_chars": 5000}).json()

    assert [item["statement"] for item in body["profile"]["items"]] == [RUNS]
    assert body["context"].splitlines()[:2] == [f"Summary: {SUMMARY}", f"* preference: {RUNS}"]


def test_a_memory_shows_only_what_is_not_said_yet_and_one_with_nothing_new_is_not_among_the_memories(api, repeated):
    body = api.post("/context", {"query": QUERY, "user_id": "u1", "budget_chars": 5000}).json()

    assert [m["id"] for m in body["memories"]] == [str(repeated["episode"])]
    assert body["context"].splitlines()[2].endswith("] She moved to Lisbon from Berlin in 2021.")


def test_the_budget_still_holds(api, repeated):
    for budget in (100, 150, 250):
        body = api.post("/context", {"query": QUERY, "user_id": "u1", "budget_chars": budget}).json()
        assert body["chars"] == len(body["context"]) <= budget
        assert max(said(body["context"]).values(), default=1) == 1


@pytest.mark.django_db(transaction=True)
def test_after_a_real_reflection_the_context_says_each_sentence_once(tenant, api, eager):
    ingest_entity(tenant, n=16)
    api.post("/reflect", {"entity_id": "alice"})

    body = api.post("/context", {"query": "Alice tea hiking Lisbon work", "user_id": "u1", "entity_id": "alice",
                                 "budget_chars": 50_000}).json()

    assert body["profile"]["summary"] and body["memories"]
    assert max(said(body["context"]).values()) == 1, body["context"]
