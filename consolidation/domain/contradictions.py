"""Knowledge updates, claim by claim: which statements of a user's memories replace which. Pure; no Django import.

A memory's *claims* are its clauses that carry a value (a number, a count in words, an ordinal, a weekday, a
name, a negation) — what a later statement can make stale. Questions, markdown and code, greetings and the
assistant's words are never claims: the assistant echoing "congratulations on your 4 projects" states nothing
new about the user. A claim splits into its values and its *attribute* (the content-word stems left once the
values are gone), with the *heads* of its numbers (the noun counted: "25 new postcards" → postcard).

Two claims about one scope are judged (older first, `judge`):
- a *reading* of a moment (a latency, an error rate, a temperature: a measurement not about the speaker) is
  neither updated nor contradicted by another reading — both were true when measured;
- different heads are different attributes: a rub is not a sauce;
- the newer supersedes the older when the attribute is the same, a value changed and it is dated later (by at
  least `min_gap`), and either it says so (an update cue: "moved … to", "upgraded", "gave up", …; or "now",
  "currently" when the older value is gone), or it is a state or running total about the speaker ("I've added
  17 postcards since I started collecting" → "I've added 25"), or the very same attribute got a new number;
- the same attribute with different values said at the same time, or a changed name without any cue, is
  flagged for a person to decide; anything else is compatible.

Candidate pairs come from an inverted index over the claims' attribute stems (`claim_pairs`), not from
whole-memory similarity: two long turns that share one fact are judged on that fact.
"""

from __future__ import annotations

import pickle
import re
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from consolidation.domain.merging import MIN_SUBSTANCE, is_low_signal, sentences, substance
from zeromem.core.domain.entities import extract_entities
from zeromem.core.domain.text import split_speaker, starts_with_digit, statement_tokens, word_set
from zeromem.language import CONTRADICTS as CONTRADICTED
from zeromem.language import REPLACES, Reader, Said
from zeromem.language.content import is_question, sentence_says_something
from zeromem.language.facts import facts_ahead, facts_json, facts_of, sentence_facts
from zeromem.language.rules_tables.contradictions import (
    ABANDON,
    ACQUIRED,
    CHAT_GLUE,
    CUE_WORDS,
    DATED,
    FIRST_PERSON,
    INTENTION,
    IRREGULAR,
    LIGHT_WORDS,
    NEGATION,
    NOT_HEADS,
    NUMBER_WORDS,
    OPERATION,
    ORDINALS,
    QUESTION_START,
    READING,
    REQUEST,
    RUNNING_TOTAL,
    UPDATE,
    WEAK_UPDATE,
)
from zeromem.language.rules_tables.text import STATEMENT_STOP_WORDS

SUPERSEDE, CONTRADICTS, COMPATIBLE = "supersede", "contradicts", "compatible"
MIN_GAP = timedelta(hours=1)  # a statement supersedes one made at least this much earlier
SERIES_GAP = timedelta(days=1)  # values of one attribute changing this often are readings, not states
SERIES_LENGTH = 3  # that many values at least make a series

_PHRASE_END = re.compile(r"[,.;:!?]|\s(?:and|but|so|because|now)\s", re.I)
_ADDITION = re.compile(r"\b(?:also|too|as well|another|additionally|in addition|besides)\b", re.I)
BRIEF_TOKENS = 25
MIN_CLAIM_SUBSTANCE = 3  # "I have 3 cats" has three
# Not a statement of the user's: markdown tables and headings, code, list bullets of generated text.
_MARKUP = re.compile(r"[|`{}<>]|^\s*(?:#|\*\*|[-*+] |\d+\. )|\b(?:def|import|return|print)\b\(?")
_BRACKETED = re.compile(r"\s*\[[^\]]*\]")
_CLAUSE_BREAK = re.compile(r"\s+[-–—]\s+|;\s+|,\s+(?=(?:and|but|so|while|which|though)\b)")
_WEEKDAYS = word_set("monday tuesday wednesday thursday friday saturday sunday")
_DURATIONS = word_set("second minute hour day week month year")
_A_UNIT = re.compile(r"\ban? (day|week|month|year)\b", re.I)
_ORDINAL_SUFFIX = re.compile(r"(?<=\d)(?:st|nd|rd|th)$")
_ATTRIBUTE_STOP = STATEMENT_STOP_WORDS | CUE_WORDS | LIGHT_WORDS | frozenset(NUMBER_WORDS) | frozenset(ORDINALS)
_STEM = re.compile(r"(?:'s|(?<=[sxz])es|(?<=ch)es|(?<=sh)es|(?<!s)s|ing|ed)$")


def _stem(word: str) -> str:
    """A crude plural and tense folding: "episodes" → "episode", "boxes" → "box", "added" → "add"."""
    if word in IRREGULAR:
        return IRREGULAR[word]
    if len(word) <= 4:
        return word
    return word[:-3] + "y" if word.endswith("ies") else _STEM.sub("", word)


