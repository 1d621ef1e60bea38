"""History-aware reads: `as_of` and `include_history` on POST /search and POST /context, GET /memories/{id}/history,
and what runs spent (`usage`) on POST /reflect and GET /runs."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.serializers.json import DjangoJSONEncoder

from consolidation.jobs.clustering import clustering_run_now
from consolidation.models import ConsolidationRun
from tests.factories import DAY, ingest, ingest_clusterable, ingest_entity, ingest_one
from zeromem.core.services import content_hash
from zeromem.models import Memory, MemorySource

pytestmark = pytest.mark.django_db(transaction=True)

OLD = "Max retries for the payment worker is 3."
NEW = "We bumped payment worker max retries to 8."
QUERY = "payment worker max retries"


@pytest.fixture
def superseded(tenant, now):
    """An attribute said 60 days ago, updated 5 days ago with an update cue, and a forced clustering run that
    supersedes the older statement: (old id, new id, the run)."""
    old = ingest_one(tenant, OLD, session="a", created_at=now - 60 * DAY)
    new = ingest_one(tenant, NEW, session="b", created_at=now - 5 * DAY)
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True).run
    assert run.superseded == 1 and Memory.objects.get(id=old).superseded_by_id == new
    return old, new, run


def found(api, **body):
    response = api.post("/search", {"query": QUERY, "user_id": "u1", **body})
    assert response.status_code == 200, response.content
    return {hit["memory"]["content"]: hit for hit in response.json()["results"]}


def iso(value):
    """A time as the API writes it (and reads it back)."""
    return DjangoJSONEncoder().default(value)


def test_a_supersede_ends_the_older_statement_at_the_newer_statements_date_not_the_run_time(superseded, now):
    old, new, run = superseded
    stale = Memory.objects.get(id=old)
    assert stale.valid_to == Memory.objects.get(id=new).created_at == now - 5 * DAY
    assert stale.archived_at >= run.started_at  # when the run noticed: a different thing


def test_as_of_before_the_supersede_answers_the_old_value_and_not_the_new(api, superseded, now):
    hits = found(api, as_of=iso(now - 30 * DAY))
    assert OLD in hits and NEW not in hits
    assert hits[OLD]["state"] == "archived" and hits[OLD]["valid_to"] == iso(now - 5 * DAY)


def test_as_of_after_the_supersede_answers_the_new_value_and_not_the_old(api, superseded, now):
    hits = found(api, as_of=iso(now - DAY))
    assert NEW in hits and OLD not in hits
    assert hits[NEW]["state"] == "raw" and hits[NEW]["valid_to"] is None


def test_without_as_of_search_answers_current_knowledge_only(api, superseded):
    hits = found(api)
    assert NEW in hits and OLD not in hits
    assert hits[NEW]["valid_from"] == hits[NEW]["memory"]["created_at"] and hits[NEW]["superseded_by"] is None


def test_as_of_before_anything_was_said_answers_nothing(api, superseded, now):
    assert found(api, as_of=iso(now - 90 * DAY)) == {}


def test_include_history_answers_both_statements_labelled(api, superseded, now):
    old, new, _ = superseded
    hits = found(api, include_history=True)
    assert {OLD, NEW} <= set(hits)
    assert (hits[OLD]["state"], hits[OLD]["superseded_by"], hits[OLD]["valid_to"]) == (
        "archived", str(new), iso(now - 5 * DAY))
    assert (hits[NEW]["state"], hits[NEW]["superseded_by"], hits[NEW]["valid_to"]) == ("raw", None, None)


def test_include_history_also_answers_consolidated_memories(api, tenant, three_days_ago):
    ids = ingest_clusterable(tenant, [f"The billing-api Redis cache hit its limit, day {i}." for i in range(3)],
                             created_at=three_days_ago)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True)
    body = {"query": "billing-api Redis cache limit", "user_id": "u1", "top_k": 20}
    current = api.post("/search", body).json()["results"]
    history = api.post("/search", {**body, "include_history": True}).json()["results"]
    assert {hit["memory"]["memory_type"] for hit in current} == {"semantic"}
    consolidated = [hit for hit in history if hit["state"] == "consolidated"]
    assert {hit["memory"]["id"] for hit in consolidated} == {str(i) for i in ids}
    assert all(hit["consolidated_at"] for hit in consolidated)


def test_as_of_must_carry_a_time_zone(api):
    response = api.post("/search", {"query": QUERY, "as_of": "2025-01-01T00:00:00"})
    assert response.status_code == 422
    assert api.post("/search", {"query": QUERY, "include_history": "yes"}).status_code == 422


def test_context_as_of_is_built_from_what_was_true_then_without_the_profile(api, superseded, now):
    body = {"query": QUERY, "user_id": "u1"}
    before = api.post("/context", {**body, "as_of": iso(now - 30 * DAY)}).json()
    after = api.post("/context", {**body, "as_of": iso(now - DAY)}).json()
    assert OLD in before["context"] and NEW not in before["context"] and before["profile"] is None
    assert NEW in after["context"] and OLD not in after["context"]
    assert before["memories"][0]["state"] == "archived" and before["memories"][0]["valid_to"] == iso(now - 5 * DAY)


def test_context_with_history_says_since_when_a_statement_no_longer_holds(api, superseded, now):
    answer = api.post("/context", {"query": QUERY, "user_id": "u1", "include_history": True}).json()
    assert f"{OLD} (superseded on {(now - 5 * DAY).date().isoformat()})" in answer["context"]
    assert NEW in answer["context"]
    assert {m["state"] for m in answer["memories"]} >= {"raw", "archived"}


def test_context_dates_each_memory_by_what_it_states_and_cuts_a_long_one_to_its_relevant_sentences(api, tenant,
                                                                                                     now):
    long_turn = ("Can you help me plan a birthday dinner for six people? I was thinking of Italian food. "
                 "By the way, I've been running the Thursday book club for 3 years now. "
                 + "Also the restaurant should have vegetarian options and be close to the station. " * 4)
    ingest_one(tenant, long_turn, session="a", created_at=now - 40 * DAY)
    ingest_one(tenant, "I've been running the Thursday book club for 4 years now.", session="b",
               created_at=now - 5 * DAY)
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    body = {"query": "How long have I been running the book club?", "user_id": "u1", "budget_chars": 600}
    lines = api.post("/context", body).json()["context"].splitlines()
    newer_line = f"- [{(now - 5 * DAY).date().isoformat()}] I've been running the Thursday book club for 4 years"
    assert lines[0].startswith(newer_line) and all(len(line) < 400 for line in lines)
    older_line = next(line for line in lines if "3 years" in line)
    assert older_line.startswith(f"- [{(now - 40 * DAY).date().isoformat()}]") and "(earlier;" in older_line
    assert "Italian food" not in older_line  # the sentences the question is not about are left out

    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True)
    context = api.post("/context", body).json()["context"]
    assert "for 4 years" in context and "3 years" not in context  # the stale claim retired, the rest still there


def test_context_prints_the_date_of_a_merged_memorys_newest_source_never_the_run_date(api, tenant, now):
    ingest_clusterable(tenant, [f"The billing-api Redis cache hit its limit, day {i}." for i in range(3)],
                       created_at=now - 9 * DAY)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True)
    semantic = Memory.objects.get(tenant=tenant, memory_type="semantic")
    assert semantic.valid_from == now - 9 * DAY
    context = api.post("/context", {"query": "billing-api Redis cache limit", "user_id": "u1"}).json()["context"]
    assert f"- [{(now - 9 * DAY).date().isoformat()}] " in context and now.date().isoformat() not in context


# --- GET /memories/{id}/history ---------------------------------------------------------------------------------

def test_the_history_of_a_semantic_memory_names_its_sources_and_the_clustering_run(api, tenant, three_days_ago):
    ids = ingest_clusterable(tenant, [f"The billing-api Redis cache hit its limit, day {i}." for i in range(3)],
                             created_at=three_days_ago)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True).run
    semantic = Memory.objects.get(tenant=tenant, memory_type="semantic")

    history = api.get(f"/memories/{semantic.id}/history").json()

    assert history["memory"]["id"] == str(semantic.id)
    assert {s["source_memory_id"] for s in history["sources"]} == {str(i) for i in ids}
    assert all(s["depth"] == 1 and s["cited_by"] == str(semantic.id) and s["state"] == "consolidated"
               for s in history["sources"])
    assert [(r["run_id"], r["kind"], r["status"], r["trigger"]) for r in history["runs"]] == [
        (str(run.id), "clustering", "succeeded", "cli")]
    merge = next(e for e in history["ledger"] if e["action"] == "merge")
    assert merge["run_id"] == str(run.id) and merge["actor"] == f"run:{run.id}" and merge["undone"] is False


def test_the_history_of_an_episode_names_what_it_was_folded_into(api, tenant, three_days_ago):
    ids = ingest_clusterable(tenant, [f"The billing-api Redis cache hit its limit, day {i}." for i in range(3)],
                             created_at=three_days_ago)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True).run
    semantic = Memory.objects.get(tenant=tenant, memory_type="semantic")

    history = api.get(f"/memories/{ids[0]}/history").json()

    assert [m["id"] for m in history["cited_by"]] == [str(semantic.id)] and history["sources"] == []
    assert {"transition.consolidate", "merge"} <= {e["action"] for e in history["ledger"]}
    assert [r["run_id"] for r in history["runs"]] == [str(run.id)]


def test_the_history_of_a_superseded_statement_names_its_successor_the_ledger_and_the_run(api, superseded, now):
    old, new, run = superseded

    history = api.get(f"/memories/{old}/history").json()

    assert history["superseded_by"] == {**history["superseded_by"], "id": str(new), "content": NEW, "state": "raw"}
    assert history["memory"]["valid_to"] == iso(now - 5 * DAY)
    assert [(r["relation_type"], r["direction"], r["memory"]["id"], r["reason"]) for r in history["relations"]] == [
        ("supersedes", "incoming", str(new), "a newer value of the same attribute, or its end")]
    actions = {e["action"]: e for e in history["ledger"]}
    assert {"supersede", "transition.supersede"} <= set(actions)
    assert actions["supersede"]["reason"] == "a newer value of the same attribute, or its end"
    assert actions["supersede"]["undoable"] is True
    assert [r["run_id"] for r in history["runs"]] == [str(run.id)]
    successor = api.get(f"/memories/{new}/history").json()
    assert successor["superseded_by"] is None and [m["id"] for m in successor["supersedes"]] == [str(old)]
    assert successor["relations"][0]["direction"] == "outgoing"


def test_the_history_shows_the_safety_nets_figures_of_a_run(api, tenant, three_days_ago):
    ids = ingest_clusterable(tenant, [f"The billing-api Redis cache hit its limit, day {i}." for i in range(3)],
                             created_at=three_days_ago)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True).run
    figures = {"canaries": 3, "recall_before": 1.0, "recall_after": 1.0, "max_drop": 0.05, "failed": False,
               "worse": []}
    ConsolidationRun.objects.filter(id=run.id).update(result={**run.result, "canaries": figures})

    history = api.get(f"/memories/{ids[0]}/history").json()

    assert history["runs"][0]["canaries"] == figures


def test_provenance_is_followed_through_every_level_and_keeps_deleted_sources(api, tenant, now):
    e1, e2, e3 = ingest(tenant, ["first episode", "second episode", "third episode"], created_at=now - 9 * DAY)
    lower, upper = (Memory.objects.create(tenant=tenant, user_id="u1", memory_type="semantic", content=text,
                                          content_hash=content_hash(text), created_at=now - 8 * DAY).id
                    for text in ("a summary of two episodes", "a summary of everything"))
    links = [(lower, e1), (lower, e2), (upper, lower), (upper, e3)]
    hashes = dict(Memory.objects.values_list("id", "content_hash"))
    MemorySource.objects.bulk_create([MemorySource(memory_id=m, source_id=s, source_memory_id=s,
                                                   source_content_hash=hashes[s]) for m, s in links])
    Memory.objects.filter(id=e2).delete()

    sources = api.get(f"/memories/{upper}/history").json()["sources"]

    assert [(s["source_memory_id"], s["cited_by"], s["depth"]) for s in sources] == sorted(
        [(str(lower), str(upper), 1), (str(e3), str(upper), 1), (str(e1), str(lower), 2),
         (str(e2), str(lower), 2)], key=lambda s: (s[2], s[1], s[0]))
    deleted = next(s for s in sources if s["source_memory_id"] == str(e2))
    assert deleted == {**deleted, "deleted": True, "content": None, "source_content_hash": hashes[e2]}


def test_the_history_of_an_unknown_or_other_tenants_memory_is_404(api, other_api, tenant):
    memory = ingest_one(tenant, "Tenant A only.")
    assert other_api.get(f"/memories/{memory}/history").status_code == 404
    assert api.get("/memories/00000000-0000-0000-0000-000000000000/history").status_code == 404


# --- usage ----------------------------------------------------------------------------------------------------

def test_runs_answer_what_they_spent(api, tenant):
    run = ConsolidationRun.objects.create(tenant=tenant, user_id="u1", kind="reflection", trigger="api",
                                          status="succeeded", llm_calls=3, prompt_tokens=1200,
                                          completion_tokens=340, cost_usd=Decimal("0.004512"))
    usage = {"llm_calls": 3, "prompt_tokens": 1200, "completion_tokens": 340, "cost_usd": 0.004512}
    assert api.get(f"/runs/{run.id}").json()["usage"] == usage
    assert api.get("/runs").json()["runs"][0]["usage"] == usage


@pytest.mark.usefixtures("hash_embedder")
def test_reflect_answers_what_the_run_spent(api, tenant, eager):
    ingest_entity(tenant, n=12)
    answer = api.post("/reflect", {"entity_id": "alice"}).json()
    run = ConsolidationRun.objects.get(id=answer["run_id"])
    assert answer["usage"] == {"llm_calls": run.llm_calls, "prompt_tokens": run.prompt_tokens,
                               "completion_tokens": run.completion_tokens, "cost_usd": float(run.cost_usd)}
