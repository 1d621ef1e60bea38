"""Reader for the LoCoMo evaluation data in ../shared/eval/locomo/ (read-only, never copied into the repo).
No Django import: plain data in, plain data out."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

DEFAULT_PATH = Path(__file__).resolve().parents[4] / "shared" / "eval" / "locomo" / "locomo10.json"
_SESSION = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
# A session gives one date and time: its turns are dated this far apart in the order they were said (as the
# LongMemEval reader does), so nothing downstream has to guess the order of turns that share a timestamp. The
# latest session starts at 22:00 with 19 turns: no session's turns cross into the next day.
TURN_STEP = timedelta(seconds=10)


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    session: int
    text: str  # "<speaker>: <text>" plus " [shares image: <caption>]" (ARCHITECTURE.md, "Quality")
    at: datetime


@dataclass(frozen=True)
class Question:
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def turn_text(raw: dict[str, str]) -> str:
    text = f"{raw['speaker']}: {raw['text']}"
    caption = raw.get("blip_caption")
    return f"{text} [shares image: {caption}]" if caption else text


def session_time(value: str) -> datetime:
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalise_evidence(values: list[str]) -> list[str]:
    """'D8:6; D9:17' → ['D8:6', 'D9:17']; 'D:11:26' → ['D11:26']; 'D30:05' → ['D30:5']."""
    return [f"D{int(s)}:{int(i)}" for value in values for s, i in _DIA_ID.findall(value)]


def _turns(conversation: dict[str, object]) -> list[Turn]:
    turns = []
    for key, value in conversation.items():
        match = _SESSION.match(key)
        if not match or not isinstance(value, list):
            continue
        start = session_time(str(conversation[f"{key}_date_time"]))
        turns += [Turn(dia_id=t["dia_id"], speaker=t["speaker"], session=int(match.group(1)),
                       text=turn_text(t), at=start + TURN_STEP * position) for position, t in enumerate(value)]
    return sorted(turns, key=lambda t: (t.session, int(t.dia_id.split(":")[1])))


def _questions(qa: list[dict[str, Any]], known: set[str]) -> list[Question]:
    questions = []
    for item in qa:
        if "answer" not in item:
            continue  # category 5 (adversarial) carries adversarial_answer only
        evidence = tuple(e for e in normalise_evidence([str(v) for v in item.get("evidence", [])]) if e in known)
        questions.append(Question(question=str(item["question"]), answer=str(item["answer"]),
                                  category=int(str(item["category"])), evidence=evidence))
    return questions


def load(path: Path = DEFAULT_PATH) -> list[Conversation]:
    samples = json.loads(path.read_text())
    conversations: list[Conversation] = []
    for sample in samples:
        conv = sample["conversation"]
        turns = _turns(conv)
        conversations.append(Conversation(
            sample_id=str(sample.get("sample_id", len(conversations))),
            speakers=(conv["speaker_a"], conv["speaker_b"]), turns=tuple(turns),
            questions=tuple(_questions(sample["qa"], {t.dia_id for t in turns}))))
    return conversations


def available(path: Path = DEFAULT_PATH) -> bool:
    return path.is_file()
