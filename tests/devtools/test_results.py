"""`manage.py results record` keeps what a figure command printed with its command line, commit and machine, and
`results render` turns the recordings into one table per command (zeromem/devtools/results.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from zeromem.devtools.results import RecordError, commit_of, last_json_object, load_rows, record, render

ROOT = Path(__file__).resolve().parents[2]


def printed(stdout: str, returncode: int = 0):
    seen: list[list[str]] = []

    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        seen.append(args)
        return subprocess.CompletedProcess(args, returncode, stdout=stdout)

    return run, seen


def test_it_records_the_last_json_line_with_the_command_commit_and_machine(tmp_path):
    run, seen = printed('progress line\n{"passed": 18, "total": 18, "false_supersedes": 0}\n')

    path = record(args=["evaluate", "updates"], root=ROOT, data_dir=tmp_path, run=run)

    [row] = load_rows(path)
    assert path.name == "evaluate-updates.json" and seen == [["evaluate", "updates", "--json"]]
    assert row["command"] == "manage.py evaluate updates --json"
    assert row["commit"].split("+")[0] == commit_of(ROOT).split("+")[0] and len(row["commit"]) >= 10
    assert row["machine"]["cores"] >= 1 and len(row["machine"]["load_average_start"]) == 3
    assert row["result"] == {"passed": 18, "total": 18, "false_supersedes": 0}


def test_a_second_recording_is_appended(tmp_path):
    for passed in (17, 18):
        record(args=["evaluate", "updates", "--json"], root=ROOT, data_dir=tmp_path,
               run=printed(json.dumps({"passed": passed}))[0])

    assert [row["result"]["passed"] for row in load_rows(tmp_path / "evaluate-updates.json")] == [17, 18]


@pytest.mark.parametrize("args", [["migrate"], ["bench"], ["runserver", "0:8000"]])
def test_it_records_only_figure_commands(tmp_path, args):
    with pytest.raises(RecordError):
        record(args=args, root=ROOT, data_dir=tmp_path, run=printed("{}")[0])


def test_a_failed_command_records_nothing(tmp_path):
    with pytest.raises(RecordError, match="exited with 1"):
        record(args=["bench", "search"], root=ROOT, data_dir=tmp_path, run=printed('{"a": 1}', returncode=1)[0])

    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("stdout", ["", "done\n", "[1, 2]\n", '{"a": 1}\ntrailing words\n'])
def test_the_last_line_must_be_one_json_object(stdout):
    with pytest.raises(RecordError):
        last_json_object(stdout)


def test_render_makes_one_table_per_command_with_a_row_per_recording(tmp_path):
    for figures in ({"passed": 17, "note": "words are left out", "ratio": 0.123456}, {"passed": 18, "fast": True}):
        record(args=["evaluate", "updates"], root=ROOT, data_dir=tmp_path, run=printed(json.dumps(figures))[0])
    record(args=["bench", "calibrate"], root=ROOT, data_dir=tmp_path,
           run=printed(json.dumps({"floor": 0.55, "same_fact": {"min": 0.8}}))[0])

    page = render(data_dir=tmp_path)

    assert page.index("## bench calibrate") < page.index("## evaluate updates")
    table = page[page.index("## evaluate updates"):].splitlines()
    header = next(line for line in table if line.startswith("| command"))
    rows = [line for line in table if line.startswith("| `manage.py evaluate updates --json`")]
    assert header == "| command | commit | machine | passed | ratio | fast |"
    assert rows[0].endswith("| 17 | 0.1235 | – |") and rows[1].endswith("| 18 | – | true |")
    assert "| 0.55 | 0.8 |" in page  # the chosen columns of a known command, nested keys included


def test_a_column_can_pick_an_item_of_a_list_by_its_fields(tmp_path):
    rows = [{"method": "zeromem", "n": 10000, "seconds": 3.0}, {"method": "full_job", "n": 10000, "seconds": 150.0}]
    record(args=["bench", "clustering"], root=ROOT, data_dir=tmp_path,
           run=printed(json.dumps({"rows": rows, "edge_recall": 0.998}))[0])

    assert "| 3 | – | 0.998 | 150 | – |" in render(data_dir=tmp_path)


def test_the_page_shows_the_landed_scoreboard_of_the_test_split(tmp_path):
    machine = {"cores": 2, "cpu": "Test CPU", "memory_gib": 8.0}
    scoreboard = tmp_path / "scoreboard.json"
    scoreboard.write_text(json.dumps({
        "dev": {"commit": "dev0000000", "recorded_at": "then", "machine": machine, "items": {"updates": 11},
                "figures": {"updates.false_supersedes": 7}},
        "test": {"commit": "abc1234567", "recorded_at": "now", "machine": machine, "items": {"updates": 7},
                 "figures": {"updates.false_supersedes": 1, "locomo.recall_at_10_after": 0.71234}}}))

    page = render(data_dir=tmp_path / "none", scoreboard_path=scoreboard)

    assert "## Scoreboard (test split)" in page and "`abc1234567`" in page and "updates 7" in page
    assert "| `updates.false_supersedes` | lower | 1 |" in page
    assert "| `locomo.recall_at_10_after` | higher | 0.7123 |" in page
    assert "dev0000000" not in page
    assert "Scoreboard" not in render(data_dir=tmp_path / "none", scoreboard_path=tmp_path / "missing.json")
