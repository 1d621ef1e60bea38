"""`manage.py evaluate language`: each reader's accuracy per judgement on one split of the labelled language set
(zeromem/devtools/language/labelled.jsonl), with the confusion of labels and answers.

Every sentence reaches the reader as it would in the product: a `Said` with its text, its date (the set's base date
minus the item's days ago) and its MiniLM vector. A reader that does not make a judgement (it raises
NotImplementedError) or cannot be loaded scores None for it: nothing is counted that was not answered."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zeromem.devtools.language import labelled
from zeromem.devtools.language.labelled import Item
from zeromem.devtools.language.vectors import minilm_vectors
from zeromem.language import JUDGEMENTS, Reader, Said
from zeromem.language.readers import READERS


@dataclass(frozen=True)
class Score:
    """One reader on one judgement: accuracy (None: not answered) and (label, answer) counts."""

    items: int
    accuracy: float | None = None
    confusion: Counter[tuple[str, str]] = field(default_factory=Counter)


def evaluate_language(*, items: Sequence[Item], readers: Mapping[str, Reader | None],
                      vectors: Mapping[str, list[float]]) -> dict[str, dict[str, Score]]:
    """{reader name: {judgement: Score}} over `items` (one split)."""
    groups = {judgement: [item for item in items if item.judgement == judgement] for judgement in JUDGEMENTS}
    return {name: {judgement: _score(reader, judgement, group, vectors) for judgement, group in groups.items()}
            for name, reader in readers.items()}


def figures(scores: Mapping[str, Mapping[str, Score]]) -> dict[str, dict[str, float | None]]:
    return {name: {judgement: score.accuracy for judgement, score in by_judgement.items()}
            for name, by_judgement in scores.items()}


def _score(reader: Reader | None, judgement: str, group: list[Item], vectors: Mapping[str, list[float]]) -> Score:
    if reader is None or not group:
        return Score(items=len(group))
    said = [item.said(vectors) for item in group]
    try:
        answers = _judge(reader, judgement, said)
    except NotImplementedError:
        return Score(items=len(group))
    labels = [_answer(item.label) for item in group]
    answers = [_answer(answer) for answer in answers]
    right = sum(label == answer for label, answer in zip(labels, answers, strict=True))
    return Score(items=len(group), accuracy=round(right / len(group), 4),
                 confusion=Counter(zip(labels, answers, strict=True)))


def _judge(reader: Reader, judgement: str, said: list[tuple[Said, ...]]) -> Sequence[Any]:
    ask: dict[str, Callable[[], Sequence[Any]]] = {
        "chatter": lambda: reader.chatter([s[0] for s in said]),
        "change": lambda: reader.change([s[0] for s in said]),
        "same_attribute": lambda: reader.same_attribute([(s[0], s[1]) for s in said]),
        "relation": lambda: reader.relation([(s[0], s[1]) for s in said]),
    }
    return ask[judgement]()


def _answer(value: object) -> str:
    return str(value).lower()


def evaluate_language_run(*, labelled_path: Path, locomo_path: Path, split: str, reader_names: Sequence[str],
                          workers: int, cache_dir: Path, report: Callable[[str], None]) -> dict[str, Any]:
    """`evaluate language`: 1. the split's items, 2. their sentences' MiniLM vectors (each text once), 3. each named
    reader's scores, confusion tables reported; the JSON figures returned."""
    everything = labelled.load(labelled_path, locomo_path=locomo_path, report=report)
    items = labelled.in_split_items(everything, split)
    texts = [text for item in items for text in item.texts]
    vectors = {text: vector.tolist() for text, vector in
               minilm_vectors(texts, workers=workers, cache_dir=cache_dir).items()}
    scores = evaluate_language(items=items, readers={name: _reader(name, report) for name in reader_names},
                               vectors=vectors)
    for name, by_judgement in scores.items():
        for judgement, score in by_judgement.items():
            report(_confusion_table(name, judgement, score))
    return {"split": split, "items": len(items), "items_total": len(everything), "readers": figures(scores)}


def _reader(name: str, report: Callable[[str], None]) -> Reader | None:
    try:
        return READERS[name]()
    except ImportError as missing:
        report(f"reader {name!r} is not available here ({missing}): its judgements score null")
        return None


def _confusion_table(name: str, judgement: str, score: Score) -> str:
    head = f"{name} / {judgement}: accuracy {score.accuracy} on {score.items} items"
    if score.accuracy is None:
        return f"{head} (not answered)"
    labels = sorted({label for label, _ in score.confusion} | {answer for _, answer in score.confusion})
    rows = [f"  {'label / answer':<18}" + "".join(f"{answer:>10}" for answer in labels)]
    rows += [f"  {label:<18}" + "".join(f"{score.confusion[(label, answer)]:>10}" for answer in labels)
             for label in labels]
    return "\n".join([head, *rows])
