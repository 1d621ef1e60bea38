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

MAX_ITEMS = 8
_PERSON = r"(?:i|we|he|she|they)"
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
# Said to the other person, or a passing state of mind: nothing durable about the subject.
_ADDRESSED = re.compile(r"\byou(?:r|'re|'ve|'ll)?\b", re.I)
_PASSING = re.compile(r"\b(?:i'm|i am|i feel|feeling|i was) (?:so |really |truly |very |just |super )?(?:thrilled|"
                      r"grateful|thankful|happy|excited|proud|glad|hopeful|swamped|tired|sorry|off to|about to|"
                      r"stoked|pumped|nervous|bummed)\b", re.I)
# "I love that/this/how …" reacts to something just said or shown; it is no lasting preference.
_NOT_A_REACTION = (r"(?! (?:that|it|this|these|those|how|the way|all|seeing|hearing|when|what|your|you|"
                   r"them|him|her)\b)")
RULES: tuple[tuple[str, float, re.Pattern[str]], ...] = (
    ("failure_pattern", 0.7, re.compile(
        r"\b(?:fail(?:ed|s|ing|ure)|errors?|crash(?:ed|es|ing)?|timed out|time ?outs?|outage|broke|broken|bugs?|"
        r"ran out of|out of memory|keeps? (?:failing|breaking|crashing))\b", re.I)),
    ("constraint", 0.7, re.compile(
        r"\b(?:must(?:n't| not)?(?! (?:have|be|feel|'ve)\b)|cannot|can't (?!wait|believe|stop)|not allowed|"
        r"allergic|deadline|"
        r"no longer (?:eat|drink|use)|never (?:eat|drink|use|work|deploy)|only (?:eats?|drinks?|uses?|works?)|"
        r"limit(?:ed)? to|at most|at least)\b", re.I)),
    ("preference", 0.75, re.compile(
        rf"\b{_PERSON}(?: really| also| just| absolutely| totally| still)? (?:love|like|enjoy|prefer|adore|hate|"
        rf"dislike|can't stand)s?\b{_NOT_A_REACTION}|"
        rf"\b(?:loves|likes|enjoys|prefers|hates|dislikes)\b{_NOT_A_REACTION}|"
        r"\bfavou?rite\b|\bpassionate about\b|\b(?:big |huge )?fan of\b|\binterested in\b", re.I)),
    ("behavior", 0.7, re.compile(
        rf"\b(?:usually|always|often|regularly|tend to|habit|routine|whenever|every (?:day|week|weekend|morning|"
        rf"evening|night|month|year|summer|winter|time|{_WEEKDAY})|each (?:day|week|morning|month)|on weekends|"
        rf"on {_WEEKDAY}s|most days|(?:once|twice|\w+ times) a (?:day|week|month|year))\b", re.I)),
    ("entity", 0.65, re.compile(
        r"\bmy (?:wife|husband|partner|son|daughters?|kids?|children|mom|mother|dad|father|parents|sisters?|"
        r"brothers?|family|friends?|best friend|dog|cat|pets?|boss|team|manager|colleagues?|grandma|grandmother|"
        r"grandpa|grandfather|girlfriend|boyfriend|roommate|neighbou?r)\b|\bnamed [A-Z]", re.I)),
    ("domain_fact", 0.65, re.compile(
        r"\b(?:i am an? |i'm an? |i work (?:as|at|for|in|on)|i've worked|i live in|i've lived|i was born|"
        r"i grew up|i moved (?:to|from|here)|i studied|i graduated|i joined|i have (?:a|an|two|three|\d)|i own|"
        r"i'm from|my job|we use|we run|runs on|deployed (?:on|to)|version|configured|is set to|listens on|"
        r"depends on)\b", re.I)),
)


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
                                                or _ADDRESSED.search(s) or _PASSING.search(s))]


def _corroborate(insights: list[Insight], item: _Found, subject: str) -> list[Insight]:
    """The same statement in another memory adds that memory as a source and 0.1 confidence."""
    for index, other in enumerate(insights):
        if other.category == item.category and same_statement(other.statement, item.statement, 0.6):
            if item.source not in other.sources:
                insights[index] = Insight(other.category, other.subject, other.statement,
                                          min(0.95, other.confidence + 0.1), other.sources + (item.source,))
            return insights
    return [*insights, Insight(item.category, subject, item.statement, item.confidence, (item.source,))]
