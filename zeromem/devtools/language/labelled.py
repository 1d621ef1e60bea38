"""The labelled language set: one JSON object a line, each a judgement a reader makes, with the answer.

- chatter: `text`, `label` true when the sentence says nothing a later question could ask about;
- change: `text`, `label` true when the sentence says that something the speaker had, did or was has ended or been
  replaced;
- same_attribute: `older`, `newer`, `label` true when both speak of the same attribute (modifiers included);
- relation: `older`, `newer`, `older_days_ago`, `newer_days_ago`, `label` "replaces" or "keeps".

Every item has a `topic`; the frozen dev/test split is by topic (`splits.split_of`), so sentences about one thing
never sit on both sides. An item may instead point at a LoCoMo turn (`"source": "locomo"`, `sample_id`, `dia_id`):
its text is read from the evaluation data at use (never copied here) and its topic is the conversation's sample_id,
so it falls in the same split as the conversation. Pure: no Django."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from zeromem.devtools.evaluation import locomo
from zeromem.devtools.evaluation.splits import in_split, split_of
from zeromem.language import JUDGEMENTS, RELATIONS, Said

LABELLED_PATH = Path(__file__).with_name("labelled.jsonl")
# "Now" for every item: an item's sentences are dated this many days before it (only their order and gap matter).
BASE_DATE = datetime(2026, 1, 1, 12, tzinfo=UTC)
SENTENCE_JUDGEMENTS = ("chatter", "change")  # of one sentence (`text`); the others judge a pair


@dataclass(frozen=True)
class Item:
    id: str
    topic: str
    judgement: str
    label: bool | str
    texts: tuple[str, ...]  # chatter, change: (text,); pairs: (older, newer)
    days_ago: tuple[int, ...] = (0, 0)
    source: str = "written"  # or "locomo": a LoCoMo turn, its text read from the evaluation data

    def said(self, vectors: Mapping[str, list[float]]) -> tuple[Said, ...]:
        return tuple(Said(text, BASE_DATE - timedelta(days=days), vectors.get(text))
                     for text, days in zip(self.texts, self.days_ago, strict=False))


def digest(path: Path = LABELLED_PATH) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load(path: Path = LABELLED_PATH, *, locomo_path: Path = locomo.DEFAULT_PATH,
         report: Callable[[str], None] = print) -> list[Item]:
    """Every item of the set; LoCoMo items get their turn's text, or are skipped (reported) when the data is absent."""
    raws = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    turns = _locomo_turns(locomo_path, report) if any(raw.get("source") == "locomo" for raw in raws) else {}
    items = [item for raw in raws if (item := _item(raw, turns)) is not None]
    if skipped := len(raws) - len(items):
        report(f"{skipped} LoCoMo items skipped: no turn text at {locomo_path}")
    return items


def in_split_items(items: list[Item], split: str) -> list[Item]:
    return in_split(items, split, key=lambda item: item.topic)


def _locomo_turns(path: Path, report: Callable[[str], None]) -> dict[tuple[str, str], str]:
    if not locomo.available(path):
        report(f"LoCoMo data not found at {path}: its labelled turns are left out")
        return {}
    return {(c.sample_id, t.dia_id): t.text for c in locomo.load(path) for t in c.turns}


def _item(raw: dict[str, Any], turns: dict[tuple[str, str], str]) -> Item | None:
    judgement, label = raw["judgement"], raw["label"]
    if judgement not in JUDGEMENTS or not (isinstance(label, bool) or label in RELATIONS):
        raise ValueError(f"item {raw.get('id')!r}: unknown judgement {judgement!r} or label {label!r}")
    if raw.get("source") == "locomo":
        if split_of(raw["sample_id"]) != "dev":
            raise ValueError(f"item {raw['id']!r}: LoCoMo's {raw['sample_id']} is in the test split, never labelled")
        text = turns.get((raw["sample_id"], raw["dia_id"]))
        return None if text is None else Item(raw["id"], raw["sample_id"], judgement, label, (text,), source="locomo")
    if judgement in SENTENCE_JUDGEMENTS:
        return Item(raw["id"], raw["topic"], judgement, label, (raw["text"],))
    days = (raw.get("older_days_ago", 0), raw.get("newer_days_ago", 0))
    return Item(raw["id"], raw["topic"], judgement, label, (raw["older"], raw["newer"]), days)
