"""The chatter head: a logistic regression on a sentence's MiniLM vector, answering how likely it is chatter
(a greeting, thanks, a reaction, a bare question: nothing a later question could ask about).

Its weights are package data (`chatter_head.json`, a few KB) fitted by `manage.py train_language` on the dev split of
the labelled language set; applying them needs numpy only. The vectors must be all-MiniLM-L6-v2's (384 dimensions,
L2-normalised, as `builtin:minilm` stores them): another embedder's vectors mean nothing to these weights."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

HEAD_PATH = Path(__file__).with_name("chatter_head.json")


@dataclass(frozen=True)
class ChatterHead:
    coef: np.ndarray
    intercept: float
    threshold: float  # a probability at or above it is chatter; chosen on the dev split for accuracy
    # Chosen on the dev split so that at most ~2 % of statements reach it: for a caller that drops what it calls
    # chatter (a statement lost costs more than chatter kept).
    strict_threshold: float

    def probability(self, vectors: np.ndarray) -> np.ndarray:
        vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
        if vectors.shape[1] != self.coef.shape[0]:
            raise ValueError(f"the chatter head reads {self.coef.shape[0]}-dimensional MiniLM vectors, "
                             f"got {vectors.shape[1]} dimensions")
        return 1.0 / (1.0 + np.exp(-(vectors @ self.coef + self.intercept)))

    def is_chatter(self, vectors: np.ndarray, *, strict: bool = False) -> np.ndarray:
        return self.probability(vectors) >= (self.strict_threshold if strict else self.threshold)


def head_load(path: Path) -> ChatterHead:
    fitted = json.loads(path.read_text())
    return ChatterHead(coef=np.array(fitted["coef"], dtype=np.float64), intercept=float(fitted["intercept"]),
                       threshold=float(fitted["threshold"]), strict_threshold=float(fitted["strict_threshold"]))


@lru_cache(maxsize=1)
def chatter_head() -> ChatterHead:
    """The shipped head, read once per process."""
    return head_load(HEAD_PATH)


def chatter_probability(vectors: np.ndarray) -> np.ndarray:
    """One probability of chatter per row of `vectors` (MiniLM vectors, one a row)."""
    return chatter_head().probability(vectors)
