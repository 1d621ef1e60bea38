"""The `rules` reader's tables for rule-based reflection, used by `consolidation.domain.reflection_rules`.
Moved here verbatim and frozen: they may only shrink (tests/language/test_word_tables.py)."""

from __future__ import annotations

import re

PERSON = r"(?:i|we|he|she|they)"

WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"

PASSING = re.compile(r"\b(?:i'm|i am|i feel|feeling|i was) (?:so |really |truly |very |just |super )?(?:thrilled|"
                     r"grateful|thankful|happy|excited|proud|glad|hopeful|swamped|tired|sorry|off to|about to|"
                     r"stoked|pumped|nervous|bummed)\b", re.I)

# "I love that/this/how …" reacts to something just said or shown; it is no lasting preference.
NOT_A_REACTION = (r"(?! (?:that|it|this|these|those|how|the way|all|seeing|hearing|when|what|your|you|"
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
        rf"\b{PERSON}(?: really| also| just| absolutely| totally| still)? (?:love|like|enjoy|prefer|adore|hate|"
        rf"dislike|can't stand)s?\b{NOT_A_REACTION}|"
        rf"\b(?:loves|likes|enjoys|prefers|hates|dislikes)\b{NOT_A_REACTION}|"
        r"\bfavou?rite\b|\bpassionate about\b|\b(?:big |huge )?fan of\b|\binterested in\b", re.I)),
    ("behavior", 0.7, re.compile(
        rf"\b(?:usually|always|often|regularly|tend to|habit|routine|whenever|every (?:day|week|weekend|morning|"
        rf"evening|night|month|year|summer|winter|time|{WEEKDAY})|each (?:day|week|morning|month)|on weekends|"
        rf"on {WEEKDAY}s|most days|(?:once|twice|\w+ times) a (?:day|week|month|year))\b", re.I)),
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
