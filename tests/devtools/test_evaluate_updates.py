"""`manage.py evaluate updates` and the held-out update cases written for this project
(zeromem/devtools/evaluation/data/update_cases.jsonl): the file keeps the schema of ../shared/eval/updates and the
counts the report claims, and `--reader` judges the cases with the reader it names."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command

from zeromem.devtools.evaluation.updates import load_cases

CASES = Path(__file__).resolve().parents[2] / "zeromem" / "devtools" / "evaluation" / "data" / "update_cases.jsonl"
FIELDS = {"id", "entity_id", "stale_text", "stale_days_ago", "current_text", "current_days_ago", "filler", "question",
          "current", "stale", "expect"}


def test_the_held_out_cases_parse_with_the_shared_schema_and_the_claimed_counts():
    cases = load_cases(CASES)

    assert all(set(case) == FIELDS for case in cases)
    assert Counter(case["expect"] for case in cases) == {"supersede": 32, "both": 16}
    assert len({case["id"] for case in cases}) == len({case["question"] for case in cases}) == 48  # split keys


def test_each_case_carries_its_values_where_the_evaluation_looks_for_them():
    for case in load_cases(CASES):
        current, stale = case["current"].lower(), case["stale"].lower()
        assert current in case["current_text"].lower() and stale in case["stale_text"].lower(), case["id"]
        assert current not in case["stale_text"].lower(), case["id"]  # else the stale memory counts as current
        assert case["stale_days_ago"] > case["current_days_ago"] > 0, case["id"]
        assert len(case["filler"]) >= 4, case["id"]
        assert not any(value in turn.lower() for turn in case["filler"] for value in (current, stale)), case["id"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("hash_embedder")
def test_the_reader_option_sets_the_reader_of_the_evaluation_tenant(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(CASES.read_text().splitlines()[:2]) + "\n")
    out, err = io.StringIO(), io.StringIO()

    call_command("evaluate", "updates", "--path", str(path), "--reader", "rules", "--json", stdout=out, stderr=err)

    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert result["reader"] == "rules" and result["total"] == 2
    assert "(reader rules)" in err.getvalue()
