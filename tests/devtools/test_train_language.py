"""The chatter head: `train_language` gives the same weights every run, the shipped weights were fitted on the set as
it stands, and the head tells plain chatter from plain statements it never saw."""

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
from zeromem.language.head import HEAD_PATH, chatter_head, chatter_probability

# None of these is in the labelled set.
CHATTER = ["Thank you so much, have a lovely weekend!", "Good morning everyone!", "See you later!",
           "What are you up to tonight?", "Take care!"]
STATEMENTS = ["My sister lives in Toronto.", "I moved to Seattle in June.", "Our database runs on PostgreSQL 16.",
              "I switched jobs, I'm a pharmacist at Walgreens now.", "The invoice total is $312."]


def _vectors(texts: list[str]) -> np.ndarray:
    vectors = minilm_vectors(texts, workers=1, cache_dir=Path(settings.ZEROMEMORY_MODEL_CACHE_DIR))
    return np.stack([vectors[text] for text in texts])


def test_the_shipped_head_reads_its_weights_and_tells_chatter_from_statements():
    head = chatter_head()
    chatter, statements = chatter_probability(_vectors(CHATTER)), chatter_probability(_vectors(STATEMENTS))
    assert (chatter >= head.threshold).all(), dict(zip(CHATTER, chatter, strict=True))
    assert (statements < head.threshold).all(), dict(zip(STATEMENTS, statements, strict=True))
    assert chatter.min() > statements.max()


def test_the_head_refuses_vectors_of_another_dimension():
    with pytest.raises(ValueError, match="384"):
        chatter_probability(np.zeros((2, 256)))


def test_the_shipped_weights_were_fitted_on_the_labelled_set_as_it_stands():
    shipped = json.loads(HEAD_PATH.read_text())
    assert shipped["labelled_sha256"] == labelled.digest(), "the labelled set changed: run manage.py train_language"
    assert len(shipped["coef"]) == shipped["dimension"] == 384
    assert 0 < shipped["threshold"] <= shipped["strict_threshold"] < 1
    assert HEAD_PATH.stat().st_size < 16_000


def test_training_twice_writes_the_same_weights(tmp_path: Path):
    outputs = [tmp_path / "first.json", tmp_path / "second.json"]
    figures = []
    for output in outputs:
        out = io.StringIO()
        call_command("train_language", "--output", str(output), "--json", stdout=out, stderr=io.StringIO())
        figures.append(json.loads(out.getvalue().strip().splitlines()[-1]))
    assert outputs[0].read_bytes() == outputs[1].read_bytes()
    assert figures[0] == figures[1] and figures[0]["dev_items"] > 200 and figures[0]["test_items"] > 200
    weights = json.loads(outputs[0].read_text())
    assert weights["labelled_sha256"] == labelled.digest() and weights["train_items"] == figures[0]["dev_items"]
