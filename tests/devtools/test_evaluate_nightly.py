"""`manage.py evaluate nightly` on a tiny conversation in LoCoMo's schema (invented sentences): its nights fall
where beat's schedule puts them, each night's run folds what earlier nights wrote, and idle nights on a store that
no longer changes change nothing."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from consolidation.models import ConsolidationRun, LedgerEntry
from tests.devtools.test_evaluate_longmemeval import QUESTIONS as LME_QUESTIONS
from tests.devtools.test_evaluate_longmemeval import SOUP, day, said
from zeromem.devtools.evaluation.nightly import HEADLINE, Beat, Snapshot, calendar, changes

BEAT = Beat.of()
WINDOW = timedelta(hours=48)
SATURDAY_AFTERNOON = datetime(2023, 5, 6, 13, 56, tzinfo=UTC)

# Five sessions, two of them on one day; each says again, in other words, what Mel's dog is and does, beside filler.
SESSIONS = [
    ("1:56 pm on 6 May, 2023", ["Mel: I adopted a golden retriever puppy called Max from the shelter last week.",
                                "Caroline: A golden retriever! What is Max like?",
                                "Mel: Max loves the beach and chases the waves every morning.",
                                "Caroline: I started pottery classes at the community centre on Tuesdays."]),
    ("10:12 am on 9 May, 2023", ["Mel: Max, my golden retriever from the shelter, learned to sit in two days.",
                                 "Caroline: That is quick for a puppy.",
                                 "Mel: Every morning Max runs on the beach and chases the waves.",
                                 "Caroline: My pottery class made bowls on Tuesday at the community centre."]),
    ("7:40 pm on 12 May, 2023", ["Mel: Max, the golden retriever I adopted from the shelter, now sits and stays.",
                                 "Caroline: Does he still go to the beach?",
                                 "Mel: Yes, Max chases the waves on the beach every single morning.",
                                 "Caroline: At pottery on Tuesday I glazed the bowls at the community centre."]),
    ("9:05 am on 16 May, 2023", ["Mel: We signed Max up for agility classes on Saturdays.",
                                 "Caroline: Agility sounds like fun for a retriever."]),
    # Listed last, said on the evening of the first day: turns arrive by date, whatever their order in the data.
    ("8:15 pm on 6 May, 2023", ["Mel: Max, our golden retriever puppy from the shelter, loves the beach and the waves.",
                                "Caroline: Pottery at the community centre on Tuesdays is my favourite class."]),
]
QA = [{"question": "What breed is Mel's dog?", "answer": "golden retriever", "evidence": ["D1:1"], "category": 4},
      {"question": "Where does Max run in the mornings?", "answer": "the beach", "evidence": ["D2:3"], "category": 4},
      {"question": "When does Caroline go to pottery?", "answer": "Tuesdays", "evidence": ["D1:4"], "category": 4}]


def locomo_json(path: Path) -> Path:
    conversation: dict[str, Any] = {"speaker_a": "Mel", "speaker_b": "Caroline"}
    for number, (when, lines) in enumerate(SESSIONS, 1):
        conversation[f"session_{number}_date_time"] = when
        conversation[f"session_{number}"] = [
            {"speaker": line.split(":")[0], "dia_id": f"D{number}:{index}", "text": line.split(": ", 1)[1]}
            for index, line in enumerate(lines, 1)]
    path.write_text(json.dumps([{"sample_id": "tiny", "conversation": conversation, "qa": QA}]))
    return path


def test_the_nights_are_the_one_after_a_session_day_the_one_past_the_recency_window_and_the_next_reflection():
    nights = calendar([SATURDAY_AFTERNOON, SATURDAY_AFTERNOON + timedelta(hours=2)], window=WINDOW, beat=BEAT)

    assert nights == [datetime(2023, 5, 7, 3, 30, tzinfo=UTC),  # Sunday: beat's 03:30 clustering, 04:45 reflection
                      datetime(2023, 5, 9, 3, 30, tzinfo=UTC),  # the first night both turns are 48 h old
                      datetime(2023, 5, 14, 3, 30, tzinfo=UTC)]  # the next Sunday
    assert BEAT.reflects(nights[0]) and not BEAT.reflects(nights[1])


def test_a_change_is_a_memory_created_retired_or_rewritten_or_a_relation_written():
    before = Snapshot({"a": ("raw", "Max loves the beach."), "b": ("raw", "Max sits.")}, relations=1)

    assert changes(before, before) == 0
    assert changes(before, Snapshot({"a": ("archived", "Max loves the beach."), "b": ("raw", "Max sits and stays."),
                                     "c": ("raw", "new")}, relations=2)) == 4


@pytest.mark.django_db(transaction=True)
def test_a_replay_folds_what_earlier_nights_wrote_and_its_idle_nights_change_nothing(tmp_path):
    out = io.StringIO()
    call_command("evaluate", "nightly", "--path", str(locomo_json(tmp_path / "tiny.json")), "--idle-nights", "3",
                 "--json", stdout=out, stderr=io.StringIO())
    result = json.loads(out.getvalue().strip().splitlines()[-1])

    assert set(HEADLINE) - {"current_above_stale_before", "current_above_stale_after"} <= set(result)
    assert result["nights"] == len(result["per_night"]) > 3 and result["questions"] == len(QA)
    assert [row["arrived"] for row in result["per_night"]][-1] == sum(len(lines) for _, lines in SESSIONS)
    runs = ConsolidationRun.objects.filter(kind="clustering").order_by("created_at")
    assert all(run.trigger == "beat" and not run.force for run in runs)
    assert _extended_by_a_later_night()
    assert result["idle_nights"] == 3 and result["idle_changes"] == 0


def _extended_by_a_later_night() -> bool:
    """A later night's run folded turns into a semantic memory an earlier night wrote (a merge into a base): the
    evening session of 6 May is the user's newest until 9 May, so it waits a night longer than the morning's."""
    return LedgerEntry.objects.filter(action="merge", run__kind="clustering", inputs__base__isnull=False).exists()


@pytest.mark.django_db(transaction=True)
def test_longmemeval_questions_are_replayed_too_and_report_current_above_stale(tmp_path):
    (tmp_path / "oracle").mkdir()
    for number, question in enumerate(LME_QUESTIONS):
        (tmp_path / "oracle" / f"{number}_{question['question_id']}.json").write_text(json.dumps(question))
    out = io.StringIO()
    call_command("evaluate", "nightly", "--data", "longmemeval", "--path", str(tmp_path), "--idle-nights", "2",
                 "--json", stdout=out, stderr=io.StringIO())
    result = json.loads(out.getvalue().strip().splitlines()[-1])

    assert set(HEADLINE) <= set(result) and (result["users"], result["questions"]) == (2, 2)
    assert result["current_above_stale_before"] in (0.0, 1.0)  # over the one question with a stale turn
    assert result["current_above_stale_after"] in (0.0, 1.0)
    assert result["idle_changes"] == 0


@pytest.mark.django_db(transaction=True)
def test_a_value_a_later_session_changes_is_counted_and_listed_as_a_supersede(tmp_path):
    (tmp_path / "oracle").mkdir()
    rent = {"question_id": "r3nt", "question": "How much is my rent?", "answer": "$1,550",
            "question_type": "knowledge-update", "question_date": day(2023, 8, 1),
            # A later session, so the update's is no longer the one going on (clustering leaves that one be).
            "haystack_session_ids": ["old", "new", "soup"],
            "haystack_dates": [day(2023, 3, 1), day(2023, 6, 20), day(2023, 7, 10)],
            "haystack_sessions": [said("My rent is $1,400.", "Good to know.", evidence=True),
                                  said("The landlord raised my rent to $1,550.", "That is a big jump.", evidence=True),
                                  SOUP],
            "answer_session_ids": ["old", "new"]}
    (tmp_path / "oracle" / "3_0_r3nt.json").write_text(json.dumps(rent))
    out = io.StringIO()
    call_command("evaluate", "nightly", "--data", "longmemeval", "--path", str(tmp_path), "--idle-nights", "2",
                 "--json", stdout=out, stderr=io.StringIO())
    result = json.loads(out.getvalue().strip().splitlines()[-1])

    assert result["supersedes"] == 1 and result["supersedes_per_1000_turns"] == round(1000 / 6, 2)  # of the 6 turns
    assert result["supersedes_list"] == [{"user_id": "lme-r3nt", "older": "My rent is $1,400.",
                                          "newer": "The landlord raised my rent to $1,550."}]
    assert [row["supersedes"] for row in result["per_night"]][0] == 0  # the night after the first session
    assert result["per_night"][-1]["supersedes"] == 1
