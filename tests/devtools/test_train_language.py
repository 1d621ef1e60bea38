"""The learned heads (chatter, change): `train_language` gives the same weights every run, the shipped weights were
fitted on the set as it stands, and each head tells plain cases it never saw apart."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command

from zeromem.devtools.language import labelled
from zeromem.devtools.language.vectors import minilm_vectors
from zeromem.language.head import CHANGE_HEAD_PATH, CHATTER_HEAD_PATH, change_head, chatter_head, chatter_probability

# None of these is in the labelled set.
CHATTER = ["Thank you so much, have a lovely weekend!", "Good morning everyone!", "See you later!",
           "What are you up to tonight?", "Take care!"]
STATEMENTS = ["My sister lives in Toronto.", "I moved to Seattle in June.", "Our database runs on PostgreSQL 16.",
              "I switched jobs, I'm a pharmacist at Walgreens now.", "The invoice total is $312."]
CHANGES = ["I quit the hiking club in May.", "We sold our camper van.", "I stopped taking the night bus to work.",
           "My wife and I split up last year.", "We shut down the old mail server."]
STANDING = ["I hike with the club every Sunday.", "Our camper van sleeps four.", "The night bus was late again.",
            "My wife and I went to the coast.", "The mail server handles 2,000 messages a day."]


def _vectors(texts: list[str]) -> np.ndarray:
    vectors = minilm_vectors(texts, workers=1, cache_dir=Path(settings.ZEROMEMORY_MODEL_CACHE_DIR))
    return np.stack([vectors[text] for text in texts])


def test_the_shipped_head_reads_its_weights_and_tells_chatter_from_statements():
    head = chatter_head()
    chatter, statements = chatter_probability(_vectors(CHATTER)), chatter_probability(_vectors(STATEMENTS))
    assert (chatter >= head.threshold).all(), dict(zip(CHATTER, chatter, strict=True))
    assert (statements < head.threshold).all(), dict(zip(STATEMENTS, statements, strict=True))
    assert chatter.min() > statements.max()


def test_the_shipped_change_head_tells_a_change_from_what_still_holds():
    head = change_head()
    changes, standing = head.probability(_vectors(CHANGES)), head.probability(_vectors(STANDING))
    assert (changes >= head.threshold).all(), dict(zip(CHANGES, changes, strict=True))
    assert (standing < head.threshold).all(), dict(zip(STANDING, standing, strict=True))


def test_the_head_refuses_vectors_of_another_dimension():
    with pytest.raises(ValueError, match="384"):
        chatter_probability(np.zeros((2, 256)))


@pytest.mark.parametrize("path", [CHATTER_HEAD_PATH, CHANGE_HEAD_PATH])
def test_the_shipped_weights_were_fitted_on_the_labelled_set_as_it_stands(path: Path):
    shipped = json.loads(path.read_text())
    assert shipped["labelled_sha256"] == labelled.digest(), "the labelled set changed: run manage.py train_language"
    assert len(shipped["coef"]) == shipped["dimension"] == 384
    assert 0 < shipped["threshold"] <= shipped["strict_threshold"] < 1
    assert path.stat().st_size < 16_000


def test_training_twice_writes_the_same_weights(tmp_path: Path):
    outputs = [tmp_path / "first", tmp_path / "second"]
    figures = []
    for output in outputs:
        output.mkdir()
        out = io.StringIO()
        call_command("train_language", "--output-dir", str(output), "--json", stdout=out, stderr=io.StringIO())
        figures.append(json.loads(out.getvalue().strip().splitlines()[-1]))
    assert figures[0] == figures[1]
    assert figures[0]["chatter"]["dev_items"] > 200 and figures[0]["chatter"]["test_items"] > 200
    assert figures[0]["change"]["dev_items"] > 100 and figures[0]["change"]["test_items"] > 50
    for head in ("chatter", "change"):
        first, second = (output / f"{head}_head.json" for output in outputs)
        assert first.read_bytes() == second.read_bytes()
        weights = json.loads(first.read_text())
        assert weights["labelled_sha256"] == labelled.digest()
        assert weights["train_items"] == figures[0][head]["dev_items"]
    # What the package ships is what the command writes.
    assert (outputs[0] / "change_head.json").read_bytes() == CHANGE_HEAD_PATH.read_bytes()
    assert (outputs[0] / "chatter_head.json").read_bytes() == CHATTER_HEAD_PATH.read_bytes()