@dataclass(frozen=True)
class Statement:
    """A clause parsed once (the job judges many pairs per memory)."""

    at: datetime
    values: frozenset[str]  # numbers (words and ordinals as digits), weekdays, names
    name_words: frozenset[str]  # words of the names, so "Dune" and "Finished Dune" share a subject
    attribute: frozenset[str]  # content-word stems without the values and the cue words
    heads: frozenset[str]  # stems of what the numbers count
    counts: frozenset[tuple[str, str]]  # (head, number): "25 new postcards" → ("postcard", "25")
    negated: bool
    updates: bool  # says that something was replaced
    maybe_updates: bool  # "now", "currently": an update only if the older value is gone
    abandons: bool  # "gave up", "stopped": the older subject is over, even without values
    adds: bool  # says that something is true as well
    given_up: frozenset[str]  # words right after "gave up", "finished", …: "Finished Dune" → dune
    acquired: frozenset[str]  # stems of what one more was added of: "added a new coin" → coin
    running_total: bool  # "so far", "in total", "since …": a count that grows
    first_person: bool  # about the speaker: "I", "my", "we"
    reading: bool  # a measurement of a moment, not a state
    event: bool  # a one-off on a date, not a running total
    brief: bool  # short enough to be one statement (not a pasted paragraph)

    @classmethod
    def parse(cls, text: str, at: datetime) -> Statement:
        normalised = _A_UNIT.sub(r"1 \1", text)
        names = frozenset(e.lower() for e in extract_entities(text) if not starts_with_digit(e))
        name_words = frozenset(w for name in names for w in name.split())
        tokens = statement_tokens(normalised)
        # A number inside a name ("Fitbit Charge 3") is part of the name, not a value of its own.
        in_names = frozenset(w for w in name_words if starts_with_digit(w))
        numbers = [(i, n) for i, t in enumerate(tokens) if (n := _number(t)) and t not in in_names]
        counts = frozenset((h, n) for i, n in numbers if (h := _head(tokens, i)))
        # "don't quit" is no update cue; a negation that flips is judged as a changed value instead.
        negated = bool(NEGATION.search(text))
        first_person = bool(FIRST_PERSON.search(text))
        attribute = frozenset(_stem(w) for w in tokens if w not in _ATTRIBUTE_STOP and w not in name_words
                              and not NEGATION.fullmatch(w) and not starts_with_digit(w) and len(w) > 2
                              and w not in _WEEKDAYS and w.rstrip("s") not in _WEEKDAYS)
        values = (frozenset(n for _, n in numbers) | names
                  | frozenset(w.rstrip("s") for w in tokens if w.rstrip("s") in _WEEKDAYS))
        return cls(at=at, values=values, name_words=name_words, attribute=attribute,
                   heads=frozenset(h for h, _ in counts), counts=counts, negated=negated,
                   updates=not negated and bool(UPDATE.search(text)),
                   maybe_updates=not negated and bool(WEAK_UPDATE.search(text)),
                   abandons=not negated and bool(ABANDON.search(text)), adds=bool(_ADDITION.search(text)),
                   given_up=_given_up(text), acquired=frozenset(_stem(m.lower()) for m in ACQUIRED.findall(text)),
                   running_total=bool(RUNNING_TOTAL.search(text)),
                   first_person=first_person, reading=not first_person and bool(READING.search(text)),
                   event=bool(DATED.search(text)) and not RUNNING_TOTAL.search(text)
                   or bool(OPERATION.search(text)) and not first_person,
                   brief=len(tokens) <= BRIEF_TOKENS)

    @classmethod
    def dated(cls, at: datetime) -> Statement:
        """A clause's time alone: for a clause a reader judges by its stored parse (`newer_first`), which reads
        nothing else of the rules' statement."""
        none: frozenset[str] = frozenset()
        return cls(at=at, values=none, name_words=none, attribute=none, heads=none, counts=frozenset(), negated=False,
                   updates=False, maybe_updates=False, abandons=False, adds=False, given_up=none, acquired=none,
                   running_total=False, first_person=False, reading=False, event=False, brief=False)

    @property
    def scalars(self) -> frozenset[str]:
        """Measured values: numbers and weekdays (a changed name may be a new subject instead)."""
        return frozenset(v for v in self.values if starts_with_digit(v) or v in _WEEKDAYS)


def _given_up(text: str) -> frozenset[str]:
    """What the give-up cues name: the first content words after each ("gave up the violin" → violin)."""
    found: set[str] = set()
    for match in ABANDON.finditer(text):
        phrase = _PHRASE_END.split(text[match.end():match.end() + 60], maxsplit=1)[0]
        words = [w for w in statement_tokens(phrase) if w not in _ATTRIBUTE_STOP and w not in NOT_HEADS]
        found.update(w for word in words[:2] for w in (word, _stem(word)))
    return frozenset(found)


def _number(token: str) -> str | None:
    if starts_with_digit(token):
        return _ORDINAL_SUFFIX.sub("", token).replace(",", "")
    return NUMBER_WORDS.get(token) or ORDINALS.get(token)


def _head(tokens: list[str], index: int) -> str | None:
    """What a number counts: the next content word within two ("25 new postcards"), else the word before
    ("level 100")."""
    for word in tokens[index + 1:index + 3]:
        if _number(word) or word in _ATTRIBUTE_STOP - LIGHT_WORDS and word not in NOT_HEADS:
            break
        if word not in NOT_HEADS and len(word) > 2:
            return _stem(word)
    before = tokens[index - 1] if index > 0 else ""
    return _stem(before) if before and before not in _ATTRIBUTE_STOP and not _number(before) else None


