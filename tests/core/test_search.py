"""POST /search and the hybrid selector, with the real embedder where meaning matters."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from consolidation.corrections.erasure import memories_erase
from tests.factories import ingest, memory_input
from zeromem.core import keycache
from zeromem.core.adapters.embeddings import embed_texts
from zeromem.core.domain.policy import SearchPolicy
from zeromem.core.selectors import (
    CARRY_MARGIN,
    MemoryFilter,
    Unwritten,
    _hits,
    memories_ranked,
    memories_search,
    pool_ranked,
    ranking_pool,
    texts_lexemes,
)
from zeromem.models import Memory, TermStat, UserSearchStats

SEARCH = SearchPolicy()  # the default ranking

CONVERSATION = [
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie: I finally signed up for the pottery class on Tuesdays, I made a bowl!",
    "Caroline: I'm researching adoption agencies because I want to give a kid a loving home.",
    "Melanie: We took the kids camping at the lake last weekend and roasted marshmallows.",
    "Caroline: My friend gave me a necklace from Sweden, my home country.",
    "Melanie: Running has been great for my mental health, I do 5 km every morning.",
]


def test_it_finds_a_paraphrase_by_meaning(tenant):
    ingest(tenant, CONVERSATION, session="s1")
    hits = memories_search(policy=SEARCH, scope=MemoryFilter(tenant_id=tenant.id, user_id="u1"),
                           query="Which hobby involves making ceramics?", top_k=2)
    assert "pottery" in hits[0].memory.content


def test_the_ranking_measures_read_is_the_searchs_ranking_without_the_newer_first_reordering(tenant):
    ingest(tenant, CONVERSATION, session="s1")
    scope = MemoryFilter(tenant_id=tenant.id, user_id="u1")
    for query in ("What did Caroline get from Sweden?", "pottery class", "camping at the lake with the kids"):
        hits = memories_search(policy=SEARCH, scope=scope, query=query, top_k=4, newer_first=False)
        assert memories_ranked(policy=SEARCH, scope=scope, query=query, top_k=4) == [
            (h.memory.id, len(h.memory.content)) for h in hits]


def test_a_text_not_written_yet_ranks_where_it_will_once_written_and_a_memory_gone_ranks_nowhere(tenant):
    ids = ingest(tenant, CONVERSATION, session="s1")
    scope = MemoryFilter(tenant_id=tenant.id, user_id="u1")
    text = "Melanie: The pottery class moved to Thursdays; my second bowl cracked in the kiln."
    query = "Melanie pottery class bowl"
    (lexemes,) = texts_lexemes([text])
    planned = Unwritten(uuid.uuid4(), len(text), embed_texts([text])[0], lexemes)
    as_if = pool_ranked(ranking_pool(policy=SEARCH, scope=scope, query=query), top_k=4, gone=[ids[1]], added=[planned])

    (written,) = ingest(tenant, [text], session="s2")
    Memory.objects.filter(id=ids[1]).update(state="consolidated")
    after = memories_ranked(policy=SEARCH, scope=scope, query=query, top_k=4)
    assert [written if i == planned.key else i for i, _ in as_if] == [i for i, _ in after]
    assert as_if[0][0] == planned.key and ids[1] not in {i for i, _ in after}  # it replaced the old pottery line


def test_a_texts_lexemes_are_those_its_search_vector_would_hold(tenant):
    (memory_id,) = ingest(tenant, ["The billing-api timed out twice, and the billing team rolled it back."])
    with connection.cursor() as cursor:
        cursor.execute("SELECT t.lexeme, array_length(t.positions, 1) FROM zeromem_memory m, "
                       "unnest(m.search_vector) t WHERE m.id = %s", [memory_id])
        stored = dict(cursor.fetchall())
    assert texts_lexemes([Memory.objects.get(id=memory_id).content, ""]) == [stored, {}]


def test_rare_words_outrank_common_ones(tenant):
    ingest(tenant, CONVERSATION, session="s1")
    hits = memories_search(policy=SEARCH, scope=MemoryFilter(tenant_id=tenant.id, user_id="u1"),
                           query="What did Caroline get from Sweden?", top_k=3)
    assert "Sweden" in hits[0].memory.content


def test_a_memory_stored_without_embedding_is_found_by_keyword(tenant):
    ids = ingest(tenant, ["The flux capacitor needs 1.21 gigawatts of power."], session="s1", embed=False)
    ingest(tenant, CONVERSATION, session="s1")
    assert Memory.objects.get(id=ids[0]).embedding is None
    hits = memories_search(policy=SEARCH, scope=MemoryFilter(tenant_id=tenant.id, user_id="u1"),
                           query="how much power does the flux capacitor need", top_k=3)
    assert hits[0].memory.id == ids[0] and hits[0].cosine is None


def test_a_failing_embedder_stores_the_memory_without_a_vector(tenant, monkeypatch):
    from zeromem.core.adapters import embeddings

    def broken(texts):
        raise RuntimeError("model crashed")

    monkeypatch.setattr(embeddings.get_embedder(), "embed_batch", broken)
    ids = ingest(tenant, ["Nothing is lost when the embedder fails."], session="s1")
    stored = Memory.objects.get(id=ids[0])
    assert stored.embedding is None and stored.content.startswith("Nothing is lost")


def test_search_returns_only_active_memories_unless_asked(tenant):
    from consolidation.ledger import memory_transition

    ids = ingest(tenant, CONVERSATION, session="s1")
    memory_transition(tenant_id=tenant.id, memory_ids=[ids[1]], operation="decay", actor="test")
    query = "pottery class bowl"
    active = memories_search(policy=SEARCH, scope=MemoryFilter(tenant_id=tenant.id), query=query)
    assert ids[1] not in [h.memory.id for h in active]
    everything = memories_search(policy=SEARCH, scope=MemoryFilter(tenant_id=tenant.id, states=None), query=query)
    assert everything[0].memory.id == ids[1]


def test_term_statistics_count_each_memory_once(tenant):
    ingest(tenant, ["pottery pottery pottery", "pottery class", "camping"], session="s1")
    ingest(tenant, ["pottery class"], session="s1")  # a duplicate: not counted again
    assert TermStat.objects.get(tenant=tenant, user_id="u1", term="potteri").doc_count == 2
    assert UserSearchStats.objects.get(tenant=tenant, user_id="u1").doc_count == 3


def test_counters_fold_back_to_one_row_a_term_and_drop_terms_no_memory_uses(tenant,
                                                                          django_capture_on_commit_callbacks):
    # Each write appends delta rows; the fold after its commit sums them (zeromem.core.services, BM25 statistics).
    with django_capture_on_commit_callbacks(execute=True):
        ids = ingest(tenant, ["pottery class", "pottery wheel"], session="s1")
    with django_capture_on_commit_callbacks(execute=True):
        ingest(tenant, ["pottery glaze"], session="s1")
    with django_capture_on_commit_callbacks(execute=True):
        memories_erase(tenant_id=tenant.id, memory_ids=[ids[1]], actor="t", reason="test")
    counters = TermStat.objects.filter(tenant=tenant, user_id="u1")
    assert sorted(counters.values_list("term", "doc_count")) == [("class", 1), ("glaze", 1), ("potteri", 2)]
    totals = UserSearchStats.objects.filter(tenant=tenant, user_id="u1")
    assert list(totals.values_list("doc_count", flat=True)) == [2]


def test_search_endpoint_answers_ranked_results(api):
    api.post("/memories", {"memories": [{"content": t, "user_id": "u1"} for t in CONVERSATION]})
    response = api.post("/search", {"query": "camping trip with the kids", "user_id": "u1", "top_k": 2})
    assert response.status_code == 200
    results = response.json()["results"]
    assert len(results) == 2 and "camping" in results[0]["memory"]["content"]
    assert results[0]["score"] >= results[1]["score"]


@pytest.mark.parametrize("body", [{}, {"query": ""}, {"query": "x", "top_k": 0}, {"query": "x", "top_k": 101},
                                  {"query": "x", "states": ["deleted"]}, {"query": "x", "unknown": 1}])
def test_bad_search_input_is_422(api, body):
    assert api.post("/search", body).status_code == 422


def test_a_tenant_wide_search_returns_no_hit_that_shares_nothing_with_the_query(tenant):
    words_only = SearchPolicy(vector_weight=0.0)  # every vector-pool hit without a word scores 0
    ingest(tenant, CONVERSATION, session="s1", user="u1")
    ingest(tenant, CONVERSATION, session="s1", user="u2")

    hits = memories_search(policy=words_only, scope=MemoryFilter(tenant_id=tenant.id), query="Which pottery class?",
                           top_k=10, min_score=words_only.min_score)

    assert len(hits) == 2 and all("pottery" in hit.memory.content and hit.score > 0 for hit in hits)


SEEDLINGS_THEN = "I've planted 12 tomato seedlings in the garden since spring."
SEEDLINGS_NOW = "I've planted 20 tomato seedlings in the garden since spring."
UNRELATED_NEWER = "I bought a new garden hose and a watering can yesterday."


def test_of_two_statements_of_one_attribute_the_newer_ranks_first_and_the_older_is_marked_earlier(api, tenant, now):
    from tests.factories import DAY

    ingest(tenant, SEEDLINGS_THEN, session="spring", created_at=now - 90 * DAY)
    newer = ingest(tenant, SEEDLINGS_NOW, session="summer", created_at=now - 20 * DAY)[0]
    ingest(tenant, CONVERSATION, session="s1", created_at=now - 30 * DAY)
    results = api.post("/search", {"query": "How many tomato seedlings have I planted in the garden?",
                                   "user_id": "u1", "top_k": 5}).json()["results"]
    texts = [r["memory"]["content"] for r in results]
    assert texts.index(SEEDLINGS_NOW) < texts.index(SEEDLINGS_THEN)
    older = results[texts.index(SEEDLINGS_THEN)]
    assert older["earlier_than"] == str(newer) and results[texts.index(SEEDLINGS_NOW)]["earlier_than"] is None


def test_a_newer_unrelated_statement_never_outranks_an_older_relevant_one(tenant, now):
    from tests.factories import DAY

    ingest(tenant, SEEDLINGS_THEN, session="spring", created_at=now - 90 * DAY)
    ingest(tenant, UNRELATED_NEWER, session="summer", created_at=now - DAY)
    hits = memories_search(policy=SEARCH, scope=MemoryFilter(tenant_id=tenant.id, user_id="u1"),
                           query="How many tomato seedlings have I planted?", top_k=2)
    assert [h.memory.content for h in hits] == [SEEDLINGS_THEN, UNRELATED_NEWER]
    assert all(h.earlier_than is None for h in hits)


def test_an_assistant_turn_ranks_below_the_users_own_statement(tenant):
    user_turn = memory_input("My sister's bakery sells 40 sourdough loaves a day.", role="user")
    assistant_turn = memory_input("Sourdough loaves at a bakery: a sourdough starter needs feeding daily, and "
                                  "loaves need a long proof.", role="assistant")
    ingest(tenant, [assistant_turn, user_turn])
    query = "How many sourdough loaves does the bakery sell?"
    scope = MemoryFilter(tenant_id=tenant.id, user_id="u1")
    alike = {h.memory.role: h.score for h in memories_search(policy=SearchPolicy(assistant_weight=1.0), scope=scope,
                                                               query=query, top_k=2)}
    weighted = {h.memory.role: h.score for h in memories_search(policy=SearchPolicy(assistant_weight=0.7),
                                                                  scope=scope, query=query, top_k=2)}
    assert weighted["assistant"] == pytest.approx(0.7 * alike["assistant"])
    assert weighted["user"] == pytest.approx(alike["user"])


def test_the_lexical_pool_is_picked_by_the_rarest_lexemes_within_twenty_pools_of_matches():
    from zeromem.core.domain.ranking import CorpusStats
    from zeromem.core.selectors import QueryTerms

    stats = CorpusStats(doc_count=100_000, avg_length=10.0,
                        doc_freqs={"deploy": 9_000, "server": 2_500, "ramen": 40, "tokyo": 1_400})
    terms = QueryTerms(["deploy", "ramen", "server", "tokyo", "unseen"], stats)
    assert terms.pooled(200) == ["unseen", "ramen", "tokyo", "server"]  # 3,940 of 4,000; deploy would pass it
    assert terms.pooled(100) == ["unseen", "ramen", "tokyo"]
    assert terms.pooled(1_000) == ["unseen", "ramen", "tokyo", "server", "deploy"]


def test_post_search_ranks_by_the_tenants_own_search_policy(api, tenant):
    ingest(tenant, CONVERSATION, session="s1")
    body = {"query": "Which pottery class?", "user_id": "u1"}
    assert api.post("/search", body).json()["results"]
    tenant.overrides = {"search": {"min_score": 0.99}}  # a floor no hit reaches
    tenant.save()
    keycache.clear()  # the key (and its tenant) is kept a few seconds per process
    assert api.post("/search", body).json()["results"] == []


def test_a_hit_carries_every_field_as_the_orm_reads_it(tenant):
    """The pool reads timestamps as text and only the hits are made Memory objects: each field of a hit, times to
    the microsecond and empty ones included, is what the ORM reads from the row."""
    ingest(tenant, CONVERSATION, session="s1")
    kept = Memory.objects.get(content=CONVERSATION[1])
    Memory.objects.filter(id=kept.id).update(valid_to=None, consolidated_at=kept.created_at.replace(microsecond=123456))
    [hit] = [h for h in memories_search(policy=SEARCH, scope=MemoryFilter(tenant_id=tenant.id, user_id="u1"),
                                        query="pottery class bowl") if h.memory.id == kept.id]
    stored = Memory.objects.get(id=kept.id)
    for field in Memory._meta.concrete_fields:
        if field.attname != "embedding":
            assert getattr(hit.memory, field.attname) == getattr(stored, field.attname), field.attname
    assert hit.memory.consolidated_at.microsecond == 123456 and hit.memory.valid_to is None


def test_a_hit_the_pool_statement_did_not_read_whole_is_read_by_id_and_is_the_same_hit(tenant):
    """The pool statement reads every field only of the first candidates by PostgreSQL's reckoning of the ranking
    (selectors.Carry), a margin past top_k; a hit it did not read whole is read by id in one more statement."""
    ingest(tenant, CONVERSATION, session="s1")
    scope = MemoryFilter(tenant_id=tenant.id, user_id="u1")
    with CaptureQueriesContext(connection) as margin:
        carried = _hits(scope, "Melanie pottery kids", policy=SEARCH, top_k=4, min_score=None, carried=4 + CARRY_MARGIN)
    with CaptureQueriesContext(connection) as none:
        read_by_id = _hits(scope, "Melanie pottery kids", policy=SEARCH, top_k=4, min_score=None, carried=0)
    assert len(margin) == 2 and len(none) == 3  # terms and pools; then the hits by id
    assert len(carried) == 4
    assert [(h.memory.id, h.score, h.bm25, h.cosine, h.memory.has_vector) for h in carried] == [
        (h.memory.id, h.score, h.bm25, h.cosine, h.memory.has_vector) for h in read_by_id]
    for a, b in zip(carried, read_by_id, strict=True):
        for field in Memory._meta.concrete_fields:
            if field.attname != "embedding":
                assert getattr(a.memory, field.attname) == getattr(b.memory, field.attname), field.attname
