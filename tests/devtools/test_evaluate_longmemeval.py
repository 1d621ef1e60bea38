"""`manage.py evaluate longmemeval` on a tiny dataset in LongMemEval's schema (invented sentences): abstention
questions are skipped, every turn becomes one memory, and the figures before clustering are the ones the data
implies. Figures after clustering depend on the contradiction rules, so only their invariants are checked."""

from __future__ import annotations

import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from tests.factories import DAY, ingest, memory_input
from zeromem.devtools.evaluation import longmemeval
from zeromem.devtools.evaluation.statements import lost
from zeromem.models import Memory, MemorySource, MemoryState, MemoryType

pytestmark = pytest.mark.usefixtures("hash_embedder")

KEYS = {"questions", "memories", "current_above_stale_before", "current_above_stale_after",
        "current_only_at_10_before", "current_only_at_10_after", "ctx_current_no_stale_after",
        "ctx_newest_is_current_after", "stale_retired", "current_lost", "false_retirements",
        "supersedes_outside_evidence", "supersedes_outside_evidence_list", "flags", "seconds", "per_question",
        "split", "items", "items_total", "statements_lost", "samples"}


def day(year: int, month: int, date: int, hour: int = 9) -> str:
    return datetime(year, month, date, hour, 30).strftime(longmemeval.DATE_FORMAT)


def said(text: str, reply: str, evidence: bool = False) -> list[dict[str, Any]]:
    user: dict[str, Any] = {"role": "user", "content": text}
    if evidence:
        user["has_answer"] = True
    return [user, {"role": "assistant", "content": reply}]


SOUP = said("Can you suggest a quick recipe for lentil soup?",
            "Sauté an onion, add red lentils, stock and cumin, then simmer for 25 minutes.")

# Sessions listed out of date order on purpose: the evaluation sorts them by date.
QUESTIONS = [
    {"question_id": "b00k5", "question": "How many books by Le Guin have I read this year?", "answer": "5",
     "haystack_session_ids": ["books-new", "soup", "books-old"],
     "haystack_dates": [day(2023, 6, 20), day(2023, 3, 1), day(2023, 2, 10)],
     "haystack_sessions": [
         said("I've now read 5 books by Le Guin this year, The Lathe of Heaven was the latest.",
              "Five already, that is a great pace.", evidence=True),
         SOUP,
         said("I've read 3 books by Le Guin this year, The Dispossessed is my favourite so far.",
              "The Dispossessed is a classic.", evidence=True)],
     "answer_session_ids": ["books-new", "books-old"]},
    # The older evidence session holds no has_answer turn: the question has no stale turn.
    {"question_id": "c0mmute", "question": "How long is my bike commute to the office now?", "answer": "12 minutes",
     "haystack_session_ids": ["bike-old", "bike-new", "soup"],
     "haystack_dates": [day(2023, 4, 2), day(2023, 7, 15), day(2023, 5, 5)],
     "haystack_sessions": [
         said("My bike ride to the office takes about twenty minutes along the canal.", "A nice way to start the day."),
         said("Since the new bridge opened, my bike commute to the office is down to 12 minutes.",
              "That bridge saved you a lot of time.", evidence=True),
         SOUP],
     "answer_session_ids": ["bike-old", "bike-new"]},
    {"question_id": "p3ts_abs", "question": "What is the name of my parrot?", "answer": "not mentioned",
     "haystack_session_ids": ["soup"], "haystack_dates": [day(2023, 5, 5)], "haystack_sessions": [SOUP],
     "answer_session_ids": ["soup"]},
]
TURNS = 12  # the two answerable questions, three sessions of two turns each


@pytest.fixture
def data(tmp_path: Path) -> Path:
    (tmp_path / "oracle").mkdir()
    for number, question in enumerate(QUESTIONS):
        question = {"question_type": "knowledge-update", "question_date": day(2023, 8, 1), **question}
        path = tmp_path / "oracle" / f"{len(question['haystack_sessions'])}_{number}_{question['question_id']}.json"
        path.write_text(json.dumps(question))
    return tmp_path


