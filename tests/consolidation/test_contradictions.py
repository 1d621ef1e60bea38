"""Contradiction rules (pure) and what the clustering job does with them (database)."""

from __future__ import annotations

import gc
from datetime import UTC, datetime, timedelta

import pytest

from consolidation.domain.contradictions import (
    COMPATIBLE,
    CONTRADICTS,
    SUPERSEDE,
    Statement,
    claim_pairs,
    claim_verdicts,
    claims_of,
    judge,
    memory_features,
    newer_first,
    remainder_of,
    updates_of,
)
from consolidation.jobs.clustering import clustering_run_now
from consolidation.models import LedgerEntry
from tests.factories import DAY, MINUTE, ingest_one
from zeromem.core.domain.policy import SearchPolicy
from zeromem.models import Memory, MemoryRelation, MemorySource

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def verdict(older, newer, gap=timedelta(days=30)):
    return judge(Statement.parse(older, T0), Statement.parse(newer, T0 + gap)).kind


@pytest.mark.parametrize("older,newer", [
    ("The nightly backup runs at 02:00.", "We moved the nightly backup to 03:30."),
    ("Our Redis has 2 GB of memory.", "Redis memory was raised to 4 GB."),
    ("I am vegetarian.", "I am not vegetarian anymore."),
    ("The release train leaves every 14 days.", "The release train leaves every 7 days."),
    ("My favourite editor is Vim.", "I switched my editor from Vim to Helix."),
])
def test_a_later_update_supersedes(older, newer):
    assert verdict(older, newer) == SUPERSEDE


@pytest.mark.parametrize("older,newer", [
    ("The deploy window is Tuesday.", "We also deploy hotfixes on Friday."),
    ("I drink coffee every morning.", "I drink tea in the afternoon."),
    ("Tom is my manager.", "Sarah manages the design team."),
    ("The staging database has 2 replicas.", "The analytics database has 5 replicas."),
    ("I went to Paris in May.", "I went to Paris in May."),
])
def test_compatible_statements_are_left_alone(older, newer):
    assert verdict(older, newer) == COMPATIBLE


def test_statements_made_at_the_same_time_are_flagged_not_superseded():
    assert verdict("The queue limit is 500.", "The queue limit is 800.", gap=timedelta(minutes=1)) == CONTRADICTS


def test_a_changed_name_without_an_update_cue_is_not_superseded():
    assert verdict("The on-call engineer this week is Priya Shah.",
                   "The on-call engineer this week is Omar Haddad.") != SUPERSEDE


def test_a_running_total_about_the_speaker_is_updated_without_a_cue_word():
    assert verdict("I've planted 12 tomato seedlings since spring.",
                   "I've planted 20 tomato seedlings since spring.") == SUPERSEDE
    assert verdict("We're at 4 wins and 1 loss in the chess club so far.",
                   "We're at 6 wins and 1 loss in the chess club so far.") == SUPERSEDE


def test_one_more_of_a_counted_thing_changes_the_running_total():
    assert verdict("I have a total of 12 vinyl records in my collection.",
                   "I just bought another vinyl record for my collection.") == SUPERSEDE
    assert verdict("I just bought a vinyl record at the flea market.",
                   "I just bought another vinyl record for my collection.") == COMPATIBLE  # no total to update


def test_a_changed_duration_of_two_different_activities_is_no_update():
    assert verdict("I've been learning the cello for three months now and finished 4 pieces.",
                   "I've been practising one cello piece for a month now, 20 minutes a day.") == COMPATIBLE


def test_a_count_of_another_thing_is_another_attribute():
    assert verdict("I've bought 4 bags of coffee beans this month.", "I've bought 6 mugs this month.") == COMPATIBLE


def test_a_rub_is_not_a_sauce():
    assert verdict("My go-to dry rub is Smoky Ember.", "My go-to barbecue sauce is now Red Hollow.") == COMPATIBLE


