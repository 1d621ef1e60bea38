"""The built-in extractive reflection engine (the default model, "builtin:extractive"): deterministic, no network,
the same output shape as an LLM. Every item is a sentence of its sources, verbatim (relative dates anchored),
so it is grounded by construction; the category comes from what the sentence says (rules below).

It finds what people and services state about themselves: likes and dislikes, habits, limits, failures, the
people and things around them, and plain facts with a concrete value. It does not generalise across memories
the way a model would; corroboration (the same statement in several memories) raises confidence instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from consolidation.domain.insights import Insight, Reflection, Source
from consolidation.domain.merging import anchor_dates, is_low_signal, sentences
from consolidation.domain.profile_statements import IMAGE_MARKUP
from zeromem.core.domain.text import same_statement, split_speaker, stems
from zeromem.language.rules_tables.reflection_rules import PASSING, RULES

MAX_ITEMS = 8
# Said to the other person, or a passing state of mind: nothing durable about the subject.
_ADDRESSED = re.compile(r"\byou(?:r|'re|'ve|'ll)?\b", re.I)


@dataclass(frozen=True)
class _Found:
    category: str
    confidence: float
    statement: str
    source: int


def reflect_extractive(subject: str, sources: Sequence[Source]) -> Reflection:
    found = [f for source in sources for f in _found_in(source)]
    insights: list[Insight] = []
    for item in sorted(found, key=lambda f: -f.confidence):
        insights = _corroborate(insights, item, subject)
    insights.sort(key=lambda i: (-i.confidence, -len(i.sources)))
    # No summary of its own: the profile composes one from its strongest items (profiles.services).
    return Reflection(insights=tuple(insights[:MAX_ITEMS]), summary="")


def _found_in(source: Source) -> list[_Found]:
    speaker, _ = split_speaker(source.text)
    found = []
    for sentence in _statements(source):
        match = next(((category, confidence) for category, confidence, rule in RULES if rule.search(sentence)),
                     None)
        if match is not None:
            statement = anchor_dates(sentence, source.created_at.date())
            found.append(_Found(match[0], match[1], f"{speaker}: {statement}" if speaker else statement,
                                source.number))
    return found


def _statements(source: Source) -> list[str]:
    """The sentences of a memory that state something about its speaker."""
    _, text = split_speaker(IMAGE_MARKUP.sub("", source.text))
    return [s for s in sentences(text) if not (is_low_signal(s) or s.endswith("?") or len(stems(s)) < 3
                                                or _ADDRESSED.search(s) or PASSING.search(s))]


def _corroborate(insights: list[Insight], item: _Found, subject: str) -> list[Insight]:
    """The same statement in another memory adds that memory as a source and 0.1 confidence."""
    for index, other in enumerate(insights):
        if other.category == item.category and same_statement(other.statement, item.statement, 0.6):
            if item.source not in other.sources:
                insights[index] = Insight(other.category, other.subject, other.statement,
                                          min(0.95, other.confidence + 0.1), other.sources + (item.source,))
            return insights
    return [*insights, Insight(item.category, subject, item.statement, item.confidence, (item.source,))]
