"""A memory is parsed once in its life: after ingestion a worker stores the reader's parse of its claims (the request
never waits on the parser), clustering and search read it from the row, and a memory still without one is parsed by
its first clustering run, then stored."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from consolidation.jobs.clustering import clustering_run_now
from tests.factories import DAY, ingest_one
from zeromem.core import services
from zeromem.language import facts
from zeromem.language.default import FEATURES_VERSION
from zeromem.language.facts import facts_from_doc, facts_from_json, facts_json
from zeromem.language.pipeline import nlp
from zeromem.models import Memory

pytestmark = pytest.mark.django_db(transaction=True)


def stored(memory_id):
    return Memory.objects.get(id=memory_id).features


def test_the_worker_stores_the_parse_of_each_claim_once(tenant):
    claim = ingest_one(tenant, "My phone bill is $80.")
    chatter = ingest_one(tenant, "Hi!")
    assert stored(claim) is None  # ingestion does not wait on the parser
    assert services.memories_parse_pending(memory_ids=[claim, chatter]) == 2
    assert services.memories_parse_pending(memory_ids=[claim, chatter]) == 0  # once in its life
    features = stored(claim)["claims"]["My phone bill is $80."]
    assert features["v"] == FEATURES_VERSION
    assert features["facts"] == [[["bill", ["phone"]], "80", None, False, None, False]]
    assert stored(claim)["text"]["attributes"] == [["bill", ["phone"]]]  # the whole text, for search
    assert stored(chatter)["claims"] == {}  # parsed: no claim to keep, never parsed again
    assert stored(chatter)["text"]["v"] == FEATURES_VERSION


def test_clustering_reads_the_stored_parse_not_the_text(tenant, now):
    older = ingest_one(tenant, "My phone bill is $80.", session="a", created_at=now - 40 * DAY)
    newer = ingest_one(tenant, "My phone bill is $80.", session="b", created_at=now - 4 * DAY)
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    services.memories_parse_pending(memory_ids=[older, newer])
    # The same value twice is no update; a stored parse saying the older value was $70 is one.
    features = copy.deepcopy(stored(older))
    features["claims"]["My phone bill is $80."]["facts"][0][1] = "70"
    Memory.objects.filter(id=older).update(features=features)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True)
    assert Memory.objects.get(id=older).superseded_by_id is not None


def test_a_memory_stored_without_features_is_parsed_by_its_first_run_and_kept(tenant, now):
    older = ingest_one(tenant, "The nightly backup keeps 10 snapshots.", session="a", created_at=now - 40 * DAY)
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True)
    assert "The nightly backup keeps 10 snapshots." in stored(older)["claims"]


@pytest.mark.usefixtures("eager")
def test_a_stored_memory_is_parsed_by_a_worker_after_the_request_commits(api):
    response = api.post("/memories", {"memories": [{"user_id": "u1", "content": "Our office lease ends in 2027."}]})
    [memory_id] = response.json()["ids"]
    assert "Our office lease ends in 2027." in stored(memory_id)["claims"]


def kept_by_an_older_reader(memory_id):
    """The memory's stored parse as a reader of an earlier features version left it."""
    features = copy.deepcopy(stored(memory_id))
    features["v"] = FEATURES_VERSION - 1
    Memory.objects.filter(id=memory_id).update(features=features)


def test_every_stored_parse_carries_the_readers_features_version(tenant):
    claim = ingest_one(tenant, "My phone bill is $80.")
    services.memories_parse_pending(memory_ids=[claim])
    assert stored(claim)["v"] == FEATURES_VERSION


def test_reparse_after_an_upgrade_stores_a_parse_of_this_version_once(tenant):
    old, current = ingest_one(tenant, "My phone bill is $80."), ingest_one(tenant, "We moved to Denver in 2021.")
    never = ingest_one(tenant, "Our office lease ends in 2027.")
    services.memories_parse_pending(memory_ids=[old, current])
    kept_by_an_older_reader(old)
    assert services.memories_unparsed_count() == 2  # the older version's and the one never parsed
    assert services.memories_reparse(batch_size=1) == 2
    assert stored(old)["v"] == stored(never)["v"] == FEATURES_VERSION
    assert services.memories_reparse() == 0  # once a version