@pytest.mark.parametrize("older,newer", [
    ("checkout-api p99 latency 420 ms", "checkout-api p99 latency 980 ms"),
    ("The server room temperature measured 21 degrees.", "The server room temperature measured 24 degrees."),
    ("payments error rate 0.4% over 5 min", "payments error rate 6.1% over 5 min"),
])
def test_readings_of_a_moment_neither_supersede_nor_contradict(older, newer):
    assert verdict(older, newer) == COMPATIBLE
    assert verdict(older, newer, gap=timedelta(minutes=1)) == COMPATIBLE


def test_one_off_events_on_their_own_dates_are_not_updates():
    assert verdict("I ran 5 km along the river on 3/14.", "I ran 8 km along the river on 3/21.") == COMPATIBLE


def test_two_statements_of_one_session_are_never_flagged():
    older, newer = Statement.parse("The queue limit is 500.", T0), Statement.parse("The queue limit is 800.", T0)
    assert judge(older, newer, same_session=True).kind == COMPATIBLE
    assert judge(older, newer, same_session=False).kind == CONTRADICTS


@pytest.mark.parametrize("text,role", [
    ("Congratulations on finishing 4 projects since you started your painting classes!", "assistant"),
    ("Have I read 5 books this year?", "user"),
    ("| Month | Books read |\n| March | 5 |", "user"),
    ("Set `max_retries = 5` in the config.", "user"),
    ("Write me a 300 word story about 3 dragons.", "user"),
    ("I'm thinking of buying 2 more lamps for the hallway.", "user"),
])
def test_questions_markup_requests_plans_and_the_assistant_make_no_rules_claims(text, role):
    assert claims_of(0, text, T0, role=role, scope="u", rules=True) == []


def test_a_claim_is_a_clause_that_says_something_without_its_question_part():
    text = ("Hi Noor, nice to hear from you! I've been rowing on my erg for 5 months now - any tips on pacing? "
            "Can you suggest a playlist?")
    claims = claims_of(0, text, T0, role="user", scope="u", common_names=frozenset({"noor"}))
    assert [(c.sentence, c.text) for c in claims] == [(1, "I've been rowing on my erg for 5 months now")]


@pytest.mark.parametrize("text,role", [
    ("Congratulations on finishing 4 projects since you started your painting classes!", "assistant"),
    ("Have I read 5 books this year?", "user"),
    ("| Month | Books read |\n| March | 5 |", "user"),
    ("Set `max_retries = 5` in the config.", "user"),
    ("Oh wow, so cool!", "user"),
])
def test_questions_markup_chatter_and_the_assistant_make_no_claims(text, role):
    assert claims_of(0, text, T0, role=role, scope="u") == []


def test_what_brackets_set_apart_is_no_claim():
    text = "Rosa: We took 2 boats out today! [shares image: a photo of 3 kayaks on a lake]"
    assert [c.text for c in claims_of(0, text, T0, role="user", scope="u")] == ["We took 2 boats out today!"]


def test_a_long_turn_retires_only_its_replaced_sentence():
    older = ("Can you help me plan a weekend in Porto? I've visited 14 countries so far. "
             "My sister lives in Lisbon and loves the food there.")
    newer = "Peru was amazing, I've visited 15 countries so far!"
    claims = (claims_of(0, older, T0, role="user", scope="u", session="a", rules=True)
              + claims_of(1, newer, T0 + timedelta(days=90), role="user", scope="u", session="b", rules=True))
    updates = updates_of(claim_verdicts(claims, claim_pairs(claims)), [older, newer])
    assert not updates.superseded and list(updates.retired) == [0]
    [retired] = updates.retired[0]
    assert retired.text == "I've visited 14 countries so far." and retired.by.memory == 1
    assert remainder_of(older, [retired.sentence]) == (
        "Can you help me plan a weekend in Porto? My sister lives in Lisbon and loves the food there.")


