"""`evaluate language`: each reader's accuracy per judgement on a split of the labelled set, a judgement a reader
does not make scored null, the JSON as the last stdout line."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from django.core.management import call_command

from zeromem.devtools.evaluation.language import evaluate_language, figures
from zeromem.devtools.evaluation.splits import split_of
from zeromem.devtools.language import labelled
from zeromem.language import Said

DEV_TOPIC = next(topic for topic in ("pets", "band", "commute", "diet") if split_of(topic) == "dev")
TEST_TOPIC = next(topic for topic in ("rent", "smoking", "running", "sleep") if split_of(topic) == "test")


def _small_set(path: Path) -> Path:
    """Two topics of the real set, one on each side of the split."""
    lines = [line for line in labelled.LABELLED_PATH.read_text().splitlines()
             if json.loads(line).get("topic") in (DEV_TOPIC, TEST_TOPIC)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_command_scores_the_rules_reader_on_every_judgement_of_the_split(tmp_path: Path):
    out, err = io.StringIO(), io.StringIO()
    call_command("evaluate", "language", "--split", "test", "--reader", "rules", "--json",
                 "--labelled", str(_small_set(tmp_path / "small.jsonl")), stdout=out, stderr=err)
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    items = labelled.load(tmp_path / "small.jsonl", report=lambda message: None)
    assert result["split"] == "test" and result["items_total"] == len(items)
    assert result["items"] == sum(item.topic == TEST_TOPIC for item in items) < len(items)
    assert set(result["readers"]) == {"rules"}
    assert set(result["readers"]["rules"]) == {"chatter", "change", "same_attribute", "relation"}
    judged = {item.judgement for item in items if item.topic == TEST_TOPIC}  # a judgement with no items scores null
    assert {j for j, accuracy in result["readers"]["rules"].items() if accuracy is not None} == judged
    assert all(0 <= result["readers"]["rules"][judgement] <= 1 for judgement in judged)
    assert "rules / relation: accuracy" in err.getvalue() and "label / answer" in err.getvalue()


class _ChatterOnly:
    """A reader that makes one judgement and answers every sentence "chatter"."""

    name = "chatter-only"

    def __init__(self) -> None:
        self.seen: list[Said] = []

    def chatter(self, said: Sequence[Said]) -> list[bool]:
        self.seen += said
        return [True] * len(said)

    def same_attribute(self, pairs: Sequence[tuple[Said, Said]]) -> list[bool]:
        raise NotImplementedError

    def relation(self, pairs: Sequence[tuple[Said, Said]]) -> list[str]:
        raise NotImplementedError


def test_a_judgement_a_reader_does_not_make_scores_null_and_sentences_carry_dates_and_vectors():
    items = [labelled.Item("a", "t", "chatter", True, ("Thanks!",)),
             labelled.Item("b", "t", "chatter", False, ("My rent is $1,400.",)),
             labelled.Item("c", "t", "relation", "replaces", ("I live in Ohio.", "I moved to Utah."), (30, 2))]
    reader = _ChatterOnly()
    scores = evaluate_language(items=items, readers={"chatter-only": reader, "absent": None},
                               vectors={"Thanks!": [1.0, 0.0], "My rent is $1,400.": [0.0, 1.0]})
    assert figures(scores) == {
        "chatter-only": {"chatter": 0.5, "change": None, "same_attribute": None, "relation": None},
        "absent": {"chatter": None, "change": None, "same_attribute": None, "relation": None}}
    assert [s.vector for s in reader.seen] == [[1.0, 0.0], [0.0, 1.0]]
    older, newer = items[2].said({})
    assert newer.at - older.at == timedelta(days=28) and newer.at < labelled.BASE_DATE
