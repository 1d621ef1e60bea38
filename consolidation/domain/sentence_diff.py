"""What a change did to its sources, sentence by sentence (the review queue's diff). Pure: texts in, a list of
sentences with their fate out.

Each source sentence is aligned with the result sentence most like it (a character-level similarity of the two
normalised sentences, so a merge that anchored "yesterday" to a date or dropped a speaker still counts as keeping
the sentence). Several source sentences may align with one result sentence: a merge keeps one copy of a repeated
statement. A source sentence the change retired (a superseded statement, a replaced claim) is `retired` whatever
the result says; one aligned with no result sentence was `dropped`; a result sentence no source sentence aligns
with was `added`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import StrEnum

from zeromem.core.domain.text import normalised_sentence, sentences

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


class Fate(StrEnum):
    KEPT = "kept"
    DROPPED = "dropped"
    ADDED = "added"
    RETIRED = "retired"


@dataclass(frozen=True)
class SentenceChange:
    fate: Fate
    text: str  # the source's sentence (the result's for an added one)
    now: str = ""  # a kept sentence as the result words it, when the wording changed


def split_sentences(text: str) -> list[str]:
    """The sentences of a memory's text; a line break ends a sentence too (merges join statements by lines)."""
    return [sentence for line in text.splitlines() for sentence in sentences(line)]


def similarity(source: str, result: str) -> float:
    """1.0 for the same sentence (case, spacing, speaker and final punctuation aside), less as the wording parts;
    0.0 when the result lost a number of the source ("is 3" is not "is 8", however alike the rest reads). The
    result may add numbers: a merge anchors "yesterday" to its date."""
    first, second = normalised_sentence(source), normalised_sentence(result)
    if first == second:
        return 1.0
    if not set(_NUMBER.findall(first)) <= set(_NUMBER.findall(second)):
        return 0.0
    return SequenceMatcher(None, first, second, autojunk=False).ratio()


def sentence_diff(sources: Sequence[str], results: Sequence[str], retired: Sequence[str] = (), *,
                  similar: float) -> list[SentenceChange]:
    """The source sentences in order, each kept, dropped or retired, then the result sentences that were added.
    `similar`: the similarity from which two sentences are the same statement reworded."""
    before = [s for text in sources for s in split_sentences(text)]
    after = [s for text in results for s in split_sentences(text)]
    gone = [s for text in retired for s in split_sentences(text)]
    changes, matched = [], set()
    for sentence in before:
        if _best(sentence, gone, similar) is not None:
            changes.append(SentenceChange(Fate.RETIRED, sentence))
            continue
        index = _best(sentence, after, similar)
        if index is None:
            changes.append(SentenceChange(Fate.DROPPED, sentence))
            continue
        matched.add(index)
        reworded = normalised_sentence(after[index]) != normalised_sentence(sentence)
        changes.append(SentenceChange(Fate.KEPT, sentence, after[index] if reworded else ""))
    return changes + [SentenceChange(Fate.ADDED, s) for i, s in enumerate(after) if i not in matched]


def _best(sentence: str, candidates: Sequence[str], similar: float) -> int | None:
    """The index of the candidate most like `sentence`, when it is at least `similar`."""
    scored = [(similarity(sentence, candidate), index) for index, candidate in enumerate(candidates)]
    score, index = max(scored, default=(0.0, -1))
    return index if score >= similar else None
