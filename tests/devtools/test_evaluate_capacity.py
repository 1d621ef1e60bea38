"""The `capacity` scenario of `manage.py evaluate opsignals`: six days of readings of quantities the product names
nowhere, one window a day, and the team's configuration notes whose later changes should supersede the earlier."""

from __future__ import annotations

import io
import json
from collections import Counter
from datetime import timedelta

import pytest
from django.core.management import call_command

from zeromem.devtools.evaluation.capacity import (
    DAYS,
    EVENTS_PER_DAY,
    EXPECTED_SUPERSEDES,
    capacity_items,
    capacity_start,
)

NOTES = 2 * len(EXPECTED_SUPERSEDES)


def test_the_scenario_is_the_same_on_every_run(now):
    first, second = capacity_items(user_id="ops", start=now), capacity_items(user_id="ops", start=now)

    assert [(i.content, i.created_at, i.window) for i in first] == [(i.content, i.created_at, i.window) for i in second]


def test_one_window_a_day_of_readings_and_the_notes_without_a_window_in_time_order(now):
    items = capacity_items(user_id="ops", start=capacity_start(now))

    assert Counter(item.window for item in items) == {**{f"day-{d}": EVENTS_PER_DAY for d in range(1, DAYS + 1)},
                                                      None: NOTES}
    assert [item.created_at for item in items] == sorted(item.created_at for item in items)
    assert len({item.content for item in items}) == len(items)  # nothing for ingestion to deduplicate
    assert items[-1].created_at <= now - timedelta(days=2)


def test_each_expected_supersede_is_an_older_note_changed_by_a_later_one(now):
    items = {item.content: item for item in capacity_items(user_id="ops", start=now)}

    for older, newer in EXPECTED_SUPERSEDES:
        assert items[older.text].created_at + timedelta(days=2) < items[newer.text].created_at


def test_the_window_can_be_a_tag_instead_of_the_field(now):
    as_tags = capacity_items(user_id="ops", start=now, window_as="tags")

    assert all(item.window is None for item in as_tags)
    assert Counter(item.tags for item in as_tags)[()] == NOTES


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("hash_embedder")
def test_the_command_runs_the_capacity_scenario_and_reports_its_expected_supersedes_apart():
    out, err = io.StringIO(), io.StringIO()
    call_command("evaluate", "opsignals", "--scenario", "capacity", "--json", stdout=out, stderr=err)

    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert result["scenario"] == "capacity" and result["memories"] == DAYS * EVENTS_PER_DAY + NOTES
    assert result["expected_supersedes"] == len(EXPECTED_SUPERSEDES)
    assert 0 <= result["expected_superseded"] <= len(EXPECTED_SUPERSEDES)
    assert f"{result['expected_superseded']} of {len(EXPECTED_SUPERSEDES)} expected" in err.getvalue()