@dataclass(frozen=True)
class Verdict:
    kind: str  # supersede | contradicts | compatible
    reason: str
    overlap: float  # attribute overlap (shared stems over the smaller attribute)
    unsure: bool = False  # the same attribute with another value, and no rule was sure: a model may decide


def judge(a: Statement, b: Statement, *, same_session: bool = False, min_gap: timedelta = MIN_GAP,
          same_attribute: float = 0.5, certain_attribute: float = 0.8) -> Verdict:
    """How the newer statement `b` relates to the older `a` (pass them in time order). Within one session two
    statements are parts of one account (a list, a correction, moves of a game): never flagged."""
    shared = a.attribute & b.attribute
    overlap = len(shared) / min(len(a.attribute), len(b.attribute)) if a.attribute and b.attribute else 0.0
    if a.reading or b.reading:
        return Verdict(COMPATIBLE, "readings of a moment", overlap)
    if (a.heads & b.acquired and a.running_total and a.first_person and b.first_person
            and b.at - a.at >= min_gap and not a.event):
        return Verdict(SUPERSEDE, "one more of a counted thing: the count changed", overlap)
    if b.adds:
        return Verdict(COMPATIBLE, "the newer one adds", overlap)
    if a.heads and b.heads and not (a.heads & (b.heads | b.attribute) or b.heads & (a.heads | a.attribute)):
        return Verdict(COMPATIBLE, "different attributes: they count different things", overlap)
    if b.abandons and not a.negated and b.at - a.at >= min_gap and _gives_up(a, b, shared, same_attribute):
        return Verdict(SUPERSEDE, "the newer one gives the older up", overlap)
    if not (a.values and b.values - a.values) and not _flipped(a, b):
        return Verdict(COMPATIBLE, "no value changed", overlap)
    if not _same_attribute(a, b, shared, overlap, same_attribute):
        return Verdict(COMPATIBLE, "different attributes", overlap)
    verdict = _value_change(a, b, overlap, min_gap, certain_attribute)
    if verdict.kind == CONTRADICTS and same_session:
        return Verdict(COMPATIBLE, "one conversation: parts of one account", overlap)
    return verdict


def _flipped(a: Statement, b: Statement) -> bool:
    """A negation that flips between two short statements ("I am vegetarian" / "I am not vegetarian anymore"); in
    long sentences a "not" is too often about something else."""
    return a.negated != b.negated and a.brief and b.brief


def _gives_up(a: Statement, b: Statement, shared: frozenset[str], threshold: float) -> bool:
    """"I gave up the violin" of "I'm learning the violin"; "Finished Dune" of "I'm reading Dune"."""
    if not (a.attribute | a.name_words) & b.given_up:
        return False
    contained = len(shared) / len(a.attribute) if a.attribute else 0.0
    return contained >= threshold or bool(a.name_words and a.name_words <= b.given_up)


def _counted_change(a: Statement, b: Statement) -> bool:
    """A number changed for the same counted thing ("3 weeks" → "4 weeks"), or, where one side names no counted
    thing, any number changed."""
    shared_heads = a.heads & b.heads
    if a.heads and b.heads and not shared_heads:
        return False
    if not shared_heads:
        return bool(a.scalars - b.scalars and b.scalars - a.scalars)
    changed = {head for head in shared_heads
               if {n for h, n in a.counts if h == head} != {n for h, n in b.counts if h == head}}
    # "writing for three months … 7 short stories" / "a short story for a month … 500 words a week": only a
    # duration changed while each counts something the other does not — two different activities.
    if changed <= _DURATIONS and (a.heads - shared_heads or b.heads - shared_heads):
        return False
    return bool(changed)


def _same_attribute(a: Statement, b: Statement, shared: frozenset[str], overlap: float, threshold: float) -> bool:
    """Two words of the attribute in common and most of the smaller one, or what the numbers count in common
    with a name ("my Fitbit for 6 months" / "my Fitbit for 9 months"); a strong cue needs less when a name is
    shared ("offsite in Madrid" / "offsite changed from Madrid to Valencia")."""
    if len(shared) >= 2 and (overlap >= threshold or a.heads & (b.heads | b.attribute)):
        return True
    if _flipped(a, b) and shared == a.attribute == b.attribute:
        return True  # "I am vegetarian" / "I am not vegetarian anymore"
    names = a.name_words & b.name_words
    words = (a.attribute | a.name_words) & (b.attribute | b.name_words)  # "offsite" / "Offsite location"
    cued = b.updates and len(words) >= 2 or shared and b.maybe_updates
    return bool(names) and bool(a.heads & b.heads or cued or _flipped(a, b))


