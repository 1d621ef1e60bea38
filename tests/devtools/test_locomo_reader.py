"""The LoCoMo reader (plain data): turns in the order they were said, each dated within its session."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tests.devtools.test_evaluate_nightly import SESSIONS, locomo_json
from zeromem.devtools.evaluation.locomo import TURN_STEP, load


def test_the_turns_of_a_session_are_dated_a_step_apart_in_the_order_they_were_said(tmp_path: Path):
    turns = load(locomo_json(tmp_path / "tiny.json"))[0].turns
    first = [t for t in turns if t.session == 1]

    assert [t.text for t in first] == SESSIONS[0][1]
    assert [t.at for t in first] == [datetime(2023, 5, 6, 13, 56, tzinfo=UTC) + TURN_STEP * n for n in range(4)]
    assert {t.at.date() for t in turns if t.session == 5} == {datetime(2023, 5, 6).date()}
