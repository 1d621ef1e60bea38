"""Operational windows through a clustering run: the window given as a field or as a tag, one digest per window
covering each of its events exactly once, transitively."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from consolidation.jobs.clustering import clustering_run_now
from tests.factories import memory_input
from zeromem.core import services
from zeromem.devtools.evaluation.opsignals import opsignal_items, scenario_start
from zeromem.models import Memory, MemorySource

pytestmark = pytest.mark.django_db(transaction=True)
SIZES = {"normal": 40, "degraded": 60, "outage": 50, "recovery": 50}


def events_under(memory_id, sources) -> list:
    """The episodes a memory stands for, transitively (each as often as it is reached)."""
    found = []
    for source in sources.get(memory_id, []):
        found += events_under(source, sources) if source in sources else [source]
    return found


@pytest.mark.parametrize("window_as", ["field", "tags"])
def test_each_window_gets_one_digest_covering_its_events_exactly_once(tenant, now, window_as):
    items = opsignal_items(user_id="ops", start=scenario_start(now), window_as=window_as)
    services.memories_ingest(tenant_id=tenant.id, items=items)
    clustering_run_now(tenant_id=tenant.id, user_id="ops", trigger="cli", force=True)

    window_of = dict(Memory.objects.filter(tenant=tenant).values_list("id", "window"))
    sources: dict = defaultdict(list)
    for memory_id, source_id in MemorySource.objects.filter(memory__tenant=tenant).values_list("memory_id",
                                                                                             "source_memory_id"):
        sources[memory_id].append(source_id)
    assert all(window_of[s] == window_of[m] for m, found in sources.items() for s in found)  # no window mixed

    digests = {d.window: d for d in Memory.objects.filter(tenant=tenant, metadata__source_type="window_digest")}
    assert set(digests) == set(SIZES) and all(d.state == "raw" for d in digests.values())
    for window, digest in digests.items():
        covered = events_under(digest.id, sources)
        assert len(covered) == len(set(covered)) == SIZES[window] == digest.metadata["source_count"]
    assert Memory.objects.filter(tenant=tenant, state="raw").count() == 4  # the store is the four digests
    assert digests["outage"].importance == pytest.approx(0.92, abs=0.04)
    assert digests["normal"].importance == pytest.approx(0.26, abs=0.04)
    assert digests["outage"].content.startswith("outage window, 50 events")
    cited = Counter(s for found in sources.values() for s in found)
    assert max(cited.values()) == 1  # no memory folded twice


def test_a_window_tag_names_the_window_only_when_the_field_is_empty(tenant, settings):
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


def test_a_digest_never_folds_the_current_session_nor_restates_a_replaced_statement(tenant, settings, now):
    from tests.factories import DAY, HOUR, ingest

    settings.ZEROMEMORY_WINDOW_DIGEST_MIN = 3
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