def test_a_memory_whose_every_statement_is_replaced_is_superseded_whole():
    texts = ["Thanks! I've visited 14 countries so far.", "I've visited 15 countries so far."]
    claims = [c for n, t in enumerate(texts)
              for c in claims_of(n, t, T0 + timedelta(days=90 * n), role="user", scope="u", session=str(n),
                                 rules=True)]
    updates = updates_of(claim_verdicts(claims, claim_pairs(claims)), texts)
    assert list(updates.superseded) == [0] and not updates.retired


@pytest.mark.django_db(transaction=True)
def test_a_supersede_archives_the_older_statement_with_ledger_row_relation_and_event(tenant, events, now):
    old = ingest_one(tenant, "Max retries for the payment worker is 3.", session="a", created_at=now - 60 * DAY)
    new = ingest_one(tenant, "We bumped payment worker max retries to 8.", session="b", created_at=now - 5 * DAY)
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run
    stale = Memory.objects.get(id=old)
    assert run.superseded == 1
    assert stale.state == "archived" and stale.superseded_by_id == new and stale.valid_to is not None
    assert MemoryRelation.objects.filter(from_memory_id=new, to_memory_id=old, relation_type="supersedes").exists()
    entry = LedgerEntry.objects.get(action="supersede")
    assert entry.inputs["older"]["content"].startswith("Max retries")
    assert entry.reason == "a newer value of the same attribute, or its end"
    assert "memory.superseded" in [e["event"] for e in events]


@pytest.mark.django_db(transaction=True)
def test_a_reported_change_supersedes_what_it_ends_and_a_longer_turn_saying_more_does_not(tenant, now):
    """The change head reads a turn's vector only where the turn is the one sentence (its vector is the claim's)."""
    club = ingest_one(tenant, "I play in a Sunday chess club.", session="a", created_at=now - 60 * DAY)
    quit_ = ingest_one(tenant, "I quit the chess club last month.", session="b", created_at=now - 5 * DAY)
    # The turn's one claim is the thanks for the club; the quitting its vector carries is denied, and no claim.
    grateful = ingest_one(tenant, "I'm grateful for the chess club.", session="a", created_at=now - 60 * DAY,
                          user="u2")
    ingest_one(tenant, "Thanks! I really appreciate the chess club. I am gonna keep going and never quit. Bye!",
               session="b", created_at=now - 5 * DAY, user="u2")
    for user in ("u1", "u2"):
        ingest_one(tenant, "Good morning!", session="today", created_at=now, user=user)
        clustering_run_now(tenant_id=tenant.id, user_id=user, trigger="cli")
    assert Memory.objects.get(id=club).superseded_by_id == quit_
    assert Memory.objects.get(id=grateful).superseded_by_id is None


@pytest.mark.django_db(transaction=True)
def test_a_flagged_contradiction_leaves_both_active_with_a_ledger_row(tenant, now):
    first = ingest_one(tenant, "The queue limit is 500 messages.", session="a", created_at=now - 10 * DAY)
    second = ingest_one(tenant, "The queue limit is 800 messages.", session="a2",
                        created_at=now - 10 * DAY + 2 * MINUTE)  # said two minutes later: a contradiction
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    relation = MemoryRelation.objects.get(relation_type="contradicts")
    assert relation.flagged and {relation.from_memory_id, relation.to_memory_id} == {first, second}
    assert not Memory.objects.filter(id__in=[first, second], state="archived").exists()
    assert LedgerEntry.objects.filter(action="contradiction.flagged").count() == 1


@pytest.mark.django_db(transaction=True)
def test_still_true_statements_are_neither_superseded_nor_archived(tenant, now):
    ids = [ingest_one(tenant, "The staging cluster has 3 nodes.", session="a", created_at=now - 60 * DAY),
           ingest_one(tenant, "The production cluster has 12 nodes.", session="b", created_at=now - 5 * DAY)]
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    assert not Memory.objects.filter(id__in=ids, state="archived").exists()
    assert not MemoryRelation.objects.filter(relation_type="supersedes").exists()