def evaluate(*args: str) -> tuple[dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("evaluate", "longmemeval", *args, "--json", stdout=out, stderr=err)
    return json.loads(out.getvalue().strip().splitlines()[-1]), err.getvalue()


def test_it_sorts_sessions_by_date_and_splits_the_evidence_into_stale_and_current(data):
    books, commute = longmemeval.load(data / "oracle")

    assert [t.key for t in books.turns] == ["books-old:0", "books-old:1", "soup:0", "soup:1", "books-new:0",
                                            "books-new:1"]
    assert (books.stale, books.current) == ({"books-old:0"}, {"books-new:0"})
    assert (commute.stale, commute.current) == (frozenset(), {"bike-new:0"})
    assert (books.turns[1].at - books.turns[0].at).total_seconds() == 10


@pytest.mark.django_db(transaction=True)
def test_it_scores_the_answerable_questions_before_and_after_clustering(data):
    result, log = evaluate("--data", str(data))

    assert set(result) == KEYS
    assert (result["questions"], result["memories"], result["current_lost"]) == (2, TURNS, 0)
    assert result["statements_lost"] == len(result["samples"]["statements_lost"]) == 0
    books, commute = result["per_question"]
    # Each user has six memories, all in the top 10: the book question sees its stale turn beside the current one.
    assert (books["current_only_at_10_before"], commute["current_only_at_10_before"]) == (False, True)
    assert result["current_only_at_10_before"] == 0.5
    assert commute["current_above_stale_before"] is None and commute["stale_retired"] is None
    assert result["current_above_stale_before"] in (0.0, 1.0)  # over the one question with a stale turn
    assert result["supersedes_outside_evidence"] == len(result["supersedes_outside_evidence_list"])
    assert "b00k5" in log and "p3ts_abs" not in log


@pytest.mark.django_db(transaction=True)
def test_it_measures_only_the_first_questions_asked_for(data):
    result, _ = evaluate("--data", str(data), "--questions", "1")

    assert (result["questions"], result["memories"]) == (1, 6)
    assert result["current_above_stale_after"] is not None


def test_a_missing_data_folder_stops_with_a_clear_message(tmp_path, data):
    with pytest.raises(CommandError, match=r"LongMemEval data not found: no oracle/\*\.json under .*missing"):
        call_command("evaluate", "longmemeval", "--data", str(tmp_path / "missing"), stdout=io.StringIO(),
                     stderr=io.StringIO())
    with pytest.raises(CommandError, match=r"no s/\*\.json under"):
        call_command("evaluate", "longmemeval", "--data", str(data), "--variant", "s", stdout=io.StringIO(),
                     stderr=io.StringIO())


@pytest.mark.django_db
def test_a_current_value_is_lost_when_its_statement_is_though_a_memory_still_cites_its_turn(tenant, now):
    """A merge citing the current turn but dropping its sentence kept the turn and lost the value."""
    [_, commute] = load_commute()
    [turn] = ingest(tenant, [memory_input("Since the new bridge opened, my bike commute is down to 12 minutes. "
                                          "I love the canal.", user="lme", created_at=now - DAY,
                                          metadata={"turn": "bike-new:0"})], embed=False)
    merged = Memory.objects.create(tenant=tenant, user_id="lme", memory_type=MemoryType.SEMANTIC, created_at=now,
                                   content="I love the canal.", content_hash="merged",
                                   metadata={"source_type": "consolidated"})
    MemorySource.objects.create(memory=merged, source_id=turn, source_memory_id=turn, source_content_hash="turn")
    assert not longmemeval.current_lost(tenant.id, "lme", commute, lost(tenant.id, "lme"))

    Memory.objects.filter(id=turn).update(state=MemoryState.CONSOLIDATED)
    assert longmemeval.current_lost(tenant.id, "lme", commute, lost(tenant.id, "lme"))


def load_commute() -> list[longmemeval.Question]:
    return [longmemeval.question_from({"question_type": "knowledge-update", **q}) for q in QUESTIONS[:2]]
