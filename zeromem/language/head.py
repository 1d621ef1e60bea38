"""The learned heads: each a logistic regression on a sentence's MiniLM vector, answering how likely the sentence is
what the head tells —
- `chatter_head`: chatter (a greeting, thanks, a reaction, a bare question: nothing a later question could ask about);
- `change_head`: a change (something the speaker had, did or was has ended or been replaced: "I gave up hot yoga.").

Their weights are package data (`chatter_head.json`, `change_head.json`, a few KB each) fitted by `manage.py
train_language` on the dev split of the labelled language set; applying them needs numpy only. The vectors must be
all-MiniLM-L6-v2's (384 dimensions, L2-normalised, as `builtin:minilm` stores them): another embedder's vectors mean
nothing to these weights."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

HEADS_DIR = Path(__file__).parent
CHATTER_HEAD_PATH = HEADS_DIR / "chatter_head.json"
CHANGE_HEAD_PATH = HEADS_DIR / "change_head.json"


@dataclass(frozen=True)
class Head:
    coef: np.ndarray
    intercept: float
    threshold: float  # a probability at or above it is a yes; chosen on the dev split for accuracy
    # Chosen on the dev split so that at most ~2 % of the noes reach it: for a caller a wrong yes costs more than a
    # missed one (a statement dropped as chatter, a fact retired as changed).
    strict_threshold: float

    def probability(self, vectors: np.ndarray) -> np.ndarray:
        vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
        if vectors.shape[1] != self.coef.shape[0]:
            raise ValueError(f"the head reads {self.coef.shape[0]}-dimensional MiniLM vectors, "
                             f"got {vectors.shape[1]} dimensions")
        return 1.0 / (1.0 + np.exp(-(vectors @ self.coef + self.intercept)))

    def says(self, vectors: np.ndarray, *, strict: bool = False) -> np.ndarray:
        return self.probability(vectors) >= (self.strict_threshold if strict else self.threshold)


def head_load(path: Path) -> Head:
    fitted = json.loads(path.read_text())
    return Head(coef=np.array(fitted["coef"], dtype=np.float64), intercept=float(fitted["intercept"]),
                threshold=float(fitted["threshold"]), strict_threshold=float(fitted["strict_threshold"]))


@lru_cache(maxsize=1)
def chatter_head() -> Head:
    """The shipped chatter head, read once per process."""
    return head_load(CHATTER_HEAD_PATH)


@lru_cache(maxsize=1)
def change_head() -> Head:
    """The shipped change head, read once per process."""
    return head_load(CHANGE_HEAD_PATH)


def chatter_probability(vectors: np.ndarray) -> np.ndarray:
    """One probability of chatter per row of `vectors` (MiniLM vectors, one a row)."""
    return chatter_head().probability(vectors)
