"""Whether a call's episodes stay findable once its passages stand for them: a passage packing several topics
is checked before it is written, against the near twins elsewhere in the user's memories (real embedder)."""

from __future__ import annotations

import uuid

from consolidation.jobs.findability import Findability, Planned, canary_query
from consolidation.jobs.safety import Probe, probe_recalls
from tests.factories import DAY, ingest, memory_input, reflect_entity
from zeromem.core.adapters.embeddings import embed_texts
from zeromem.core.domain.policy import SearchPolicy
from zeromem.core.domain.recall import document_frequency
from zeromem.models import Memory

ALLERGY = "Alice: I'm allergic to sesame, so please keep it out of team lunches."
OTHERS = ["Alice: I go climbing at the Boulder Lab every Tuesday evening after work.",
          "Alice: I prefer green tea in the morning, coffee keeps me awake at night.",
          "Alice: My sister Ana just moved to Lisbon for a new job at a bakery.",
          "Alice: We must keep the billing-api logs for 90 days for the audit."]
MIXED = " ".join([ALLERGY, *(text.removeprefix("Alice: ") for text in OTHERS)])


def twins(n):
    """Bob, another entity of the same user, says the allergy sentence again and again."""
    return [f"Bob: I'm allergic to sesame, so please keep it out of team lunches. (#{i})" for i in range(10, 10 + n)]


def planned(text, episode):
    return Planned(uuid.uuid4(), text, embed_texts([text])[0], frozenset([episode]))


def setup(tenant, n_twins):
    ingest(tenant, twins(n_twins), user="u1", entity_id="bob", session="b")
    (episode,) = ingest(tenant, [ALLERGY], user="u1", entity_id="alice", session="a")
    return episode, canary_query(ALLERGY, document_frequency([ALLERGY, *OTHERS]))


def test_an_episode_packed_among_other_topics_is_lost_behind_its_twins_and_found_in_a_passage_of_its_own(tenant):
    episode, query = setup(tenant, n_twins=24)  # 24 twins take 1,728 of the 2,000 characters
    probe = Findability(tenant_id=tenant.id, user_id="u1", search=SearchPolicy())
    assert probe.lost({episode: query}, gone=[episode], planned=[planned(MIXED, episode)]) == {episode}
    assert probe.lost({episode: query}, gone=[episode], planned=[planned(ALLERGY, episode)]) == set()


def test_a_mixed_passage_found_only_at_the_end_of_the_budget_counts_as_lost(tenant):
    episode, query = setup(tenant, n_twins=22)  # 1,606 characters of twins, then the 326 of the mixed passage
    probe = Findability(tenant_id=tenant.id, user_id="u1", search=SearchPolicy())
    mixed = planned(MIXED, episode)
    assert probe.lost({episode: query}, gone=[episode], planned=[mixed]) == set()
    assert probe.lost({episode: query}, gone=[episode], planned=[mixed], mixed=[episode]) == {episode}


def test_reflection_packs_stray_topics_together_but_keeps_the_statement_with_twins_findable(tenant, now):
    ingest(tenant, twins(24), user="u1", entity_id="bob", session="b", created_at=now - 40 * DAY)
    texts = [ALLERGY, *OTHERS, *(f"Alice: I read {book} on the train to work this month." for book in
                                 ("Dune", "Emma", "Ulysses", "Beloved", "Middlemarch", "Persuasion", "Solaris"))]
    ingest(tenant, [memory_input(text, user="u1", entity_id="alice", session=f"a{i}", created_at=now - (20 - i) * DAY)
                    for i, text in enumerate(texts)]
           + [memory_input("Current chat: hello", user="u1", session="now", created_at=now)])
    run = reflect_entity(tenant)
    assert run.status == "succeeded" and run.result["canaries"]["recall_after"] == 1.0
    episodes = list(Memory.objects.filter(tenant=tenant, entity_id="alice", state="consolidated"))
    frequency = document_frequency(e.content for e in episodes)
    probes = [Probe(q, frozenset([e.id]), "") for e in episodes for q in [canary_query(e.content, frequency)] if q]
    assert probe_recalls(tenant_id=tenant.id, user_id="u1", probes=probes, search=SearchPolicy()) == [1.0] * len(probes)
    passages = [m.content for m in Memory.objects.filter(tenant=tenant, entity_id="alice", state="raw",
                                                         tags__contains=["condensed"])]
    assert ALLERGY in passages  # alone: among other topics it would rank behind Bob's 24 twins
    assert len(passages) < 6  # six topics (the allergy, climbing, tea, the sister, the logs, the books) …
    assert any("climbing" in p and " read " in p for p in passages)  # … some of them packed into one passage
