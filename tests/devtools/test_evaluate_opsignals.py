"""`manage.py evaluate opsignals`: a deterministic incident (normal, degraded, outage, recovery) of monitoring
events, ingested and clustered. The flag and supersede counts depend on the contradiction rules, so only the
scenario and the report's shape are checked here."""

from __future__ import annotations

import io
import json
from collections import defaultdict
from datetime import timedelta
from statistics import mean

import pytest
from django.core.management import call_command

from zeromem.devtools.evaluation.opsignals import opsignal_items, scenario_start

WINDOWS = {"normal": 40, "degraded": 60, "outage": 50, "recovery": 50}
IMPORTANCE = {"normal": (0.26, 0.04), "degraded": (0.5, 0.08), "outage": (0.92, 0.04), "recovery": (0.4, 0.08)}


def by_window(items, window_of):
    windows = defaultdict(list)
    for item in items:
        windows[window_of(item)].append(item)
    return windows


def test_the_scenario_has_four_windows_in_time_order_with_their_event_counts(now):
    items = opsignal_items(user_id="ops", start=now - timedelta(days=3))

    windows = by_window(items, lambda item: item.window)
    assert len(items) == 200 and {name: len(events) for name, events in windows.items()} == WINDOWS
    assert list(dict.fromkeys(item.window for item in items)) == list(WINDOWS)
    assert all(timedelta(minutes=1) < b.created_at - a.created_at < timedelta(minutes=10)
               for a, b in zip(items, items[1:], strict=False))
    assert len({item.content for item in items}) == 200  # nothing for ingestion to deduplicate
    assert all(item.entity_id is None and item.role == "" for item in items)


def test_importance_follows_the_severity_of_each_window(now):
    windows = by_window(opsignal_items(user_id="ops", start=now), lambda item: item.window)

    for name, (expected, tolerance) in IMPORTANCE.items():
        assert abs(mean(item.importance for item in windows[name]) - expected) <= tolerance, name


def test_the_window_can_be_a_tag_instead_of_the_field(now):
    as_field = opsignal_items(user_id="ops", start=now)
    as_tags = opsignal_items(user_id="ops", start=now, window_as="tags")

    assert [i.content for i in as_tags] == [i.content for i in as_field]  # the same seeded scenario
    assert all(i.window is None and i.tags == (f"window:{f.window}",) for i, f in zip(as_tags, as_field, strict=True))
    assert all(not i.tags for i in as_field)


def test_the_scenario_ends_at_least_two_days_before_now(now):
    items = opsignal_items(user_id="ops", start=scenario_start(now))

    assert items[-1].created_at <= now - timedelta(days=2)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("hash_embedder")
def test_the_command_ingests_the_scenario_clusters_it_and_reports_its_figures():
    out, err = io.StringIO(), io.StringIO()
    call_command("evaluate", "opsignals", "--json", stdout=out, stderr=err)

    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert set(result) == {"scenario", "memories", "flags", "flags_per_1000", "supersedes", "expected_supersedes",
                           "expected_superseded", "active_after", "semantic_written", "seconds", "split", "items",
                           "items_total"}
    assert result["scenario"] == "incident" and result["memories"] == 200 and result["expected_supersedes"] == 0
    assert result["flags_per_1000"] == round(result["flags"] * 1000 / 200, 2)
    assert "200 events" in err.getvalue()
