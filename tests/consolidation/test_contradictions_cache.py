"""The parse cache search's newer-first ordering keeps per process."""

import gc
from datetime import UTC, datetime, timedelta

from consolidation.domain.contradictions import newer_first


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