def test_the_reparse_command_reports_what_it_stored(tenant):
    import json
    from io import StringIO

    from django.core.management import call_command

    kept = ingest_one(tenant, "My phone bill is $80.")
    services.memories_parse_pending(memory_ids=[kept])
    kept_by_an_older_reader(kept)
    out = StringIO()
    call_command("reparse", "--json", stdout=out, stderr=StringIO())
    assert json.loads(out.getvalue().splitlines()[-1]) == {"pending": 1, "stored": 1}
    assert stored(kept)["v"] == FEATURES_VERSION


def test_a_clustering_run_parses_again_what_an_older_reader_kept_and_stores_it(tenant, now):
    older = ingest_one(tenant, "The nightly backup keeps 10 snapshots.", session="a", created_at=now - 40 * DAY)
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    services.memories_parse_pending(memory_ids=[older])
    kept_by_an_older_reader(older)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True)
    assert stored(older)["v"] == FEATURES_VERSION


def test_the_facts_of_each_sentence_are_stored_with_its_memory_as_its_parse_says(tenant):
    turn = ingest_one(tenant, "Maria: My sister adopted a puppy. It is so cute! Thanks, Gina!")
    services.memories_parse_pending(memory_ids=[turn])
    kept = stored(turn)["sentences"]
    assert set(kept) == {"My sister adopted a puppy.", "It is so cute!", "Thanks, Gina!"}
    for sentence, raw in kept.items():
        assert facts_from_json(raw) == facts_from_doc(nlp()(sentence))
    assert facts_from_json(kept["My sister adopted a puppy."]).takes_a_thing
    assert ("pronoun", "") in facts_from_json(kept["It is so cute!"]).mentions
    assert facts_from_json(kept["Thanks, Gina!"]).values == ()  # the addressee is no value


def test_a_clustering_run_parses_no_sentence_whose_facts_its_memory_stored(tenant, now, monkeypatch):
    texts = ["Jon: I opened my dance studio downtown last month. It has two rooms.",
             "Jon: My dance studio downtown now has three rooms and a small stage - any tips on flooring?",
             "Jon: The dance studio downtown hosts a showcase every spring; my students love it."]
    ids = [ingest_one(tenant, text, session=f"s{n}", created_at=now - (30 - n) * DAY) for n, text in enumerate(texts)]
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    services.memories_parse_pending(memory_ids=ids)
    facts._FACTS.clear()  # a fresh worker: what a run knows of these sentences comes from the rows
    parsed: list[str] = []
    original = facts.facts_from_doc

    def recorded(doc):
        parsed.append(doc.text)
        return original(doc)

    monkeypatch.setattr(facts, "facts_from_doc", recorded)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True)
    said = {sentence for memory_id in ids for sentence in stored(memory_id)["sentences"]}
    assert said and not said & set(parsed)
    # nor a clause a sentence was cut into to find its claims ("… a small stage", its question part left out)
    assert not [text for text in parsed if any(text in source for source in texts)]


@pytest.mark.usefixtures("eager")
def test_a_text_a_clustering_run_writes_is_parsed_once_after_the_run_commits(tenant, now):
    texts = ["Jon: I opened my dance studio downtown last month. It has two rooms.",
             "Jon: My dance studio downtown now has three rooms and a small stage."]
    for n, text in enumerate(texts):
        ingest_one(tenant, text, session="s1", created_at=now - 30 * DAY + n * DAY / 1440)  # a minute apart
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True)
    written = Memory.objects.filter(tenant=tenant, memory_type="semantic")
    assert written.exists()
    for memory in written:
        assert memory.features["v"] == FEATURES_VERSION and memory.features["sentences"]


def test_sentence_facts_stored_by_another_features_version_are_not_trusted():
    sentence = "Our greenhouse grows eleven kinds of basil."
    facts._FACTS.pop(sentence, None)
    stale = facts_json(replace(facts_from_doc(nlp()(sentence)), takes_a_thing=False, values=()))
    facts.remember([{"v": FEATURES_VERSION - 1, "sentences": {sentence: stale}}], FEATURES_VERSION)
    assert facts.facts_of(sentence) == facts_from_doc(nlp()(sentence))
    facts._FACTS.pop(sentence, None)
    facts.remember([{"v": FEATURES_VERSION, "sentences": {sentence: stale}}], FEATURES_VERSION)
    assert facts.facts_of(sentence) == facts_from_json(stale)  # this version's are read as stored
