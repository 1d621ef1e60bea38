"""The labelled language set: big enough, every judgement on both sides of the frozen split, no topic on both."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from zeromem.devtools.evaluation.splits import SPLITS, split_of
from zeromem.devtools.language import labelled
from zeromem.language import JUDGEMENTS, KEEPS, REPLACES

RAW = [json.loads(line) for line in labelled.LABELLED_PATH.read_text().splitlines() if line.strip()]


def test_the_set_holds_at_least_600_items_with_unique_ids():
    assert len(RAW) >= 600
    assert len({raw["id"] for raw in RAW}) == len(RAW)


def test_every_judgement_has_items_of_each_label_in_both_splits():
    items = labelled.load(report=lambda message: None)
    counts = Counter((item.judgement, split_of(item.topic), str(item.label)) for item in items)
    for judgement in JUDGEMENTS:
        for split in SPLITS:
            # The set labels relations replaces or keeps (a contradiction needs two statements said together).
            for label in (("True", "False") if judgement != "relation" else (REPLACES, KEEPS)):
                assert counts[(judgement, split, label)] >= 20, (judgement, split, label)


def test_a_topic_lies_in_one_split_and_the_set_spans_many_topics():
    topics = {raw.get("topic") or raw["sample_id"] for raw in RAW}
    assert len(topics) >= 40
    by_split = {split: {topic for topic in topics if split_of(topic) == split} for split in SPLITS}
    assert by_split["dev"] and by_split["test"] and not by_split["dev"] & by_split["test"]


def test_pairs_are_older_then_newer():
    relations = [raw for raw in RAW if raw["judgement"] == "relation"]
    assert relations and all(raw["older_days_ago"] >= raw["newer_days_ago"] >= 0 for raw in relations)


def test_a_locomo_item_of_a_test_split_conversation_is_refused(tmp_path: Path):
    test_conversation = next(f"conv-{n}" for n in range(1, 100) if split_of(f"conv-{n}") == "test")
    path = tmp_path / "labelled.jsonl"
    path.write_text(json.dumps({"id": "x", "source": "locomo", "sample_id": test_conversation, "dia_id": "D1:1",
                                "judgement": "chatter", "label": True}) + "\n")
    with pytest.raises(ValueError, match="test split"):
        labelled.load(path, locomo_path=tmp_path / "absent.json", report=lambda message: None)


def test_locomo_items_are_left_out_with_a_message_when_the_data_is_absent(tmp_path: Path):
    dev_conversation = next(f"conv-{n}" for n in range(1, 100) if split_of(f"conv-{n}") == "dev")
    path = tmp_path / "labelled.jsonl"
    path.write_text("\n".join(json.dumps(raw) for raw in [
        {"id": "a", "source": "locomo", "sample_id": dev_conversation, "dia_id": "D1:1", "judgement": "chatter",
         "label": True},
        {"id": "b", "topic": "rent", "judgement": "chatter", "text": "My rent is $1,400.", "label": False}]) + "\n")
    messages: list[str] = []
    items = labelled.load(path, locomo_path=tmp_path / "absent.json", report=messages.append)
    assert [item.id for item in items] == ["b"]
    assert any("not found" in message for message in messages) and any("1 LoCoMo" in m for m in messages)