def _value_change(a: Statement, b: Statement, overlap: float, min_gap: timedelta, certain: float) -> Verdict:
    scalar_changed = _counted_change(a, b)
    flipped = _flipped(a, b)
    brief = a.brief and b.brief
    if b.at - a.at < min_gap:
        if (scalar_changed or flipped) and overlap >= certain and brief:
            return Verdict(CONTRADICTS, "stated at the same time", overlap, unsure=True)
        return Verdict(COMPATIBLE, "said together: two parts of one account", overlap)
    if a.event or b.event:
        return Verdict(COMPATIBLE, "one-off events on their own dates", overlap)
    if b.updates:
        return Verdict(SUPERSEDE, "update cue", overlap)
    if a.first_person and b.first_person and scalar_changed:
        return Verdict(SUPERSEDE, "a newer value of the speaker's own state", overlap)
    if b.maybe_updates and a.values - b.values and (brief and (scalar_changed or overlap >= certain)
                                                    or a.first_person and b.first_person
                                                    and bool(a.name_words & b.name_words)):
        return Verdict(SUPERSEDE, "update cue, the older value gone", overlap)
    # Without a cue only a measured value or a negation on the very same attribute is clear enough: a changed
    # name may be a new subject ("Fresh note" after "Old note"), which a person decides.
    if overlap >= certain and brief and (flipped or scalar_changed and not (a.first_person or b.first_person)):
        return Verdict(SUPERSEDE, "same attribute, new value", overlap)
    if overlap >= certain and brief and scalar_changed:
        return Verdict(CONTRADICTS, "a changed value without a cue", overlap, unsure=True)
    return Verdict(COMPATIBLE, "ambiguous: left as both true", overlap, unsure=True)


# --- claims of memories ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Claim:
    memory: int  # index of the memory in the caller's list
    sentence: int  # index of the sentence (in `statement_sentences(text)`) the clause belongs to
    text: str
    scope: Hashable
    session: str | None
    statement: Statement


def statement_sentences(text: str) -> list[str]:
    """A memory's sentences without its speaker prefix, newline-separated parts split too."""
    return [s for part in split_speaker(text)[1].split("\n") for s in sentences(part)]


def claims_of(memory: int, text: str, at: datetime, *, role: str, scope: Hashable, session: str | None = None,
              common_names: frozenset[str] = frozenset(), rules: bool = False) -> list[Claim]:
    """The clauses of a memory that say something (`stated_clauses`, by the parse), parsed; none for the
    assistant's turns. `rules`: the frozen rules reader's claims instead, its word tables deciding (kept for
    comparison)."""
    if rules:
        return _rules_claims(memory, text, at, role=role, scope=scope, session=session, common_names=common_names)
    return [Claim(memory, number, clause, scope, session, _without(Statement.parse(clause, at), common_names))
            for number, clause in stated_clauses(text, role, common_names)]


def candidate_clauses(text: str, role: str) -> list[tuple[int, str]]:
    """(sentence number, clause) of what a memory may claim, by format alone: each sentence without its question
    parts ("I've used it for 6 months now - any tips?" → "I've used it for 6 months now"), markup and code left out,
    and what brackets set apart (an annotation: "[shares image: a photo of two dogs]" describes a picture, it
    claims nothing); nothing of the assistant's turns (the assistant echoing "your 4 projects" states nothing new
    about the user)."""
    if role == "assistant":
        return []
    return [(number, clause) for number, sentence in enumerate(statement_sentences(text))
            for clause in (_BRACKETED.sub("", p).strip(" ,") for p in _CLAUSE_BREAK.split(sentence))
            if len(statement_tokens(clause)) >= 3 and not is_question(clause) and not _MARKUP.search(clause)]