@pytest.mark.django_db(transaction=True)
def test_a_replaced_claim_in_a_long_turn_retires_while_the_rest_stays_searchable(tenant, events, now):
    from consolidation.corrections.revert import run_revert
    from zeromem.core.selectors import MemoryFilter, memories_search

    older = ingest_one(tenant, "Can you help me plan a weekend in Porto? I've visited 14 countries so far. "
                               "My sister lives in Lisbon and loves the food there.", session="a",
                       created_at=now - 90 * DAY)
    newer = ingest_one(tenant, "Peru was amazing, I've visited 15 countries so far!", session="b",
                       created_at=now - 5 * DAY)
    Memory.objects.filter(id=older).update(activation=0.8, access_count=4)
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run
    assert run.claims_retired == 1
    turn = Memory.objects.get(id=older)
    claim = Memory.objects.get(metadata__source_type="claim")
    remainder = Memory.objects.get(metadata__source_type="remainder")
    assert turn.state == "consolidated"
    assert claim.content == "I've visited 14 countries so far." and claim.state == "archived"
    assert claim.superseded_by_id == newer and claim.valid_to == Memory.objects.get(id=newer).created_at
    assert "Lisbon" in remainder.content and "14 countries" not in remainder.content
    assert remainder.valid_from == turn.created_at
    assert (remainder.activation, remainder.access_count) == (0.8, 4)  # what stays active carries the reads
    assert claim.access_count == 0
    assert {m.source_memory_id for m in MemorySource.objects.filter(memory__in=[claim, remainder])} == {older}
    assert MemoryRelation.objects.filter(from_memory_id=newer, to_memory_id=claim.id, relation_type="supersedes")
    hits = [h.memory.id for h in memories_search(scope=MemoryFilter(tenant_id=tenant.id, user_id="u1"),
                                                 query="how many countries have I visited", top_k=5,
                                                 policy=SearchPolicy())]
    assert claim.id not in hits and newer in hits
    entry = LedgerEntry.objects.get(action="claim.retire")
    assert entry.undoable and entry.inputs["claims"][0]["sentence"] == claim.content
    assert "memory.superseded" in [e["event"] for e in events]

    assert run_revert(run_id=run.id, actor="test", reason="undo").refused == []
    assert Memory.objects.get(id=older).state == "raw"
    assert Memory.objects.get(id=remainder.id).state == "archived"
    assert Memory.objects.get(id=claim.id).archive_reason == "retract"


def countries_history(tenant, now, older_text):
    """A turn that says something else too and "I've visited 14 countries", then "15 countries" months later, and
    a current session: the older turn's id."""
    older = ingest_one(tenant, older_text, session="a", created_at=now - 90 * DAY)
    ingest_one(tenant, "Peru was amazing, I've visited 15 countries so far!", session="b", created_at=now - 5 * DAY)
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    return older


def country_fact(source):
    return {"category": "domain_fact", "subject": "u1", "statement": "u1 has visited 14 countries",
            "confidence": 0.8, "source_ids": [str(source)]}


@pytest.mark.django_db(transaction=True)
def test_a_retired_claim_takes_the_profile_items_built_from_it_along_and_an_undo_puts_them_back(tenant, now):
    from consolidation.corrections.revert import run_revert
    from profiles.models import MemoryProfile

    older = countries_history(tenant, now, "Can you help me plan a weekend in Porto? I've visited 14 countries so far.")
    item = country_fact(older)
    unrelated = {**item, "statement": "u1 plans a weekend in Porto"}
    profile = MemoryProfile.objects.create(tenant=tenant, user_id="u1", facts=[item, unrelated])

    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run
    profile.refresh_from_db()
    assert [i["statement"] for i in profile.facts] == ["u1 plans a weekend in Porto"]
    entry = LedgerEntry.objects.get(action="profile.update", run_id=run.id)
    assert entry.outputs["retired"] == ["u1 has visited 14 countries"]

    run_revert(run_id=run.id, actor="test", reason="undo")
    profile.refresh_from_db()
    assert [i["statement"] for i in profile.facts] == ["u1 has visited 14 countries", "u1 plans a weekend in Porto"]


