"""Do two statements about one scope disagree, and which one wins? Pure; no Django import.

A statement splits into its *values* (numbers, times, dates, names, negation) and its *attribute*: the content
words left once the values are removed. Two statements contradict when they share a subject (attribute words
or names both mention) and their values differ:
- the newer one supersedes the older when it is dated later (by at least `min_gap`) and either says so (an
  update cue: "now", "changed", "moved … to", "upgraded", "gave up", …) or states the very same attribute
  (attribute overlap >= `same_attribute`);
- statements made at the same time, or whose attributes only partly overlap, are flagged for review;
- an addition cue ("also", "too", "as well", "another") or no shared subject means both can be true.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import lru_cache

from consolidation.domain.merging import is_low_signal, sentences
from zeromem.core.domain.entities import extract_entities
from zeromem.core.domain.text import STATEMENT_STOP_WORDS, split_speaker, starts_with_digit, statement_tokens

SUPERSEDE, CONTRADICTS, COMPATIBLE = "supersede", "contradicts", "compatible"

# Strong cues say a value was replaced; weak ones ("now", "new") only count when the older value is gone.
_UPDATE = re.compile(
    r"\b(?:no longer|anymore|any more|moved|switched|upgraded|downgraded|bumped|raised|lowered|increased|"
    r"decreased|replaced|instead|gave up|given up|stopped|quit|finished|is up to|is down to|went up|went down|"
    r"from .+ to|off .+ to|used to|not anymore|changed)\b", re.I)
_ABANDON = re.compile(r"\b(?:gave up|given up|stopped|quit|no longer|not anymore|instead|replaced|switched)\b", re.I)
_WEAK_UPDATE = re.compile(r"\b(?:now|new|these days|updated|started|currently)\b", re.I)
_ADDITION = re.compile(r"\b(?:also|too|as well|another|additionally|in addition|besides)\b", re.I)
_NEGATION = re.compile(r"\b(?:not|no|never|don't|doesn't|didn't|isn't|aren't|wasn't|won't|can't|cannot)\b", re.I)
_CUE_WORDS = frozenset([
    "now", "longer", "anymore", "changed", "change", "moved", "switched", "upgraded", "downgraded", "bumped",
    "raised", "lowered", "increased", "decreased", "replaced", "instead", "gave", "given", "stopped", "quit",
    "finished", "new", "updated", "went", "used", "started",
])


@dataclass(frozen=True)
class Statement:
    """A memory's text parsed once (the job judges many pairs per memory)."""

    at: datetime
    values: frozenset[str]
    name_words: frozenset[str]  # words of the names, so "Dune" and "Finished Dune" share a subject
    attribute: frozenset[str]
    negated: bool
    updates: bool  # says that something was replaced
    maybe_updates: bool  # "now", "new": an update only if the older value is gone
    abandons: bool  # "gave up", "stopped": the older subject is over, even without values
    adds: bool  # says that something is true as well

    @classmethod
    def parse(cls, text: str, at: datetime) -> Statement:
        names = frozenset(e.lower() for e in extract_entities(text) if not starts_with_digit(e))
        name_words = frozenset(w for name in names for w in name.split())
        words = statement_tokens(text)
        # "don't quit" is no update cue; a negation that flips is judged as a changed value instead.
        negated = bool(_NEGATION.search(text))
        attribute = frozenset(w for w in words if w not in STATEMENT_STOP_WORDS and w not in _CUE_WORDS
                              and w not in name_words and not _NEGATION.fullmatch(w)
                              and not starts_with_digit(w) and len(w) > 2)
        return cls(at=at, values=frozenset(w for w in words if starts_with_digit(w)) | names, name_words=name_words,
                   attribute=attribute, negated=negated, updates=not negated and bool(_UPDATE.search(text)),
                   maybe_updates=not negated and bool(_WEAK_UPDATE.search(text)),
                   abandons=not negated and bool(_ABANDON.search(text)), adds=bool(_ADDITION.search(text)))


@dataclass(frozen=True)
class Verdict:
    kind: str  # supersede | contradicts | compatible
    reason: str
    overlap: float  # attribute overlap (Jaccard)