def stated_clauses(text: str, role: str, names: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """The candidate clauses that say something by the parse (`sentence_says_something`: a value — a number, a name,
    a date, a frequency…, the people talking aside — or a verb that takes a thing, "I'm learning the violin"): "Hey
    Mel, great to chat again!" claims nothing. Batch their parse with `facts_ahead` (`clauses_ahead`) where many
    memories are read."""
    return [(n, c) for n, c in candidate_clauses(text, role) if sentence_says_something(c, names)]


def clauses_ahead(texts: Sequence[str], roles: Sequence[str]) -> None:
    """Parse in one batch the candidate clauses of these memories that `stated_clauses` will read."""
    facts_ahead(c for text, role in zip(texts, roles, strict=True) for _, c in candidate_clauses(text, role))


def _rules_claims(memory: int, text: str, at: datetime, *, role: str, scope: Hashable, session: str | None,
                  common_names: frozenset[str]) -> list[Claim]:
    """The rules reader's claims: clauses with a value by its tables, or brief and not low-signal."""
    if role == "assistant":
        return []
    found = []
    for number, clause in _substantial_clauses(text):
        statement = _without(Statement.parse(clause, at), common_names)
        # A statement without a value can still be given up later ("I'm learning the violin").
        if statement.values or statement.negated or statement.abandons or (
                statement.brief and not is_low_signal(clause, common_names)):
            found.append(Claim(memory, number, clause, scope, session, statement))
    return found


def _substantial_clauses(text: str) -> list[tuple[int, str]]:
    """(sentence, clause) of each clause with substance enough to claim something: "Hey Mel, great to chat again!"
    claims nothing. Whether it does claim something is up to the rules' parse (`_rules_claims`)."""
    return [(number, clause) for number, sentence in enumerate(statement_sentences(text))
            for clause in _clauses(sentence) if substance(clause) >= MIN_CLAIM_SUBSTANCE]


def informative_sentences(text: str) -> list[int]:
    """Indexes of the sentences that say something (not greetings, questions or small talk)."""
    return [n for n, s in enumerate(statement_sentences(text)) if _is_statement(s) and not is_low_signal(s)]


def _clauses(sentence: str) -> list[str]:
    """The sentence without its question or intention parts ("… for 6 months now - do you have any tips?")."""
    parts = [CHAT_GLUE.sub("", p.strip(" ,")) for p in _CLAUSE_BREAK.split(sentence)]
    kept = ", ".join(p for p in parts if p and not _is_question(p) and not INTENTION.search(p))
    return [kept] if _is_statement(kept) else []


def _is_statement(text: str) -> bool:
    return (len(statement_tokens(text)) >= 3 and not _is_question(text) and not _MARKUP.search(text)
            and not REQUEST.match(text))


def _is_question(text: str) -> bool:
    return text.rstrip().endswith("?") or bool(QUESTION_START.match(text))


def _without(statement: Statement, names: frozenset[str]) -> Statement:
    # Names everyone uses (the people talking) are no shared subject.
    words = frozenset(w for name in names for w in name.split())
    return replace(statement, name_words=statement.name_words - words,
                   values=frozenset(v for v in statement.values if v not in names))


def claim_pairs(claims: Sequence[Claim], *, max_posting: int = 60) -> list[tuple[int, int]]:
    """Index pairs of claims in one scope sharing two attribute stems, a head or a name, from an inverted index
    (a key in more than `max_posting` claims is too common to link), where one of them can carry an update."""
    postings: dict[tuple[Hashable, str], list[int]] = defaultdict(list)
    for index, claim in enumerate(claims):
        for key in claim.statement.attribute | claim.statement.heads | claim.statement.name_words:
            postings[(claim.scope, key)].append(index)
    shared: Counter[tuple[int, int]] = Counter()
    for members in postings.values():
        if len(members) <= max_posting:
            for i, a in enumerate(members):
                for b in members[i + 1:]:
                    if claims[a].memory != claims[b].memory:
                        shared[(a, b)] += 1
    return [(a, b) for (a, b), count in shared.items() if _changes(claims[a]) or _changes(claims[b])
            if count >= 2 or claims[a].statement.heads & claims[b].statement.heads
            or claims[a].statement.name_words & claims[b].statement.name_words
            or claims[a].statement.abandons or claims[b].statement.abandons]


def memory_features(texts: Sequence[str], roles: Sequence[str], reader: Reader) -> list[dict[str, Any]]:
    """What the reader keeps of each memory's claims and, but for the assistant's turns, of its whole text (what
    search asks `about_asked`), to store with the memory: {"v": the reader's features version, "claims": {clause:
    features}, "text": features} (claims empty for a memory that claims nothing, so it is never parsed again while
    the version holds: `features_current`), and the facts of each of its sentences that merging reads ("sentences":
    `zeromem.language.facts.sentence_facts`). Parsed in one batch."""
    said = sentence_facts(texts)
    clauses_ahead(texts, roles)
    candidates = [[clause for _, clause in candidate_clauses(text, role)]
                  for text, role in zip(texts, roles, strict=True)]
    clauses = [[clause for clause in memory if sentence_says_something(clause)] for memory in candidates]
    whole = [n for n, role in enumerate(roles) if role != "assistant"]
    found = iter(reader.features([c for memory in clauses for c in memory] + [texts[n] for n in whole]))
    version = reader.features_version
    features: list[dict[str, Any]] = [{"v": version, "claims": {clause: next(found) for clause in memory}}
                                      for memory in clauses]
    for n in whole:
        features[n]["text"] = next(found)
    for stored, facts, memory in zip(features, said, candidates, strict=True):
        # A clause cut from a sentence (its question part left out) is read like a sentence: kept too, so that a
        # nightly run finds the memory's claims (`stated_clauses`) without parsing it again.
        stored["sentences"] = facts | {c: facts_json(facts_of(c)) for c in memory if c not in facts}
    return features


def features_current(stored: Mapping[str, Any] | None, reader: Reader) -> bool:
    """Was this memory's stored parse kept by this version of the reader (else it is parsed again, once)?"""
    return stored is not None and stored.get("v") == reader.features_version


Features = Sequence[Mapping[str, Any] | None] | None  # stored features by memory index (`memory_features`)


def said_of(claim: Claim, features: Features = None, vector: Any = None, *, alone: bool = True) -> Said:
    """A claim as the reader takes it, with its memory's stored features for its clause where there are some."""
    stored = features[claim.memory] if features is not None else None
    return Said(claim.text, claim.statement.at, vector, stored.get("claims", {}).get(claim.text) if stored else None,
                alone=alone)


def reader_pairs(claims: Sequence[Claim], reader: Reader, *, max_posting: int = 60,
                 features: Features = None) -> list[tuple[int, int]]:
    """Index pairs of claims of different memories in one scope that the reader says are about a common key."""
    postings: dict[tuple[Hashable, str], list[int]] = defaultdict(list)
    keys = reader.keys([said_of(c, features) for c in claims])
    for index, (claim, found) in enumerate(zip(claims, keys, strict=True)):
        for key in found:
            postings[(claim.scope, key)].append(index)
    pairs: set[tuple[int, int]] = set()
    for members in postings.values():
        if len(members) <= max_posting:
            pairs.update((a, b) for i, a in enumerate(members) for b in members[i + 1:]
                         if claims[a].memory != claims[b].memory)
    return sorted(pairs)


_READER_VERDICTS = {REPLACES: Verdict(SUPERSEDE, "a newer value of the same attribute, or its end", 1.0),
                    CONTRADICTED: Verdict(CONTRADICTS, "another value of the same attribute, said at the same time",
                                          1.0, unsure=True)}


def _in_time_order(a: Claim, b: Claim) -> tuple[Claim, Claim]:
    """(older, newer); said at the same moment, the one of the earlier memory first."""
    return (a, b) if (a.statement.at, a.memory) <= (b.statement.at, b.memory) else (b, a)


_UNSURE = Verdict(COMPATIBLE, "the same attribute, no value clearly changed", 1.0, unsure=True)


def reader_verdicts(claims: Sequence[Claim], pairs: Iterable[tuple[int, int]], reader: Reader,
                    vectors: Sequence[Any] | None = None, *, keep_unsure: bool = False,
                    series_gap: timedelta = SERIES_GAP, features: Features = None,
                    alone: Sequence[bool] | None = None) -> list[ClaimVerdict]:
    """The supersedes and contradictions the reader finds among the pairs, each judged once in time order, with
    each claim's vector where `vectors` (by memory) has one, and whether its memory says it `alone` (by memory: the
    vector is the claim's own). Within one session two statements are parts of one account (a list, a correction):
    never flagged. Values of one attribute that change every `series_gap` or sooner are readings of a measured
    quantity (`readings`), each true when measured: no verdict. With `keep_unsure` (a model will look), also the
    pairs the reader finds about the same attribute without a clearly changed value ("I'm learning the violin." /
    "The violin mostly sits in its case these days.")."""
    ordered = [_in_time_order(claims[a], claims[b]) for a, b in pairs]

    def said(claim: Claim) -> Said:
        return said_of(claim, features, vectors[claim.memory] if vectors is not None else None,
                       alone=alone[claim.memory] if alone is not None else True)

    relations = reader.relation([(said(o), said(n)) for o, n in ordered])
    found = [ClaimVerdict(older, newer, _READER_VERDICTS[relation])
             for (older, newer), relation in zip(ordered, relations, strict=True) if relation in _READER_VERDICTS
             and not (relation == CONTRADICTED and older.session is not None and older.session == newer.session)]
    measured = readings(found, series_gap)
    found = [f for f in found if id(f.older) not in measured]
    if keep_unsure:
        kept = [pair for pair, relation in zip(ordered, relations, strict=True) if relation not in _READER_VERDICTS]
        alike = reader.same_attribute([(said(o), said(n)) for o, n in kept])
        found += [ClaimVerdict(o, n, _UNSURE) for (o, n), same in zip(kept, alike, strict=True) if same]
    return found


def readings(verdicts: Sequence[ClaimVerdict], series_gap: timedelta) -> set[int]:
    """The claims (by id) in a series of values of one attribute: verdicts linked through shared claims into
    groups of at least SERIES_LENGTH claims whose median interval is at most `series_gap` — a battery level, a
    backlog, a lag read every few hours, whatever the quantity is called. A setting changed twice in a month, or a
    count that grew over a year, is no series."""
    parent: dict[int, int] = {}

    def root(key: int) -> int:
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    claims = {id(c): c for f in verdicts for c in (f.older, f.newer)}
    for f in verdicts:
        parent[root(id(f.older))] = root(id(f.newer))
    groups: dict[int, list[Claim]] = defaultdict(list)
    for key, claim in claims.items():
        groups[root(key)].append(claim)
    measured: set[int] = set()
    for members in groups.values():
        times = sorted(c.statement.at for c in members)
        gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
        if len(members) >= SERIES_LENGTH and gaps[len(gaps) // 2] <= series_gap:
            measured.update(id(c) for c in members)
    return measured


def _changes(claim: Claim) -> bool:
    """Can this claim be part of an update: it holds a value, a negation, or gives something up."""
    return bool(claim.statement.values or claim.statement.negated or claim.statement.abandons)


@dataclass(frozen=True)
class ClaimVerdict:
    older: Claim
    newer: Claim
    verdict: Verdict


def claim_verdicts(claims: Sequence[Claim], pairs: Iterable[tuple[int, int]], *, keep_unsure: bool = False,
                   min_gap: timedelta = MIN_GAP, same_attribute: float = 0.5,
                   certain_attribute: float = 0.8) -> list[ClaimVerdict]:
    """Every non-compatible verdict (and, with `keep_unsure`, the compatible ones no rule was sure of), each pair
    judged once in time order (`judge`, with the thresholds given)."""
    found = []
    for a, b in pairs:
        older, newer = _in_time_order(claims[a], claims[b])
        verdict = judge(older.statement, newer.statement,
                        same_session=older.session is not None and older.session == newer.session,
                        min_gap=min_gap, same_attribute=same_attribute, certain_attribute=certain_attribute)
        if verdict.kind != COMPATIBLE or keep_unsure and verdict.unsure:
            found.append(ClaimVerdict(older, newer, verdict))
    return found


@dataclass(frozen=True)
class Retired:
    """An older claim's sentence and the newest claim that replaces it."""

    sentence: int
    text: str  # the whole sentence the claim was made in
    claim: Claim
    by: Claim
    verdict: Verdict

    @property
    def replaced_values(self) -> frozenset[str]:
        """The older claim's values the newer one no longer states ("17" of "17 postcards" → "25 postcards")."""
        return self.claim.statement.values - self.by.statement.values


@dataclass
class Updates:
    """What the verdicts mean for whole memories: a memory that says nothing more once its replaced sentences are
    gone is superseded whole; one with sentences still true keeps them and only its replaced sentences retire."""

    superseded: dict[int, Retired]  # older memory → the newest replacement of its (last) claim
    superseded_values: dict[int, frozenset[str]]  # older memory → every value its replaced claims stated
    retired: dict[int, list[Retired]]  # older memory → its replaced sentences (the rest stays true)
    flagged: dict[tuple[int, int], Verdict]  # (older, newer) memory pairs a person should look at


def updates_of(verdicts: Sequence[ClaimVerdict], texts: Sequence[str]) -> Updates:
    """Each replaced sentence retires once, by its newest replacement; flags only between memories that stay."""
    newest: dict[tuple[int, int], ClaimVerdict] = {}
    flagged: dict[tuple[int, int], Verdict] = {}
    for found in verdicts:
        if found.verdict.kind == COMPATIBLE:
            continue
        if found.verdict.kind == SUPERSEDE:
            key = (found.older.memory, found.older.sentence)
            if key not in newest or found.newer.statement.at > newest[key].newer.statement.at:
                newest[key] = found
        else:
            flagged.setdefault((found.older.memory, found.newer.memory), found.verdict)
    by_memory: dict[int, list[Retired]] = defaultdict(list)
    for (memory, sentence), found in sorted(newest.items()):
        by_memory[memory].append(Retired(sentence, statement_sentences(texts[memory])[sentence], found.older,
                                         found.newer, found.verdict))
    updates = Updates(superseded={}, superseded_values={}, retired={}, flagged={})
    for memory, retired in by_memory.items():
        if not _says_more(texts[memory], {r.sentence for r in retired}):
            updates.superseded[memory] = max(retired, key=lambda r: r.by.statement.at)
            updates.superseded_values[memory] = frozenset().union(*(r.replaced_values for r in retired))
        else:
            updates.retired[memory] = retired
    gone = set(updates.superseded)
    updates.flagged = {pair: v for pair, v in flagged.items() if not gone & set(pair)}
    return updates


def _says_more(text: str, retired: set[int]) -> bool:
    """Whether the memory still says something once its retired sentences are gone (not just "Hey Mel!")."""
    parts = statement_sentences(text)
    rest = " ".join(parts[n] for n in informative_sentences(text) if n not in retired)
    return substance(rest) >= MIN_SUBSTANCE


def remainder_of(text: str, retired: Iterable[int]) -> str:
    """The memory's text without its retired sentences (its speaker prefix kept)."""
    speaker = split_speaker(text)[0]
    dropped = set(retired)
    kept = " ".join(s for n, s in enumerate(statement_sentences(text)) if n not in dropped)
    return f"{speaker}: {kept}" if speaker else kept


@dataclass(frozen=True)
class Ordered:
    index: int  # position in the ranking given
    earlier_than: int | None  # a newer result stating the same attribute differently (its given position)


def newer_first(texts: Sequence[str], dates: Sequence[datetime], roles: Sequence[str],
                reader: Reader | None = None, query: str | None = None, features: Features = None,
                scores: Sequence[float] | None = None, recency: float = 0.0) -> list[Ordered]:
    """Search results in rank order, re-ordered only where two state the same attribute with different values:
    the newer moves up to just above the older, which is marked as earlier. Any other pair keeps its order, so a
    newer unrelated statement never outranks an older relevant one. Where the query asks what holds now, two
    results with claims of the same attribute as the query count as such a pair too; and the results that speak of
    what it asks about (the reader's `about_asked`; not the assistant's turns) are first ranked again among their
    places by their `scores` with up to `recency` added by how new they are: of two about as relevant, the newer
    answers for now."""
    claims = [c for n, (text, at, role) in enumerate(zip(texts, dates, roles, strict=True))
              for c in _result_claims(n, text, at, role, features[n] if features is not None else None, reader)]
    links = _restated(claims, reader, features)
    # Only two results of what people said can be reordered by what the question asks: else it is not parsed.
    said = sum(role != "assistant" for role in roles)
    asks_now = bool(reader is not None and query and said >= 2 and reader.asks_now(query))
    if reader is not None and query and asks_now:
        links += _answering(claims, reader, query, features)
    newer_of: dict[int, int] = {}
    for older, newer in links:
        if older not in newer_of or dates[newer] > dates[newer_of[older]]:
            newer_of[older] = newer
    order = list(range(len(texts)))
    if reader is not None and query and asks_now and scores is not None and recency > 0 and texts:
        order = _answering_newer_first(order, texts, dates, roles, reader, query, scores, recency, features)
    for older, newer in sorted(newer_of.items()):  # last: a stated replacement always ranks above what it replaced
        if order.index(newer) > order.index(older):
            order.remove(newer)
            order.insert(order.index(older), newer)
    return [Ordered(n, newer_of.get(n)) for n in order]


def _restated(claims: Sequence[Claim], reader: Reader | None, features: Features = None) -> list[tuple[int, int]]:
    """(older, newer) memories where a later claim gives another value of an attribute an earlier one stated: the
    reader's relation (replaces or contradicts; what is only alike is no reason to move a result), or (no reader)
    the rules' non-compatible verdicts."""
    if reader is None:
        verdicts = claim_verdicts(claims, claim_pairs(claims))
    else:
        verdicts = reader_verdicts(claims, reader_pairs(claims, reader, features=features), reader,
                                   features=features)
    return [(f.older.memory, f.newer.memory) for f in verdicts if f.older.statement.at < f.newer.statement.at]


def _answering(claims: Sequence[Claim], reader: Reader, query: str, features: Features = None
               ) -> list[tuple[int, int]]:
    """(older, newer) memories whose claims both speak of what the query asks about (the reader's same-attribute
    judgement between the query and each claim), by a key of the query's they share: the newer answers for now."""
    if not claims:
        return []
    asked = Said(query, min(c.statement.at for c in claims))
    said = [said_of(c, features) for c in claims]
    query_keys, *keys = reader.keys([asked, *said])
    # Only a claim sharing a key with the query can be on topic: the others are not judged at all.
    keyed = [(c, s, k & query_keys) for c, s, k in zip(claims, said, keys, strict=True) if k & query_keys]
    same = reader.same_attribute([(asked, s) for _, s, _ in keyed])
    on_topic = [(c, shared) for (c, _, shared), alike in zip(keyed, same, strict=True) if alike]
    return [(o.memory, n.memory) if o.statement.at < n.statement.at else (n.memory, o.memory)
            for i, (o, ok) in enumerate(on_topic) for n, nk in on_topic[i + 1:]
            if o.memory != n.memory and o.statement.at != n.statement.at and ok & nk]


def _answering_newer_first(order: list[int], texts: Sequence[str], dates: Sequence[datetime],
                           roles: Sequence[str], reader: Reader, query: str, scores: Sequence[float],
                           recency: float, features: Features = None) -> list[int]:
    """The places of the results that speak of what the query asks about, refilled with them by score plus
    `recency` times how new they are (the newest 1, the oldest 0, in proportion between); every other result keeps
    its place."""
    said = [n for n in order if roles[n] != "assistant"]
    stored = [(features[n] or {}).get("text") if features is not None else None for n in said]
    about = reader.about_asked(query, [Said(texts[n], dates[n], features=f) for n, f in zip(said, stored, strict=True)])
    answering = [n for n, on_topic in zip(said, about, strict=True) if on_topic]
    if len(answering) < 2:
        return order
    oldest = min(dates[n] for n in answering)
    span = (max(dates[n] for n in answering) - oldest).total_seconds()
    if not span:
        return order
    ranked = iter(sorted(answering, key=lambda n: scores[n] + recency * (dates[n] - oldest).total_seconds() / span,
                         reverse=True))
    places = set(answering)
    return [next(ranked) if n in places else n for n in order]


def _result_claims(n: int, text: str, at: datetime, role: str, stored: Mapping[str, Any] | None,
                   reader: Reader | None) -> list[Claim]:
    """The claims of result n. Where the reader's stored parse of this version holds them, they are its clauses, in
    the text's order: which clauses claim something depends on their text alone, and the reader judges each by its
    stored reading, reading nothing of the rules' statement but its time. Else parsed now (cached): by the reader's
    claims, or the rules' where no reader judges."""
    if reader is None or stored is None or not features_current(stored, reader):
        return [replace(c, memory=n) for c in pickle.loads(_pickled_claims(text, at, role, reader is None))]
    kept = stored.get("claims") or {}
    return [Claim(n, number, clause, None, None, Statement.dated(at))
            for number, clause in _cached_clauses(text, role) if clause in kept]


@lru_cache(maxsize=20_000)
def _cached_clauses(text: str, role: str) -> tuple[tuple[int, str], ...]:
    """The same memories come back search after search. Tuples of strings: the garbage collector stops scanning
    them after one pass, so the cache adds one object an entry to a full collection (`_pickled_claims`)."""
    return tuple(candidate_clauses(text, role))


@lru_cache(maxsize=20_000)
def _pickled_claims(text: str, at: datetime, role: str, rules: bool) -> bytes:
    """The same memories come back search after search: each is parsed once per process (~180 µs; unpickling
    costs ~11). Kept pickled, the cache is a few bytes objects the garbage collector skips: as parsed objects
    (~15 a claim) it held ~300,000, and each full collection in a web process paused a search 40-140 ms."""
    return pickle.dumps(tuple(claims_of(0, text, at, role=role, scope=None, rules=rules)))

