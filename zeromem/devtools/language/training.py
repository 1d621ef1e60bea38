"""Fitting a head of one sentence judgement (`manage.py train_language`: chatter, change): a logistic regression on
MiniLM vectors.

1. The regularisation strength C is chosen among a few values by stratified k-fold cross-validation on the dev
   split's items of the judgement (fixed folds and solver: the same items give the same weights on every run);
2. the threshold is the one that classifies the out-of-fold probabilities best (ties: the one nearest 0.5), and the
   strict threshold the lowest at which at most STRICT_STATEMENT_LOSS of the noes are taken for a yes (for a caller
   a wrong yes costs more: a statement dropped as chatter, a fact retired as changed);
3. the model is refitted on all dev items; the test split only scores it, after the fact."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import sklearn
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict

from zeromem.devtools.evaluation.splits import SPLITS
from zeromem.devtools.language.labelled import Item, in_split_items
from zeromem.devtools.language.vectors import MINILM, MINILM_DIMENSION

C_GRID = (0.25, 1.0, 4.0, 16.0, 64.0)
FOLDS = 5
SEED = 0
THRESHOLDS = np.round(np.linspace(0.05, 0.95, 91), 2)
STRICT_STATEMENT_LOSS = 0.02
MEANINGS = {"chatter": "chatter", "change": "something the speaker had, did or was has ended or been replaced"}
DECIMALS = 6  # the weights as shipped: a few KB of JSON, and the same text on every run


@dataclass(frozen=True)
class HeadFit:
    coef: list[float]
    intercept: float
    threshold: float
    strict_threshold: float
    c: float
    cv_accuracy: float

    def probability(self, vectors: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(np.asarray(vectors, dtype=np.float64) @ np.array(self.coef) + self.intercept)))

    def accuracy(self, vectors: np.ndarray, labels: np.ndarray, *, strict: bool = False) -> float:
        threshold = self.strict_threshold if strict else self.threshold
        return float(np.mean((self.probability(vectors) >= threshold) == labels))

    def statements_lost(self, vectors: np.ndarray, labels: np.ndarray, *, strict: bool = False) -> float:
        """The share of noes (label False: statements, for chatter) taken for a yes."""
        threshold = self.strict_threshold if strict else self.threshold
        return float(np.mean(self.probability(vectors[~labels]) >= threshold)) if (~labels).any() else 0.0

    def weights(self, judgement: str, **provenance: Any) -> dict[str, Any]:
        return {"model": f"logistic regression: P({judgement}) = sigmoid(vector dot coef + intercept)",
                "meaning": MEANINGS[judgement],
                "embedder": MINILM, "dimension": MINILM_DIMENSION, "coef": self.coef, "intercept": self.intercept,
                "threshold": self.threshold,
                "strict_threshold": self.strict_threshold, "C": self.c, "dev_cv_accuracy": self.cv_accuracy,
                "sklearn": sklearn.__version__, **provenance}


def head_fit(vectors: np.ndarray, labels: np.ndarray) -> HeadFit:
    """The head fitted on these (dev) items; see the module docstring for the steps."""
    folds = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=SEED)
    scored = []
    for c in C_GRID:
        out_of_fold = cross_val_predict(_model(c), vectors, labels, cv=folds, method="predict_proba")[:, 1]
        threshold, accuracy = _best_threshold(out_of_fold, labels)
        scored.append((accuracy, -c, c, threshold, _strict_threshold(out_of_fold, labels)))
    accuracy, _, c, threshold, strict = max(scored)  # ties: the stronger regularisation (smaller C)
    model = _model(c).fit(vectors, labels)
    return HeadFit(coef=[round(float(w), DECIMALS) for w in model.coef_[0]],
                   intercept=round(float(model.intercept_[0]), DECIMALS), threshold=threshold,
                   strict_threshold=strict, c=c, cv_accuracy=round(accuracy, 4))


def _model(c: float) -> LogisticRegression:
    return LogisticRegression(C=c, solver="lbfgs", max_iter=5000, random_state=SEED)


def _strict_threshold(probabilities: np.ndarray, labels: np.ndarray) -> float:
    statements = probabilities[~labels]
    return float(next((t for t in THRESHOLDS if np.mean(statements >= t) <= STRICT_STATEMENT_LOSS), THRESHOLDS[-1]))


def _best_threshold(probabilities: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    accuracies = [float(np.mean((probabilities >= t) == labels)) for t in THRESHOLDS]
    best = max(range(len(THRESHOLDS)), key=lambda i: (accuracies[i], -abs(THRESHOLDS[i] - 0.5)))
    return float(THRESHOLDS[best]), accuracies[best]


@dataclass(frozen=True)
class Trained:
    fit: HeadFit
    dev_items: int
    test_items: int
    test_accuracy: float | None
    test_statements_lost: float | None
    test_strict_accuracy: float | None
    test_strict_statements_lost: float | None


def head_train(items: list[Item], vectors: dict[str, np.ndarray], judgement: str) -> Trained:
    """The head fitted on the dev split's items of the judgement and scored on the test split's."""
    judged = [item for item in items if item.judgement == judgement]
    (dev_x, dev_y), (test_x, test_y) = (_matrix(in_split_items(judged, split), vectors) for split in SPLITS)
    fit = head_fit(dev_x, dev_y)
    scored = len(test_y) > 0

    def figure(value: float) -> float | None:
        return round(value, 4) if scored else None

    return Trained(fit=fit, dev_items=len(dev_y), test_items=len(test_y),
                   test_accuracy=figure(fit.accuracy(test_x, test_y)),
                   test_statements_lost=figure(fit.statements_lost(test_x, test_y)),
                   test_strict_accuracy=figure(fit.accuracy(test_x, test_y, strict=True)),
                   test_strict_statements_lost=figure(fit.statements_lost(test_x, test_y, strict=True)))


def _matrix(items: list[Item], vectors: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    x = np.stack([vectors[item.texts[0]] for item in items]) if items else np.zeros((0, MINILM_DIMENSION))
    return x.astype(np.float64), np.array([bool(item.label) for item in items])