@pytest.mark.django_db(transaction=True)
def test_rejecting_one_retired_claim_in_review_puts_its_profile_items_back(tenant, now):
    from consolidation.corrections.review import review_decide
    from profiles.models import MemoryProfile

    older = countries_history(tenant, now, "My sister lives in Lisbon with her two dogs. I've visited 14 countries "
                                           "so far.")
    profile = MemoryProfile.objects.create(tenant=tenant, user_id="u1", facts=[country_fact(older)])
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    retired = LedgerEntry.objects.get(action="claim.retire")
    profile.refresh_from_db()
    assert profile.facts == [] and retired.outputs["profile_entries"]

    review_decide(entry_id=retired.id, decision="reject", actor="admin:ops")
    profile.refresh_from_db()
    assert [i["statement"] for i in profile.facts] == ["u1 has visited 14 countries"]
    assert Memory.objects.get(id=older).state == "raw"


def test_the_claims_cache_adds_almost_nothing_for_the_garbage_collector_to_scan():
    """Kept as parsed objects (~15 a claim) the cache grew the objects every full collection scans by ~300,000 in
    a web process, and each collection paused a search 40-140 ms; pickled, an entry is one bytes object plus the
    cache's own link."""
    texts = [f"I have {n} cats and {n + 2} dogs now, and I moved to town {n} last spring." for n in range(300)]
    start = datetime(2024, 1, 1, tzinfo=UTC)
    dates = [start + timedelta(days=n) for n in range(len(texts))]
    newer_first(texts[:1], dates[:1], ["user"])
    gc.collect()
    before = len(gc.get_objects())
    order = newer_first(texts, dates, ["user"] * len(texts))
    del order
    gc.collect()
    assert len(gc.get_objects()) - before <= 2 * len(texts)


def test_a_cached_parse_orders_as_a_fresh_one():
    texts = ["I have 2 cats at home.", "I have 3 cats at home now."]
    dates = [datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 3, 1, tzinfo=UTC)]
    first = newer_first(texts, dates, ["user", "user"])  # parsed
    again = newer_first(texts, dates, ["user", "user"])  # from the cache
    assert first == again
    assert [o.index for o in again] == [1, 0] and again[1].earlier_than == 1


def test_results_with_a_stored_parse_are_ordered_as_parsed_ones_without_the_rules_parse(monkeypatch):
    """Search reads which clauses claim something from the reader's stored parse: the rules' parse of a result
    (~0.2 ms a memory the process has not seen) is spared, and the order is the one a fresh parse gives."""
    from zeromem.language.default import DefaultReader

    reader = DefaultReader()
    texts = ["Hi! My phone bill is $80 a month. Do you have tips?", "They raised my phone bill to $95.",
             "Thanks, that helps a lot.", "My phone bill is $95 again, as it was."]
    dates = [datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=40 * n) for n in range(len(texts))]
    roles = ["user", "user", "assistant", "user"]
    query, scores = "How much is my phone bill?", [0.9, 0.5, 0.45, 0.4]
    stored = memory_features(texts, roles, reader)
    parsed = newer_first(texts, dates, roles, reader=reader, query=query, scores=scores, recency=0.2)
    monkeypatch.setattr(Statement, "parse", classmethod(lambda cls, text, at: pytest.fail(f"parsed {text!r}")))
    read = newer_first(texts, dates, roles, reader=reader, query=query, features=stored, scores=scores,
                       recency=0.2)
    assert read == parsed and [o.index for o in read] != list(range(len(texts)))