def judge(a: Statement, b: Statement, *, min_gap: timedelta = timedelta(hours=1), same_attribute: float = 0.6,
          certain_attribute: float = 0.8) -> Verdict:
    """How the newer statement `b` relates to the older `a` (pass them in time order).

    A value change needs a value in the older statement that something replaces (or a negation that flips);
    without values, only an explicit abandonment ("gave up the violin") of the older statement's subject counts.
    """
    shared_names = a.name_words & b.name_words
    union = a.attribute | b.attribute
    overlap = len(a.attribute & b.attribute) / len(union) if union else 0.0
    if not (shared_names or overlap >= 0.2) or b.adds:
        return Verdict(COMPATIBLE, "the newer one adds" if b.adds else "no shared subject", overlap)
    new_values = b.values - a.values
    flipped = a.negated != b.negated
    if (a.values and new_values) or flipped:
        return _value_change(a, b, overlap, new_values, flipped, min_gap, same_attribute, certain_attribute)
    contained = len(a.attribute & b.attribute) / len(a.attribute) if a.attribute else 0.0
    if b.abandons and contained >= 0.5 and b.at - a.at >= min_gap:
        return Verdict(SUPERSEDE, "the newer one gives the older up", overlap)
    return Verdict(COMPATIBLE, "same values", overlap)


def _value_change(a: Statement, b: Statement, overlap: float, new_values: frozenset[str], flipped: bool,
                  min_gap: timedelta, same_attribute: float, certain_attribute: float) -> Verdict:
    updates = b.updates or (b.maybe_updates and bool(a.values - b.values))
    if not (updates or overlap >= same_attribute):
        return Verdict(COMPATIBLE, "different attributes", overlap)
    if b.at - a.at < min_gap:
        return Verdict(CONTRADICTS, "stated at the same time", overlap)
    if updates:
        return Verdict(SUPERSEDE, "update cue", overlap)
    # Without a cue only a measured value (a number) or a negation on the very same attribute is clear enough:
    # a changed name may be a new subject ("Fresh note" after "Old note").
    if overlap >= certain_attribute and (any(starts_with_digit(v) for v in new_values) or flipped):
        return Verdict(SUPERSEDE, "same attribute, new value", overlap)
    return Verdict(CONTRADICTS, "ambiguous: attributes partly overlap", overlap)


def judge_texts(older: str, older_at: datetime, newer: str, newer_at: datetime,
                common_names: frozenset[str] = frozenset()) -> Verdict:
    """Sentence by sentence: the older memory is superseded only when every one of its statements is
    superseded by a statement of the newer one (a long turn that also says other things stays); any
    other disagreement is flagged; otherwise the two are compatible."""
    olds, news = _parsed(older, older_at, common_names), _parsed(newer, newer_at, common_names)
    if not olds or not news:
        return Verdict(COMPATIBLE, "no statement to compare", 0.0)
    verdicts = [[judge(o, n) for n in news] for o in olds]
    best = [max(row, key=lambda v: _RANK[v.kind]) for row in verdicts] if news else []
    if best and all(v.kind == SUPERSEDE for v in best):
        return max(best, key=lambda v: v.overlap)
    clashes = [v for v in best if v.kind != COMPATIBLE]
    if clashes:
        return Verdict(CONTRADICTS, f"partly: {clashes[0].reason}", clashes[0].overlap)
    return Verdict(COMPATIBLE, "no statement disagrees", max((v.overlap for v in best), default=0.0))


_RANK = {COMPATIBLE: 0, CONTRADICTS: 1, SUPERSEDE: 2}


@lru_cache(maxsize=200_000)
def _parsed(text: str, at: datetime, common_names: frozenset[str]) -> tuple[Statement, ...]:
    # One memory meets many candidates in a run: parse it once. Names everyone uses (the people talking)
    # are no shared subject.
    return tuple(_without(Statement.parse(s, at), common_names) for s in _statements(text))


def _without(statement: Statement, names: frozenset[str]) -> Statement:
    words = frozenset(w for name in names for w in name.split())
    return replace(statement, name_words=statement.name_words - words,
                   values=frozenset(v for v in statement.values if v not in names))


def _statements(text: str) -> list[str]:
    """Sentences that state something: a speaker prefix removed; no questions, greetings or small talk."""
    return [s for s in sentences(split_speaker(text)[1]) if len(statement_tokens(s)) >= 3
            and not is_low_signal(s)]
