"""Operational windows through a clustering run: the window given as a field or as a tag, one digest per window
covering each of its events exactly once, transitively; a later run's events grow the window's digest; a digest is
undone like a merge."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from consolidation.corrections.revert import run_revert
from consolidation.corrections.undo import UndoRefused, memory_unmerge
from consolidation.jobs.clustering import clustering_run_now
from consolidation.models import LedgerEntry
from tests.factories import DAY, HOUR, MINUTE, ingest, memory_input, policy_set
from zeromem.core import services
from zeromem.devtools.evaluation.opsignals import opsignal_items, scenario_start
from zeromem.models import Memory, MemorySource

pytestmark = pytest.mark.django_db(transaction=True)
SIZES = {"normal": 40, "degraded": 60, "outage": 50, "recovery": 50}
DIGEST = "window_digest"


def sources_of(tenant) -> dict:
    sources: dict = defaultdict(list)
    for memory_id, source_id in MemorySource.objects.filter(memory__tenant=tenant).values_list("memory_id",
                                                                                             "source_memory_id"):
        sources[memory_id].append(source_id)
    return sources


def events_under(memory_id, sources) -> list:
    """The episodes a memory stands for, transitively (each as often as it is reached)."""
    found = []
    for source in sources.get(memory_id, []):
        found += events_under(source, sources) if source in sources else [source]
    return found


def digests_of(tenant) -> dict:
    """The active digest of each window."""
    active = Memory.objects.filter(tenant=tenant, metadata__source_type=DIGEST, state="raw")
    assert len({d.window for d in active}) == active.count()  # never two active digests of one window
    return {d.window: d for d in active}


def coverage(tenant) -> Counter:
    """How often each episode is covered by the active memories (itself, or transitively)."""
    sources = sources_of(tenant)
    covered: Counter = Counter()
    for memory in Memory.objects.filter(tenant=tenant, state="raw"):
        covered.update(events_under(memory.id, sources) if memory.memory_type == "semantic" else [memory.id])
    return covered


def the_scenario(tenant, now, window_as="field"):
    items = opsignal_items(user_id="ops", start=scenario_start(now) - 5 * DAY, window_as=window_as)
    services.memories_ingest(tenant_id=tenant.id, items=items)
    clustering_run_now(tenant_id=tenant.id, user_id="ops", trigger="cli", force=True)
    return items


def late_outage_events(tenant, now, count):
    """`count` more outage events, given as tags, in a later session."""
    return ingest(tenant, [memory_input(f"SEV1: payments returning 503 for {60 + n} % of requests", user="ops",
                                        tags=["window:outage", "sev1"], importance=0.98, session="ops-late",
                                        created_at=now - 4 * DAY + n * MINUTE) for n in range(count)])


@pytest.mark.parametrize("window_as", ["field", "tags"])
def test_each_window_gets_one_digest_covering_its_events_exactly_once(tenant, now, events, window_as):
    items = the_scenario(tenant, now, window_as)

    window_of = dict(Memory.objects.filter(tenant=tenant).values_list("id", "window"))
    sources = sources_of(tenant)
    assert all(window_of[s] == window_of[m] for m, found in sources.items() for s in found)  # no window mixed
    if window_as == "tags":
        assert all(len({t for t in tags if t.startswith("window:")}) == 1
                   for tags in Memory.objects.filter(tenant=tenant).values_list("tags", flat=True))

    digests = digests_of(tenant)
    assert set(digests) == set(SIZES)
    importance_of = dict(Memory.objects.filter(tenant=tenant).values_list("id", "importance"))
    for window, digest in digests.items():
        covered = events_under(digest.id, sources)
        assert len(covered) == len(set(covered)) == SIZES[window] == digest.metadata["source_count"]
        # The window's mean importance: the events, not the few loudest it quotes.
        assert digest.importance == round(sum(importance_of[e] for e in covered) / len(covered), 4)
        assert digest.importance == round(sum(i.importance for i in items if (i.window or i.tags[0][7:]) == window)
                                          / SIZES[window], 4)
    assert Memory.objects.filter(tenant=tenant, state="raw").count() == 4  # the store is the four digests
    assert digests["outage"].importance == pytest.approx(0.92, abs=0.01)
    assert digests["normal"].importance == pytest.approx(0.26, abs=0.01)
    assert digests["outage"].content.startswith("outage window, 50 events")
    cited = Counter(s for found in sources.values() for s in found)
    assert max(cited.values()) == 1  # no memory folded twice
    data = next(e["data"] for e in events if e["event"] == "memory.semantic.updated"
                and e["data"]["id"] == str(digests["outage"].id))
    assert (data["window"], data["source_count"], data["importance"]) == ("outage", 50, digests["outage"].importance)


@pytest.mark.parametrize("late", [1, 15])
def test_a_later_runs_events_grow_the_windows_digest_which_folds_the_earlier_one(tenant, now, late):
    the_scenario(tenant, now)
    earlier = digests_of(tenant)["outage"]
    new = late_outage_events(tenant, now, late)
    clustering_run_now(tenant_id=tenant.id, user_id="ops", trigger="cli", force=True)

    digests = digests_of(tenant)
    grown = digests["outage"]
    assert grown.id != earlier.id and Memory.objects.get(id=earlier.id).state == "consolidated"
    assert earlier.id in sources_of(tenant)[grown.id]  # the earlier digest joined no cluster: only this digest
    assert grown.metadata == {"source_type": DIGEST, "source_count": 50 + late}
    assert grown.content.startswith(f"outage window, {50 + late} events") and grown.content.count("window") == 1
    assert grown.importance == round((earlier.importance * 50 + 0.98 * late) / (50 + late), 4)
    assert set(coverage(tenant).values()) == {1} and sum(coverage(tenant).values()) == 200 + late
    assert Memory.objects.filter(tenant=tenant, state="raw").count() == 4
    assert all(m.state == "consolidated" for m in Memory.objects.filter(id__in=new))

    # Undone like a merge: the earlier digest and the new events (or what they were merged into) come back.
    memory_unmerge(tenant_id=tenant.id, semantic_id=grown.id, actor="admin:ops")
    assert digests_of(tenant)["outage"].id == earlier.id
    assert set(coverage(tenant).values()) == {1} and sum(coverage(tenant).values()) == 200 + late


def test_an_earlier_digest_cannot_be_unmerged_while_a_later_one_folds_it(tenant, now):
    the_scenario(tenant, now)
    earlier = digests_of(tenant)["outage"]
    late_outage_events(tenant, now, 2)
    clustering_run_now(tenant_id=tenant.id, user_id="ops", trigger="cli", force=True)
    with pytest.raises(UndoRefused, match="folded into"):
        memory_unmerge(tenant_id=tenant.id, semantic_id=earlier.id, actor="admin:ops")


def test_reverting_the_run_takes_the_digests_back_and_gives_every_event_back(tenant, now):
    the_scenario(tenant, now)
    run = Memory.objects.get(tenant=tenant, metadata__source_type=DIGEST, window="outage")
    entry = LedgerEntry.objects.get(action="merge", outputs__semantic_id=str(run.id))
    assert entry.undoable and entry.scores == {"size": len(entry.memory_ids), "events": 50}
    result = run_revert(run_id=entry.run_id, actor="admin:ops", reason="undo the run")
    assert result.refused == []
    assert not Memory.objects.filter(tenant=tenant, memory_type="semantic", state="raw").exists()
    assert Memory.objects.filter(tenant=tenant, memory_type="episodic", state="raw").count() == 200
    assert LedgerEntry.objects.get(pk=entry.pk).undone_by is not None


@pytest.mark.parametrize(("minimum", "digests"), [(6, 0), (5, 1)])
def test_a_window_gets_its_first_digest_once_it_has_the_minimum_of_events(tenant, now, minimum, digests):
    # fold_floor 0: the five events stay five memories (the third level would fold them)
    policy_set(tenant, {"clustering": {"window_digest_min": minimum, "fold_floor": 0.0}})
    ingest(tenant, ["search p99 latency 120 ms", "heartbeat ok from worker-2 (auth), seq 4411",
                    "inventory deployed v2.14.3 on 4 pods", "payments error rate 0.2 % over 5 min",
                    "restarted auth-09c1 after liveness probe failures"], window="quiet", session="q",
           created_at=now - 5 * DAY)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True)
    assert Memory.objects.filter(tenant=tenant, metadata__source_type=DIGEST).count() == digests


def test_a_window_tag_names_the_window_only_when_the_field_is_empty(tenant):
    given = memory_input("checkout-api p99 latency 410 ms", window="degraded", tags=["window:outage"])
    tagged = memory_input("checkout-api p99 latency 990 ms", tags=["sev2", "window:outage"])
    plain = memory_input("checkout-api p99 latency 120 ms", tags=["sev4"])
    ids = services.memories_ingest(tenant_id=tenant.id, items=[given, tagged, plain]).ids
    assert [Memory.objects.get(id=i).window for i in ids] == ["degraded", "outage", None]
    tenant.overrides = {"window_tag_prefix": "incident/"}
    tenant.save()
    other = services.memories_ingest(tenant_id=tenant.id, items=[memory_input("x", tags=["incident/db-failover"]),
                                                                 memory_input("y", tags=["window:outage"])]).ids
    assert [Memory.objects.get(id=i).window for i in other] == ["db-failover", None]


def test_the_headline_generalises_from_the_tags_but_never_the_tenants_window_tag(tenant, now):
    # fold_floor 0: three memories to digest, not one folded text; the prefix as tenants set it before sections
    policy_set(tenant, {"window_tag_prefix": "incident/", "clustering": {"window_digest_min": 3, "fold_floor": 0.0}})
    lines = ["db-primary replication lag 40 s", "checkout-api error rate 12 % over 5 min",
             "restarted payments-0a1f after OOMKilled"]
    ingest(tenant, [memory_input(line, tags=["incident/failover", "sev2"], session="f",
                                 created_at=now - 5 * DAY + n * MINUTE) for n, line in enumerate(lines)])
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True)
    digest = Memory.objects.get(tenant=tenant, metadata__source_type=DIGEST)
    assert digest.window == "failover" and digest.content.startswith("failover window, 3 events, mostly sev2:")


def test_a_digest_never_folds_the_current_session_nor_restates_a_replaced_statement(tenant, now):
    policy_set(tenant, {"clustering": {"window_digest_min": 3}})
    old = now - 5 * DAY
    ingest(tenant, ["checkout-api p99 latency 900 ms.", "payments error rate 4 % over 5 min.",
                    "My team has 5 engineers on call."], window="q3", session="old", created_at=old, importance=0.9)
    ingest(tenant, "My team has 9 engineers on call now.", window="q3", session="later", created_at=old + DAY)
    live = ingest(tenant, "checkout-api is returning 502 for 30 % of requests.", window="q3", session="live",
                  created_at=now - HOUR)[0]
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    digest = Memory.objects.get(tenant=tenant, metadata__source_type="window_digest")
    assert Memory.objects.get(id=live).state == "raw"  # the current session is never folded
    assert "5 engineers" not in digest.content and "9 engineers" in digest.content


@pytest.mark.usefixtures("eager")
def test_a_digest_is_parsed_once_by_a_worker_after_its_run_commits(tenant, now):
    from zeromem.language.default import FEATURES_VERSION

    the_scenario(tenant, now)
    assert [d.features["v"] for d in digests_of(tenant).values()] == [FEATURES_VERSION] * len(SIZES)