def test_a_question_is_not_parsed_when_fewer_than_two_results_are_what_people_said():
    """Only two results of what people said can change places by what a question asks."""
    from zeromem.language.default import DefaultReader

    class Counting(DefaultReader):
        asked = 0

        def asks_now(self, question):
            Counting.asked += 1
            return super().asks_now(question)

    reader, dates = Counting(), [datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 5, 1, tzinfo=UTC)]
    texts = ["I have two kayaks.", "You could store the kayaks in the garage."]
    newer_first(texts, dates, ["user", "assistant"], reader=reader, query="How many kayaks do I own?",
                scores=[0.9, 0.8], recency=0.2)
    assert Counting.asked == 0
    newer_first(texts, dates, ["user", "user"], reader=reader, query="How many kayaks do I own?",
                scores=[0.9, 0.8], recency=0.2)
    assert Counting.asked == 1


def test_of_results_about_what_a_question_asks_now_the_newer_wins_a_near_tie():
    """"How many kayaks do I own?": the older count ranks a little higher by its words; the newer takes its place.
    A newer result about something else keeps its place, and a far better older result stays above."""
    from zeromem.language.default import DefaultReader

    texts = ["I own two kayaks and a paddleboard.", "My brother owns a sailboat now.", "I have three kayaks now."]
    dates = [datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 6, 1, tzinfo=UTC), datetime(2024, 5, 1, tzinfo=UTC)]
    query = "How many kayaks do I own?"
    reader = DefaultReader()

    def order(scores, recency):
        return [o.index for o in newer_first(texts, dates, ["user"] * 3, reader=reader, query=query,
                                             scores=scores, recency=recency)]

    assert order([0.9, 0.85, 0.8], recency=0.0) == [0, 1, 2]
    assert order([0.9, 0.85, 0.8], recency=0.2) == [2, 1, 0]  # the sailboat keeps its place
    assert order([0.9, 0.85, 0.5], recency=0.2) == [0, 1, 2]  # far less relevant: no newness makes up for it
    assert [o.index for o in newer_first(texts, dates, ["user"] * 3, reader=reader, query="When did I buy kayaks?",
                                         scores=[0.9, 0.85, 0.8], recency=0.2)] == [0, 1, 2]  # asks about then


def test_search_asks_the_stored_parse_of_a_whole_text_what_it_speaks_of():
    """A memory's text is parsed once in its life: what it names comes from its stored reading, not the text."""
    from zeromem.language.default import DefaultReader, read, reading_json

    texts = ["I own two kayaks and a paddleboard.", "I have three canoes now."]
    dates = [datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 5, 1, tzinfo=UTC)]
    as_if_kayaks = reading_json(read(["I have three kayaks now."])[0])
    ordered = newer_first(texts, dates, ["user"] * 2, reader=DefaultReader(), query="How many kayaks do I own?",
                          features=[None, {"claims": {}, "text": as_if_kayaks}], scores=[0.9, 0.8], recency=0.2)
    assert [o.index for o in ordered] == [1, 0]
    unread = newer_first(texts, dates, ["user"] * 2, reader=DefaultReader(), query="How many kayaks do I own?",
                         features=None, scores=[0.9, 0.8], recency=0.2)
    assert [o.index for o in unread] == [0, 1]


def test_a_stated_replacement_ranks_above_what_it_replaced_whatever_the_relevance_recency_adds():
    """Ranked again by relevance plus newness, a far more relevant older value would come first; that the newer
    replaces it (the same attribute, another value) decides."""
    from zeromem.language.default import DefaultReader

    texts = ["My phone bill is $80 a month.", "They raised my phone bill to $95."]
    dates = [datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 5, 1, tzinfo=UTC)]
    ordered = newer_first(texts, dates, ["user"] * 2, reader=DefaultReader(), query="How much is my phone bill?",
                          scores=[0.9, 0.4], recency=0.1)
    assert [o.index for o in ordered] == [1, 0] and ordered[1].earlier_than == 1
