"""The retrieval safety net (issue 9): canaries replayed before and after each clustering / reflection run; a
run that makes retrieval worse is undone through the ledger and fails with the reason."""

from __future__ import annotations

import pytest

from consolidation.domain.merging import Chunk
from consolidation.jobs import clustering as clustering_jobs
from consolidation.jobs import passages, reflection
from consolidation.jobs.clustering import clustering_run_now
from consolidation.jobs.reflection import reflection_run_now
from consolidation.models import Canary, LedgerEntry
from consolidation.selectors import ReflectionScope
from profiles.models import MemoryProfile
from tests.factories import REDIS_BILLING, ingest, ingest_entity, memory_input
from zeromem.core.access import access_flush
from zeromem.core.domain.policy import CanaryPolicy
from zeromem.core.domain.recall import budget_recall, distinctive_phrase, document_frequency, prefix_recall
from zeromem.models import Memory, MemoryRelation, MemorySource

pytestmark = [pytest.mark.operator, pytest.mark.usefixtures("hash_embedder")]
INCIDENTS = [
    "The billing-api Redis cache filled up during the Tuesday deploy; we raised maxmemory to 4gb.",
    "Billing-api Redis evictions spiked after the cache filled up, so the on-call flushed the session keys.",
    "Redis for billing-api ran out of memory again; the fix was an eviction policy of allkeys-lru.",
    "Postgres replica lag on the orders cluster hit 40 seconds while the nightly vacuum ran.",
    "Orders cluster Postgres replica lag came back during vacuum; we moved vacuum to 03:00 UTC.",
]


def incidents(tenant, texts, *, created_at, user="u1", session="s1"):
    """Specific to this file (not `ingest_clusterable`): each text gets the entities of the system it is about,
    Redis/billing-api or Postgres/orders, so the incidents make two clusters."""
    return ingest(tenant, [memory_input(t, user=user, session=session, created_at=created_at,
                                        entities=REDIS_BILLING if "Redis" in t else ("Postgres", "orders"))
                           for t in texts])


def with_neighbours(tenant, now):
    """Today's memories on the same systems (too recent to cluster): more text than the 2,000-character budget,
    so a merged memory that says nothing useful loses its place in it."""
    incidents(tenant, [f"Capacity review {i}: billing-api Redis memory, eviction policy and maxmemory looked fine; "
                       f"orders Postgres replica lag and the vacuum schedule were within limits." for i in range(20)],
              created_at=now, session="today")


def alice_neighbours(tenant, now):
    """Another entity's notes on the same topics: more than the budget holds, so lost text shows."""
    ingest(tenant, [f"Team note {i}: Alice's week: hiking, green tea, the Northwind billing pipeline, the nightly ETL, "
                    f"Sunday runs, violin lessons, PostgreSQL, Dune, staging deploys and pull requests."
                    for i in range(20)], entity_id="team", session="team", created_at=now)


def cluster(tenant):
    return clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run


def world(tenant):
    """Every memory's state, content and timestamps; every source link and relation of the tenant."""
    memories = {m.id: (m.state, m.content, m.consolidated_at, m.archived_at, m.reflected_at)
                for m in Memory.objects.filter(tenant=tenant)}
    links = set(MemorySource.objects.filter(memory__tenant=tenant).values_list("memory_id", "source_memory_id"))
    relations = set(MemoryRelation.objects.filter(tenant=tenant).values_list("from_memory_id", "to_memory_id",
                                                                              "relation_type"))
    return memories, links, relations


