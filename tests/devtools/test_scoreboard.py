"""`evaluate scoreboard` compares today's figures with the landed ones, knowing for each figure which way is better
(zeromem/devtools/evaluation/scoreboard.py); the landed figures are kept per split."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from zeromem.devtools.evaluation import scoreboard
from zeromem.devtools.evaluation.scoreboard import HIGHER, LOWER, Figure, compare, figures_of, item_changes
from zeromem.devtools.evaluation.splits import split_of

RECALL = Figure("locomo", "recall_at_10_after", HIGHER)
FLAGS = Figure("opsignals", "flags_per_1000", LOWER)
FIGURES = (RECALL, FLAGS)


def worse(landed: dict, today: dict) -> list[str]:
    return compare(landed=landed, today=today, figures=FIGURES)["worse"]


def test_a_lower_value_is_worse_where_higher_is_better():
    assert worse({RECALL.name: 0.70}, {RECALL.name: 0.69}) == [RECALL.name]
    assert worse({RECALL.name: 0.70}, {RECALL.name: 0.70}) == []
    assert worse({RECALL.name: 0.70}, {RECALL.name: 0.75}) == []


def test_a_higher_value_is_worse_where_lower_is_better():
    assert worse({FLAGS.name: 2.0}, {FLAGS.name: 2.5}) == [FLAGS.name]
    assert worse({FLAGS.name: 2.0}, {FLAGS.name: 2.0}) == []
    assert worse({FLAGS.name: 2.0}, {FLAGS.name: 0.0}) == []


def test_a_change_within_the_figures_noise_is_not_worse():
    noisy = (Figure("locomo", "answer_hit_before", HIGHER, noise=0.005), Figure("locomo", "active_ratio", LOWER, 0.01))
    landed = {"locomo.answer_hit_before": 0.5652, "locomo.active_ratio": 0.44}

    assert compare(landed=landed, today={"locomo.answer_hit_before": 0.5632, "locomo.active_ratio": 0.449},
                   figures=noisy)["worse"] == []
    assert compare(landed=landed, today={"locomo.answer_hit_before": 0.5592, "locomo.active_ratio": 0.4501},
                   figures=noisy)["worse"] == ["locomo.answer_hit_before", "locomo.active_ratio"]


def test_a_figure_without_a_landed_or_a_today_value_is_not_compared():
    comparison = compare(landed={FLAGS.name: 1.0}, today={RECALL.name: 0.5, FLAGS.name: None}, figures=FIGURES)

    assert comparison == {"figures": {RECALL.name: {"landed": None, "today": 0.5, "worse": False},
                                      FLAGS.name: {"landed": 1.0, "today": None, "worse": False}}, "worse": []}


def test_every_figure_is_read_from_its_evaluations_json():
    results = {"locomo": {"recall_at_10_after": 0.71, "questions": 800}, "opsignals": {"flags_per_1000": 5.0}}

    assert figures_of(results, FIGURES) == {RECALL.name: 0.71, FLAGS.name: 5.0}
    assert figures_of({"locomo": {"recall_at_10_after": 0.71}}, FIGURES)[FLAGS.name] is None


def test_every_watched_figure_says_which_way_is_better_and_is_named_once():
    names = [figure.name for figure in scoreboard.FIGURES]

    assert len(names) == len(set(names))
    assert {figure.better for figure in scoreboard.FIGURES} == {HIGHER, LOWER}


def test_the_table_marks_the_worse_figures():
    comparison = compare(landed={RECALL.name: 0.7, FLAGS.name: 2.0}, today={RECALL.name: 0.6, FLAGS.name: 1.0},
                         figures=FIGURES)

    header, recall, flags = scoreboard.table(comparison, FIGURES)
    assert recall.endswith("WORSE") and "↑" in recall and not flags.endswith("WORSE") and "↓" in flags


def test_a_change_in_the_items_measured_is_reported():
    assert item_changes({"locomo": 5, "updates": 9}, {"locomo": 5, "updates": 8, "merges": 5}) == [
        "updates: 9 items landed, 8 today"]


def test_recording_one_split_keeps_the_other(tmp_path):
    path = tmp_path / "scoreboard.json"
    scoreboard.write(split="dev", entry={"figures": {RECALL.name: 0.8}}, path=path)
    scoreboard.write(split="test", entry={"figures": {RECALL.name: 0.7}}, path=path)
    scoreboard.write(split="test", entry={"figures": {RECALL.name: 0.72}}, path=path)

    assert scoreboard.landed("dev", path)["figures"] == {RECALL.name: 0.8}
    assert scoreboard.landed("test", path)["figures"] == {RECALL.name: 0.72}
    assert scoreboard.landed("dev", tmp_path / "missing.json") == {}


def test_a_quick_run_cannot_be_recorded_as_the_landed_figures(tmp_path):
    with pytest.raises(CommandError, match="smoke run"):
        call_command("evaluate", "scoreboard", "--quick", "--record", "--file", str(tmp_path / "s.json"),
                     stdout=io.StringIO(), stderr=io.StringIO())
    assert not (tmp_path / "s.json").exists()


def in_test_split(prefix: str) -> str:
    return next(f"{prefix}-{n}" for n in range(100) if split_of(f"{prefix}-{n}") == "test")


def write_data(root: Path) -> None:
    """A tiny data folder laid out as ../shared/eval/ (invented sentences), one item of each data set in `test`."""
    (root / "updates").mkdir(parents=True)
    question = in_test_split("What is the user's locker number")
    (root / "updates" / "cases.jsonl").write_text(json.dumps({
        "id": "case0", "entity_id": "user", "stale_text": "My locker number is 114.", "stale_days_ago": 40,
        "current_text": "They moved me, my locker number is now 214.", "current_days_ago": 4,
        "filler": ["Good morning!", "See you tomorrow."], "question": question, "current": "214", "stale": "114",
        "expect": "supersede"}) + "\n")
    (root / "longmemeval" / "oracle").mkdir(parents=True)
    turns = [[{"role": "user", "content": f"I've read {n} books by Le Guin this year.", "has_answer": True},
              {"role": "assistant", "content": "A great pace."}] for n in (3, 5)]
    (root / "longmemeval" / "oracle" / "q.json").write_text(json.dumps({
        "question_id": in_test_split("books"), "question": "How many Le Guin books have I read?", "answer": "5",
        "haystack_session_ids": ["old", "new"], "haystack_dates": ["2023/02/10 (Fri) 09:30", "2023/06/20 (Tue) 09:30"],
        "haystack_sessions": turns, "answer_session_ids": ["old", "new"]}))
    (root / "locomo").mkdir()
    said = ["I adopted a grey cat called Pixel.", "Lovely! How old is Pixel?", "Pixel is two years old.",
            "I started pottery classes on Thursdays.", "Pottery sounds relaxing.", "My first bowl cracked in the kiln."]
    session = [{"speaker": ("Ana", "Ben")[i % 2], "dia_id": f"D1:{i + 1}", "text": text} for i, text in enumerate(said)]
    (root / "locomo" / "locomo10.json").write_text(json.dumps([{
        "sample_id": in_test_split("conv"),
        "conversation": {"speaker_a": "Ana", "speaker_b": "Ben", "session_1_date_time": "1:56 pm on 8 May, 2023",
                         "session_1": session},
        "qa": [{"question": "What is Ana's cat called?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4}]}]))


def scoreboard_command(*args: str) -> dict:
    out = io.StringIO()
    call_command("evaluate", "scoreboard", *args, "--json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue().strip().splitlines()[-1])


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("hash_embedder")
def test_a_recorded_scoreboard_is_what_the_next_run_compares_with(tmp_path):
    write_data(tmp_path / "eval")
    landed = tmp_path / "scoreboard.json"
    options = ("--data", str(tmp_path / "eval"), "--file", str(landed),
               *(f"--only={name}" for name in ("updates", "opsignals", "longmemeval", "merges", "locomo")))

    first = scoreboard_command(*options, "--record")
    second = scoreboard_command(*options)

    events = first["items"].pop("opsignals")
    assert first["split"] == "test" and first["items"] == {"updates": 1, "longmemeval": 1, "merges": 1, "locomo": 1}
    assert 0 < events < first["items_total"]["opsignals"] == 200
    assert all(row["landed"] is None for row in first["figures"].values())
    assert set(second["figures"]) == {figure.name for figure in scoreboard.FIGURES}
    assert {name: row["landed"] for name, row in second["figures"].items()} == {
        name: row["today"] for name, row in first["figures"].items()}
    assert second["worse"] == [name for name, row in second["figures"].items() if row["worse"]]
    assert scoreboard.landed("test", landed)["items"] == {**first["items"], "opsignals": events}
