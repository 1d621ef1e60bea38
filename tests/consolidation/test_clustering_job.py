"""The clustering job against the real database: what it selects, what it writes, and its claims."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from django.db import transaction

from consolidation.jobs import clustering as clustering_job
from consolidation.jobs.clustering import _write_merges, clustering_plan, clustering_run_now
from consolidation.ledger import memory_transition
from consolidation.models import ConsolidationRun, LedgerEntry
from consolidation.runs import LeaseLost, run_fence, run_request, run_start
from tests.conftest import subprocess_database_url
from tests.factories import DAY, HOUR, MINUTE, ingest, ingest_clusterable, policy_set
from zeromem.core.domain.policy import policy_with_overrides
from zeromem.models import Memory, MemorySource, Tenant

pytestmark = pytest.mark.usefixtures("hash_embedder")


def cluster_members(tenant):
    """semantic id -> set of source ids."""
    result = {}
    for link in MemorySource.objects.filter(memory__tenant=tenant):
        result.setdefault(link.memory_id, set()).add(link.source_memory_id)
    return result


HIKE = ["We hiked the ridge trail above the lake for six hours.", "The view from the summit was unreal."]


def two_sessions_at_cosine_045(tenant, three_days_ago):
    """The two HIKE episodes in one session and a third in another, at cosine 0.45 to each other: below the first
    level's floor (0.55), above the session floor (0.3); the third as near to the first, but said in another
    session. Returns (the two ids, the third's id)."""
    same = ingest(tenant, HIKE, entities=(), session="s1", created_at=three_days_ago)
    other = ingest(tenant, "Our quarterly planning moved to the big meeting room.", entities=(), session="s2",
                   created_at=three_days_ago)[0]
    ingest(tenant, "Lunch was great.", entities=(), session="s3", created_at=three_days_ago + HOUR)
    first, second, third = np.zeros(384), np.zeros(384), np.zeros(384)
    first[0], second[0], second[1], third[0], third[2] = 1.0, 0.45, np.sqrt(1 - 0.45 ** 2), 0.45, np.sqrt(1 - 0.45 ** 2)
    for memory_id, vector in zip([*same, other], [first, second, third], strict=True):
        Memory.objects.filter(id=memory_id).update(embedding=vector.tolist())
    return same, other


def assert_nothing_lost_or_duplicated(tenant):
    consolidated = set(Memory.objects.filter(tenant=tenant, state="consolidated").values_list("id", flat=True))
    cited = [s for sources in cluster_members(tenant).values() for s in sources]
    assert consolidated == set(cited), "every consolidated memory is cited, and only those"
    assert len(cited) == len(set(cited)), "no memory is folded into two semantic memories"


@pytest.mark.django_db(transaction=True)
def test_a_cluster_becomes_one_semantic_memory_citing_every_member(tenant, events, three_days_ago):
    ids = ingest_clusterable(tenant, [f"The billing-api Redis cache hit its limit, day {i}." for i in range(3)],
                             created_at=three_days_ago)
    ingest(tenant, "Lunch was great.", entities=(), session="s2", created_at=three_days_ago + HOUR)
    outcome = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    assert outcome.run.status == "succeeded" and not outcome.joined
    assert (outcome.run.clusters, outcome.run.merged, outcome.run.created) == (1, 3, 1)
    semantic = Memory.objects.get(tenant=tenant, memory_type="semantic")
    assert set(cluster_members(tenant)[semantic.id]) == set(ids)
    assert semantic.metadata == {"source_type": "consolidated", "source_count": 3}
    assert semantic.embedding is not None and semantic.state == "raw"
    assert set(Memory.objects.filter(id__in=ids).values_list("state", flat=True)) == {"consolidated"}
    assert Memory.objects.get(content="Lunch was great.").state == "raw"  # the current session stays raw
    assert LedgerEntry.objects.filter(action="merge", run=outcome.run).count() == 1
    assert [e["event"] for e in events] == ["memory.semantic.updated", "memory.merged",
                                            "consolidation.run_completed"]


@pytest.mark.django_db(transaction=True)
def test_a_merge_is_as_accessible_as_its_most_accessed_source_and_its_event_says_what_it_is(tenant, events,
                                                                                             three_days_ago):
    ids = ingest_clusterable(tenant, [f"The billing-api Redis cache hit its limit, day {i}." for i in range(3)],
                             created_at=three_days_ago, window="outage", tags=["sev1"])
    for memory_id, activation, reads in zip(ids, (0.92, 0.4, 0.3), (5, 2, 0), strict=True):
        Memory.objects.filter(id=memory_id).update(activation=activation, access_count=reads, importance=0.9)
    ingest(tenant, "Lunch was great.", entities=(), session="s2", created_at=three_days_ago + HOUR)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    semantic = Memory.objects.get(tenant=tenant, memory_type="semantic")
    assert (semantic.activation, semantic.access_count) == (0.92, 7)
    data = next(e["data"] for e in events if e["event"] == "memory.semantic.updated")
    assert data["id"] == str(semantic.id) and data["importance"] == 0.9 and data["window"] == "outage"
    assert data["tags"] == ["sev1"] and data["source_count"] == 3 and data["valid_to"] is None
    assert data["stability"] == semantic.stability_score and data["valid_from"] == semantic.valid_from.isoformat()
    documented = documented_event("memory.semantic.updated")
    real = next(e for e in events if e["event"] == "memory.semantic.updated")
    assert set(real) == set(documented) and set(real["data"]) == set(documented["data"])


def documented_event(name: str) -> dict:
    """The example payload docs/API.md shows under `### <name>`."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "API.md").read_text()
    section = text[text.index(f"### {name}\n"):]
    return json.loads(section[section.index("```json\n") + 8:section.index("\n```", section.index("```json"))])


@pytest.mark.django_db(transaction=True)
def test_it_never_touches_the_current_session_unless_forced(tenant, three_days_ago):
    ingest_clusterable(tenant, "Old note about billing-api and Redis.", created_at=three_days_ago - DAY)
    current = ingest_clusterable(tenant, [f"Current session billing-api Redis {i}." for i in range(2)],
                                 session="s9", created_at=three_days_ago)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run
    assert run.reviewed == 1 and run.clusters == 0
    assert set(Memory.objects.filter(id__in=current).values_list("state", flat=True)) == {"raw"}
    forced = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True).run
    assert forced.reviewed == 3 and forced.merged == 3


@pytest.mark.django_db(transaction=True)
def test_it_never_touches_memories_inside_the_recency_window_unless_forced(tenant, now, three_days_ago):
    tenant.overrides = {"recency_window_hours": 24}
    tenant.save()
    ingest_clusterable(tenant, "Old note about billing-api and Redis.", created_at=now - 30 * HOUR)
    recent = ingest_clusterable(tenant, "Fresh billing-api Redis note.", session="s2", created_at=now - 20 * HOUR)[0]
    ingest(tenant, "Current session.", entities=(), session="s3", created_at=now - HOUR)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run
    assert run.reviewed == 1 and Memory.objects.get(id=recent).state == "raw"
    tenant.overrides = {"recency_window_hours": 12}
    tenant.save()
    assert clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run.merged == 2


@pytest.mark.django_db(transaction=True)
def test_new_episodes_fold_into_the_existing_semantic_memory(tenant, three_days_ago):
    ingest_clusterable(tenant, [f"billing-api Redis eviction storm number {i}." for i in range(2)],
                       created_at=three_days_ago)
    ingest(tenant, "Current session.", entities=(), session="s1b", created_at=three_days_ago + MINUTE)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    semantic = Memory.objects.get(tenant=tenant, memory_type="semantic")
    late = ingest_clusterable(tenant, "billing-api Redis eviction storm again.", session="s2",
                              created_at=three_days_ago)[0]
    ingest(tenant, "Unrelated newer thing.", entities=(), session="s3", created_at=three_days_ago + DAY)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run
    assert run.created == 0 and run.merged == 1
    assert Memory.objects.filter(tenant=tenant, memory_type="semantic").count() == 1
    semantic.refresh_from_db()
    assert late in cluster_members(tenant)[semantic.id] and semantic.metadata["source_count"] == 3
    assert_nothing_lost_or_duplicated(tenant)


@pytest.mark.django_db(transaction=True)
def test_no_cluster_spans_namespaces_windows_or_entity_ids(tenant, three_days_ago):
    for namespace in ("a", "b"):
        ingest_clusterable(tenant, f"billing-api Redis in {namespace}.", namespace=namespace,
                           created_at=three_days_ago)
    for window in ("w1", "w2"):
        ingest_clusterable(tenant, f"billing-api Redis during {window}.", window=window, created_at=three_days_ago)
    for entity in ("alice", "bob"):
        ingest_clusterable(tenant, f"billing-api Redis for {entity}.", entity_id=entity, created_at=three_days_ago)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True).run
    assert run.clusters == 0 and not Memory.objects.filter(memory_type="semantic").exists()


@pytest.mark.django_db(transaction=True)
def test_a_memory_without_an_embedding_still_clusters_by_entities(tenant, three_days_ago):
    ids = ingest_clusterable(tenant, [f"Postgres pgvector upgrade step {i}" for i in range(2)], embed=False,
                             entities=("Postgres", "pgvector"), created_at=three_days_ago)
    assert not Memory.objects.filter(id__in=ids, embedding__isnull=False).exists()
    assert clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True).run.merged == 2


@pytest.mark.django_db(transaction=True)
def test_an_expired_lease_is_taken_over_and_a_live_one_is_not(tenant, now):
    run, _ = run_request(tenant_id=tenant.id, user_id="u1", kind="clustering", trigger="beat")
    assert run_start(run_id=run.id, worker="w1", now=now) is not None
    assert run_start(run_id=run.id, worker="w2", now=now) is None  # w1's lease is live
    assert run_start(run_id=run.id, worker="w2", now=now + 10 * MINUTE).worker == "w2"  # w1's lease ran out
    with pytest.raises(LeaseLost), transaction.atomic():
        run_fence(run_id=run.id, worker="w1")  # w1 lost it: its writes abort


@pytest.mark.django_db(transaction=True)
def test_a_redelivered_task_finds_its_run_done_and_returns(tenant, three_days_ago):
    from consolidation.tasks import clustering_run_task
    from consolidation.triggers import clustering_trigger

    ingest_clusterable(tenant, [f"billing-api Redis outage {i}." for i in range(2)], created_at=three_days_ago)
    ingest(tenant, "The current session.", entities=(), session="s2", created_at=three_days_ago + HOUR)
    with transaction.atomic():
        run_id, created = clustering_trigger(tenant_id=tenant.id, user_id="u1", trigger="beat")
    assert created
    assert clustering_run_task.run(run_id=str(run_id)) == "succeeded"
    assert clustering_run_task.run(run_id=str(run_id)) == "already finished"
    assert Memory.objects.filter(memory_type="semantic").count() == 1


@pytest.mark.django_db(transaction=True)
def test_clustering_and_reflection_for_one_user_run_one_after_the_other(tenant):
    clustering, created = run_request(tenant_id=tenant.id, user_id="u1", kind="clustering", trigger="beat")
    blocked, created_second = run_request(tenant_id=tenant.id, user_id="u1", kind="reflection", trigger="api")
    assert created and not created_second and blocked.id == clustering.id
    other_user, created_other = run_request(tenant_id=tenant.id, user_id="u2", kind="reflection", trigger="api")
    assert created_other
    ConsolidationRun.objects.filter(id=clustering.id).update(status="succeeded")
    reflection, created_third = run_request(tenant_id=tenant.id, user_id="u1", kind="reflection", trigger="api")
    assert created_third and reflection.kind == "reflection"


@pytest.mark.django_db(transaction=True)
def test_no_event_for_a_rolled_back_transaction(tenant, events):
    from zeromem.core.events import event_emit

    with pytest.raises(RuntimeError), transaction.atomic():
        event_emit(event="memory.merged", tenant_id=tenant.id, data={})
        raise RuntimeError("roll back")
    with transaction.atomic():
        event_emit(event="memory.merged", tenant_id=tenant.id, data={"kept": True})
    assert [e["data"] for e in events] == [{"kept": True}]


@pytest.mark.django_db(transaction=True)
def test_two_processes_clustering_one_user_lose_and_duplicate_nothing(tenant, three_days_ago):
    """Two `consolidate` processes at once for one user: the second joins the run the first started. A run takes
    ~0.2 s, so the second process (~2 s to start) sometimes arrives after it ended (then it finds nothing left to
    do, which must lose and duplicate nothing too): up to three users are tried until the two overlap."""
    env = {**os.environ, "DATABASE_URL": subprocess_database_url(), "ZEROMEMORY_EMBEDDING_MODEL": "builtin:hash"}
    policy_set(tenant, {"clustering": {"cosine_floor": 0.99, "fold_floor": 0.0}})  # entities only
    for user in ("u1", "u2", "u3"):
        for topic in range(15):
            ingest_clusterable(tenant, [f"Topic {topic}: note {i}." for i in range(3)], user=user,
                               entities=(f"svc-{topic}", f"db-{topic}"), created_at=three_days_ago)
        command = [sys.executable, "manage.py", "consolidate", "--tenant", tenant.name, "--user", user, "--force"]
        processes = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                     for _ in range(2)]
        outputs = [p.communicate(timeout=240)[0].decode() for p in processes]
        assert all(p.returncode == 0 for p in processes), outputs
        mine = Memory.objects.filter(tenant=tenant, user_id=user)
        assert mine.filter(memory_type="semantic").count() == 15
        assert mine.filter(state="consolidated").count() == 45
        assert_nothing_lost_or_duplicated(tenant)
        if any("(joined)" in output for output in outputs):
            assert ConsolidationRun.objects.filter(tenant=tenant, user_id=user, kind="clustering").count() == 1
            assert sum("(joined)" in output for output in outputs) == 1
            return
    pytest.fail("the two processes never overlapped in three tries")


@pytest.mark.django_db(transaction=True)
def test_a_cluster_too_long_for_one_text_becomes_several_memories_that_cite_every_member(tenant, three_days_ago):
    policy_set(tenant, {"merging": {"max_chars": 200}})
    ingest_clusterable(tenant, [f"Migration step {i}: moved table t{i} with {i * 1000} rows from the billing-api "
                                f"Redis cache." for i in range(10)], created_at=three_days_ago)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True).run
    semantic = Memory.objects.filter(tenant=tenant, memory_type="semantic")
    assert run.merged == 10 and semantic.count() > 1
    assert all(len(m.content) <= 200 for m in semantic)
    assert_nothing_lost_or_duplicated(tenant)
    text = " ".join(semantic.values_list("content", flat=True))
    assert all(f"{i * 1000} rows" in text for i in range(10))


@pytest.mark.django_db(transaction=True)
def test_small_talk_no_merge_folds_is_archived_restorably_and_never_dressed_up_as_knowledge(tenant, events,
                                                                                           three_days_ago):
    from consolidation.corrections.revert import run_revert

    facts = ingest_clusterable(tenant, [f"The billing-api Redis cache hit its limit, day {i}." for i in range(2)],
                               created_at=three_days_ago)
    chatter = ingest(tenant, ["Thanks so much!", "Haha, that's so cool!"], entities=(), session="s1",
                     created_at=three_days_ago)
    asks_about = ingest(tenant, "Did you finish the 10k race in Denver?", entities=(), session="s1",
                        created_at=three_days_ago)[0]
    question = ingest(tenant, "Wow, what made you pick that one?", entities=(), session="s1",
                      created_at=three_days_ago)[0]
    ingest(tenant, "Lunch was great.", entities=(), session="s2", created_at=three_days_ago + HOUR)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run
    semantic = Memory.objects.get(tenant=tenant, memory_type="semantic")
    assert set(cluster_members(tenant)[semantic.id]) == set(facts) and "Thanks" not in semantic.content
    assert {m.archive_reason for m in Memory.objects.filter(id__in=chatter)} == {"uninformative"}
    # A question without a value is no knowledge either: the answer after it says what matters.
    assert Memory.objects.get(id=question).archive_reason == "uninformative"
    chatter.append(question)
    assert run.archived == 3
    entry = LedgerEntry.objects.get(action="archive.uninformative")
    assert entry.undoable and set(entry.memory_ids) == {str(i) for i in chatter}
    assert {"memory_ids": sorted(str(i) for i in chatter), "reason": "uninformative"} in [
        {**e["data"], "memory_ids": sorted(e["data"]["memory_ids"])} for e in events if e["event"] == "memory.archived"]

    assert Memory.objects.get(id=asks_about).state == "raw"  # a question with values stays (it decays)

    run_revert(run_id=run.id, actor="test", reason="undo")
    assert set(Memory.objects.filter(id__in=chatter).values_list("state", flat=True)) == {"raw"}


@pytest.mark.django_db(transaction=True)
def test_a_turn_that_sounds_like_small_talk_yet_says_something_is_never_archived(tenant, three_days_ago):
    offer, thanks = ingest(tenant, ["Yeah, it's been great for me. Let me know if you need any advice to get started.",
                                    "Thanks so much!"], entities=(), session="s1", created_at=three_days_ago)
    ingest(tenant, "Lunch was great.", entities=(), session="s2", created_at=three_days_ago + HOUR)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    assert Memory.objects.get(id=offer).state != "archived"
    assert Memory.objects.get(id=thanks).archive_reason == "uninformative"


@pytest.mark.django_db(transaction=True)
def test_a_lone_episode_wrapped_in_small_talk_becomes_a_semantic_memory_of_its_statement(tenant, three_days_ago):
    chatty = ingest(tenant, "Hey, so good to hear from you! I adopted a beagle called Toby yesterday. Thanks so much!",
                    entities=(), session="s1", created_at=three_days_ago)[0]
    plain = ingest(tenant, "Our quarterly planning moved to the big meeting room on the third floor.", entities=(),
                   session="s1", created_at=three_days_ago)[0]
    ingest(tenant, "Lunch was great.", entities=(), session="s2", created_at=three_days_ago + HOUR)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    semantic = Memory.objects.get(tenant=tenant, memory_type="semantic")
    day = (three_days_ago - DAY).date()
    assert semantic.content == f"I adopted a beagle called Toby yesterday ({day.day} {day:%B %Y})."
    assert cluster_members(tenant)[semantic.id] == {chatty}
    assert Memory.objects.get(id=chatty).state == "consolidated"
    assert Memory.objects.get(id=plain).state == "raw"  # nothing to drop or anchor: it stays as it was said
    assert_nothing_lost_or_duplicated(tenant)


@pytest.mark.django_db(transaction=True)
def test_episodes_the_first_level_leaves_alone_pair_up_within_their_session_at_the_looser_floor(tenant,
                                                                                              three_days_ago):
    same, other = two_sessions_at_cosine_045(tenant, three_days_ago)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    semantic = Memory.objects.get(tenant=tenant, memory_type="semantic")
    assert cluster_members(tenant)[semantic.id] == set(same)  # the same cosine in another session is no link
    assert HIKE[0] in semantic.content and HIKE[1] in semantic.content
    assert Memory.objects.get(id=other).state == "raw"
    assert_nothing_lost_or_duplicated(tenant)


@pytest.mark.django_db(transaction=True)
def test_a_chunk_leaves_out_the_merge_another_writer_moved_a_member_of_and_writes_the_rest(tenant, settings,
                                                                                          three_days_ago):
    settings.ZEROMEMORY_CLUSTERING_WRITE_CHUNK = 2
    three_merges = policy_with_overrides({"clustering": {"fold_floor": 0.0}})  # three merges, not one folded text
    for topic in range(3):
        ingest_clusterable(tenant, [f"Topic {topic}: note {i}." for i in range(3)],
                           entities=(f"svc-{topic}", f"db-{topic}"), created_at=three_days_ago)
    run, _ = run_request(tenant_id=tenant.id, user_id="u1", kind="clustering", trigger="cli")
    run = run_start(run_id=run.id, worker="w1")
    plan = clustering_plan(tenant=Tenant.objects.get(id=tenant.id), user_id="u1", now=three_days_ago + 3 * DAY,
                           force=True, policy=three_merges)
    assert len(plan.merges) == 3
    moved = plan.loaded.ids[plan.merges[1].members[0]]  # in the first chunk, with merge 0
    memory_transition(tenant_id=tenant.id, memory_ids=[moved], operation="decay", actor="another writer")

    counts, _ = _write_merges(run, "w1", tenant.id, plan, {"clusters": 0, "merged": 0, "created": 0}, None)

    assert (counts["clusters"], counts["merged"]) == (2, 6)
    assert LedgerEntry.objects.filter(action="merge", run=run).count() == 2
    left_out = [plan.loaded.ids[i] for i in plan.merges[1].members]
    assert list(Memory.objects.filter(id__in=left_out).order_by("state").values_list("state", flat=True)) == \
        ["archived", "raw", "raw"]
    assert_nothing_lost_or_duplicated(tenant)


@pytest.mark.django_db(transaction=True)
def test_the_third_level_folds_what_a_session_leaves_while_the_text_fits_in_one_piece(tenant, three_days_ago):
    clustering = {"session_floor": 0.0, "fold_floor": 0.3}  # the second level off: only the third can fold them
    same, other = two_sessions_at_cosine_045(tenant, three_days_ago)
    # The two (91 characters) do not fit one text of 80 characters or fewer: nothing folds.
    policy_set(tenant, {"clustering": clustering, "merging": {"max_chars": 80}})
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    assert not Memory.objects.filter(tenant=tenant, memory_type="semantic").exists()
    policy_set(tenant, {"clustering": clustering, "merging": {"max_chars": 350}})
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    semantic = Memory.objects.get(tenant=tenant, memory_type="semantic")
    assert cluster_members(tenant)[semantic.id] == set(same)  # another session's episode is never folded in
    assert semantic.content == f"{HIKE[0]} {HIKE[1]}"
    assert Memory.objects.get(id=other).state == "raw"
    assert_nothing_lost_or_duplicated(tenant)


@pytest.mark.django_db(transaction=True)
def test_a_long_session_folds_window_by_window_and_tries_a_bounded_number_of_folds(tenant, monkeypatch,
                                                                                   three_days_ago):
    monkeypatch.setattr(clustering_job, "FOLD_WINDOW", 8)
    monkeypatch.setattr(clustering_job, "FOLD_MISSES", 2)
    policy = policy_with_overrides({"clustering": {"cosine_floor": 0.99}})  # one topic: every pair may fold
    ids = ingest(tenant, [f"Build {i} of the search indexer passed its {i * 7} checks." for i in range(60)],
                 entities=(), session="s1", created_at=three_days_ago)
    Memory.objects.filter(id__in=ids).update(embedding=[1.0] + [0.0] * 383)
    windows: list[list[int]] = []  # per window: its units, and each fold it tried
    fold_window, folded = clustering_job._fold_window, clustering_job._folded
    monkeypatch.setattr(clustering_job, "_fold_window",
                        lambda units, *rest: windows.append([len(units)]) or fold_window(units, *rest))
    monkeypatch.setattr(clustering_job, "_folded",
                        lambda *args: windows[-1].append(1) or folded(*args))
    plan = clustering_plan(tenant=Tenant.objects.get(id=tenant.id), user_id="u1", now=three_days_ago + 3 * DAY,
                           force=True, policy=policy)
    assert len(windows) >= 2 and all(units <= 8 for units, *_ in windows)
    assert all(len(tried) <= units - 1 + 2 for units, *tried in windows)
    assert all(len(merge.text) <= policy.merging.max_chars for merge in plan.merges)
    cited = [i for merge in plan.merges for i in merge.members]
    assert len(cited) == len(set(cited))


@pytest.mark.django_db(transaction=True)
def test_a_merged_memory_is_dated_by_the_newest_source_whose_words_it_keeps(tenant, three_days_ago):
    """A later repeat the text drops says nothing new: it is cited, but dating the memory by it would show the older
    statement as said later than it was."""
    said = ingest_clusterable(tenant, "The billing-api Redis cache hit its limit of 2 GB at noon on Monday.",
                              created_at=three_days_ago)
    repeated = ingest_clusterable(tenant, "The billing-api Redis cache hit its limit of 2 GB.",
                                  created_at=three_days_ago + 2 * HOUR)
    ingest(tenant, "Lunch was great.", entities=(), session="s2", created_at=three_days_ago + 3 * HOUR)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    semantic = Memory.objects.get(tenant=tenant, memory_type="semantic")
    assert set(cluster_members(tenant)[semantic.id]) == {*said, *repeated}
    assert "at noon on Monday" in semantic.content and semantic.content.count("Redis") == 1
    assert semantic.valid_from == three_days_ago


@pytest.mark.django_db(transaction=True)
def test_a_cluster_that_says_nothing_is_left_as_it_was_said_run_after_run(tenant, three_days_ago):
    """Small talk that no rule calls chatter is still no knowledge: no semantic memory is written for it, its
    episodes stay as they were said, and a later run finds nothing to do with them either."""
    said = ingest_clusterable(tenant, ["I'm glad you're alright. Yeah, it's tough. You got through it - stay strong.",
                                       "It's so inspiring to see you staying optimistic even when things get tough."],
                              created_at=three_days_ago)
    ingest(tenant, "Lunch was great.", entities=(), session="s2", created_at=three_days_ago + HOUR)
    for _ in range(2):
        run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run
        assert (run.status, run.created, run.merged) == ("succeeded", 0, 0)
        assert not Memory.objects.filter(tenant=tenant, memory_type="semantic").exists()
        assert set(Memory.objects.filter(id__in=said).values_list("state", flat=True)) == {"raw"}


@pytest.mark.django_db(transaction=True)
def test_a_semantic_memory_is_updated_only_by_the_text_that_cites_it(tenant, three_days_ago):
    """The cluster's first text that is written may not be the one holding the semantic memory it joins (that one
    says nothing here); written into the semantic memory, it would overwrite what that memory says."""
    policy_set(tenant, {"merging": {"max_chars": 200}})
    base_text = ("I'm so glad you're alright. Yeah, it's tough, but you got through it and you should stay strong, "
                 "always stay positive!")
    base = ingest_clusterable(tenant, base_text, created_at=three_days_ago)[0]
    Memory.objects.filter(id=base).update(memory_type="semantic", metadata={"source_type": "consolidated"})
    episodes = ingest_clusterable(tenant, ["The billing-api Redis cache hit its limit of 512 MB on 3 May during the "
                                           "nightly batch import.",
                                           "The billing-api Redis cache was resized to 2 GB on 4 May after the "
                                           "nightly batch import failed."],
                                  created_at=three_days_ago)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True).run
    assert run.merged == 2
    assert Memory.objects.get(id=base).content == base_text
    written = Memory.objects.exclude(id=base).get(tenant=tenant, memory_type="semantic")
    assert "512 MB" in written.content and cluster_members(tenant)[written.id] == set(episodes)