def bad_merge(members, **kwargs):
    """A merge that keeps none of what its members said (longer than any gap the neighbours leave in the
    budget, so it cannot slip in at the end of it)."""
    return [Chunk("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 4, list(range(len(members))))]


def test_budget_recall_takes_whole_memories_in_rank_order_within_the_budget():
    covers = {"a": {"a", "x"}, "big": {"big", "y"}, "c": {"c", "z"}}
    hits = [("a", 1500), ("big", 900), ("c", 400)]  # "big" does not fit after "a"; "c" still does
    assert budget_recall(hits, covers, {"x", "z"}) == 1.0
    assert budget_recall(hits, covers, {"y", "z"}) == 0.5
    assert budget_recall([], covers, {"x"}) == 0.0


def test_prefix_recall_reads_the_hits_in_rank_order_until_one_does_not_fit():
    covers = {"a": {"a", "x"}, "big": {"big", "y"}, "c": {"c", "z"}}
    hits = [("a", 1500), ("big", 900), ("c", 400)]
    assert prefix_recall(hits, covers, {"x", "z"}) == 0.5  # "c" would fit, but only after skipping "big"
    assert prefix_recall(hits, covers, {"z"}, budget=2800) == 1.0
    assert prefix_recall(hits, covers, {"x"}, budget=1000) == 0.0


def test_a_canary_phrase_is_the_rarest_run_of_words_and_small_talk_has_none():
    texts = ["Redis cache filled up on billing-api", "Redis cache was fine", "The Zanzibar migration slipped a week"]
    frequency = document_frequency(texts)
    assert "Zanzibar" in distinctive_phrase(texts[2], frequency, words=3)
    assert distinctive_phrase("Thanks, you too!", frequency) is None


@pytest.mark.django_db(transaction=True)
def test_a_bad_merge_is_undone_states_and_links_as_before_and_the_run_fails_with_the_reason(
        tenant, monkeypatch, events, now, three_days_ago):
    tenant.overrides = {"canaries": {"min_consolidated": 1}}  # a small run: guarded all the same here
    tenant.save()
    incidents(tenant, INCIDENTS[:3], created_at=three_days_ago)
    with_neighbours(tenant, now)
    assert cluster(tenant).status == "succeeded"  # a good run first
    base = Memory.objects.get(tenant=tenant, memory_type="semantic", state="raw")
    incidents(tenant, [INCIDENTS[1].replace("on-call", "night on-call"), *INCIDENTS[3:]], created_at=three_days_ago)
    before = world(tenant)
    events.clear()

    monkeypatch.setattr(clustering_jobs, "merge_cluster", bad_merge)
    run = cluster(tenant)

    assert run.status == "failed" and run.merged >= 3
    assert run.error.startswith("retrieval safety net: budget recall over")
    assert "were undone through the ledger" in run.error
    assert run.result["canaries"]["failed"] and run.result["canaries"]["recall_after"] < 0.95
    memories, links, relations = world(tenant)
    created = set(memories) - set(before[0])
    assert created and all(memories[m][0] == "archived" for m in created)  # retracted, kept for the audit
    assert {m: v for m, v in memories.items() if m not in created} == before[0]
    assert Memory.objects.get(id=base.id).content == before[0][base.id][1]  # the base's own text is back
    assert links == before[1] and relations == before[2]
    merges = LedgerEntry.objects.filter(run=run, action="merge")
    assert merges.filter(outputs__created=False).exists()  # one merge went into the first run's memory
    assert merges.count() >= 2 and not merges.filter(undone_by__isnull=True).exists()
    assert {e["event"] for e in events} >= {"memory.merged", "memory.unmerged"}


@pytest.mark.django_db(transaction=True)
def test_a_good_run_keeps_its_changes_and_the_canary_figures(tenant, now, three_days_ago):
    incidents(tenant, INCIDENTS, created_at=three_days_ago)
    with_neighbours(tenant, now)
    run = cluster(tenant)
    assert run.status == "succeeded" and run.merged >= 4
    canaries = run.result["canaries"]
    assert canaries["canaries"] >= 4 and not canaries["failed"]
    assert canaries["recall_before"] - canaries["recall_after"] <= canaries["max_drop"]
    assert "canary_s" in run.timings


@pytest.mark.django_db(transaction=True)
def test_an_operators_canary_alone_catches_a_bad_merge_and_canaries_record_no_access(
        tenant, monkeypatch, admin_client, now, three_days_ago):
    tenant.overrides = {"canaries": {"sample": 0}}  # only the canary configured in the admin
    tenant.save()
    ids = incidents(tenant, INCIDENTS, created_at=three_days_ago)
    with_neighbours(tenant, now)
    response = admin_client.post("/admin/consolidation/canary/add/", {
        "tenant": tenant.id, "user_id": "u1", "query": "Redis ran out of memory again, fix allkeys-lru",
        "expected_memory_ids": f'["{ids[2]}"]', "active": "on"})
    assert response.status_code == 302, response.content
    monkeypatch.setattr(clustering_jobs, "merge_cluster", bad_merge)
    run = cluster(tenant)
    assert run.status == "failed" and run.result["canaries"]["canaries"] == 1, (run.result, run.merged)
    assert f"canary {Canary.objects.get().id}" in run.error
    access_flush()
    assert not Memory.objects.filter(tenant=tenant, access_count__gt=0).exists()


@pytest.mark.django_db(transaction=True)
def test_the_admin_refuses_a_canary_expecting_memories_of_another_user(tenant, admin_client, three_days_ago):
    other = incidents(tenant, INCIDENTS[:1], user="u2", created_at=three_days_ago)
    response = admin_client.post("/admin/consolidation/canary/add/", {
        "tenant": tenant.id, "user_id": "u1", "query": "redis", "expected_memory_ids": f'["{other[0]}"]',
        "active": "on"})
    assert response.status_code == 200 and b"not memories of this user" in response.content
    assert not Canary.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_lossy_reflection_is_undone_episodes_back_profile_as_before(tenant, monkeypatch, events, now):
    ingest_entity(tenant, n=12, now=now)
    alice_neighbours(tenant, now)
    before = world(tenant)
    # Items and insights only, and a digest that retires every episode: what they said is no longer found.
    monkeypatch.setattr(passages, "condensed_passages", lambda rows, vectors, limit: [])
    monkeypatch.setattr(reflection, "said_alone", lambda rows, found: frozenset())
    run = reflection_run_now(scope=ReflectionScope(tenant.id, "u1", "alice", "global"), trigger="cli").run
    assert run.status == "failed" and run.error.startswith("retrieval safety net")
    memories, links, relations = world(tenant)
    created = set(memories) - set(before[0])
    assert created and all(memories[m][0] == "archived" for m in created)
    assert {m: v for m, v in memories.items() if m not in created} == before[0]
    assert links == before[1] and relations == before[2]
    profile = MemoryProfile.objects.get(tenant=tenant)
    assert (profile.preferences, profile.behaviors, profile.facts, profile.summary) == ([], [], [], "")
    assert LedgerEntry.objects.filter(action="unreflect").count() == run.result["calls_done"]
    assert not LedgerEntry.objects.filter(run=run, action__in=["reflection", "profile.update"],
                                          undone_by__isnull=True).exists()


@pytest.mark.django_db(transaction=True)
def test_the_same_reflection_with_condensed_passages_passes_the_net(tenant, now):
    ingest_entity(tenant, n=12, now=now)
    alice_neighbours(tenant, now)
    run = reflection_run_now(scope=ReflectionScope(tenant.id, "u1", "alice", "global"), trigger="cli").run
    assert run.status == "succeeded" and not run.result["canaries"]["failed"]
    assert Memory.objects.filter(tenant=tenant, tags__contains=["condensed"], state="raw").exists()


@pytest.mark.parametrize(("after", "failed"), [(0.95, False), (0.9499, True), (0.9, True), (1.0, False)])
def test_a_drop_of_exactly_the_maximum_passes_whatever_floating_point_says(after, failed):
    from consolidation.jobs.safety import Verdict

    verdict = Verdict(canaries=20, before=1.0, after=after, worse=[], max_drop=0.05)
    assert verdict.failed is failed  # 1.0 - 0.95 > 0.05 in floats


@pytest.mark.parametrize("consolidated,sampled", [(0, 0), (3, 0), (4, 4), (12, 12), (500, 20)])
def test_sampled_canaries_are_proportional_to_the_run_and_a_tiny_run_samples_none(consolidated, sampled):
    from consolidation.jobs.safety import sample_size

    assert sample_size(consolidated, CanaryPolicy(sample=20, min_consolidated=4)) == sampled
