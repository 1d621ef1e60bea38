"""Extractive merging of a cluster into semantic text. Deterministic; no Django import.

A merged memory keeps what a later question may need and drops what states nothing:
1. each member's text is split into sentences (a "Speaker: " prefix is remembered, not repeated);
2. low-signal sentences go: greetings, acknowledgements, bare questions;
3. relative dates are anchored to the member's date ("yesterday" → "yesterday (7 May 2023)");
4. near-duplicates collapse into the most complete statement (the most recent on a tie) — but only when the
   dropped one has no concrete value (number, date, name) that the kept one lacks, so details survive verbatim.
   A near-duplicate shares most words, or states the same thing in other words: its sentence vector (the caller
   embeds the sentences `paraphrase_candidates` names) is at least `paraphrase` similar to the kept one's and no
   value differs, so two statements giving different values for one attribute are never paraphrases;
5. the rest is packed, in order, into texts of at most `limit` characters (a cluster that does not fit becomes
   several memories); every member is cited by the text that holds its sentences;
6. a text that says nothing (`zeromem.language.content`: no statement, no verb taking a thing) is not written:
   small talk is never knowledge, and its members stay as they were said;
7. a text cites (and so retires) a member only when it keeps at least half of the member's content words (`keeps`):
   a member it keeps less of stays out of the merge, as it was said ("They were awestruck and humbled." dropped
   as a reaction is not retired by a text without it). A question's words count only when nothing else the member
   says is a statement; a member that says nothing at all (`unsaid`: small talk) is cited unsaid.
"""

from __future__ import annotations

import calendar
import math
import re
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from functools import lru_cache

import numpy as np

from zeromem.core.domain.entities import extract_entities
from zeromem.core.domain.recall import content_words
from zeromem.core.domain.text import (
    NUMBER,
    QUERY_STOP_WORDS,
    starts_with_digit,
    stems,
    word_set,
    words,
)
from zeromem.core.domain.text import sentences as sentences  # re-exported: jobs and rules split with it here
from zeromem.core.domain.text import split_speaker as split_speaker  # re-exported: jobs/safety.py imports it here
from zeromem.language.content import is_question, text_says_something
from zeromem.language.facts import facts_ahead, facts_of
from zeromem.language.reference import leans_on, left_out
from zeromem.language.rules_tables.merging import (
    AGO,
    FAREWELL,
    LOW_SIGNAL,
    NEGATION,
    NUMBERS,
    RELATIVE,
    SMALL_TALK,
    THIN_WORDS,
    VOCATIVE,
)
from zeromem.language.rules_tables.text import STOP_WORDS
from zeromem.language.values import normalised, values_less, written_in

_QUESTION = re.compile(r"\?\s*(?:\[shares image:[^\]]*\])?\s*$")


@dataclass(frozen=True)
class Member:
    text: str
    on: date  # the member's date: what its relative dates mean
    written: bool = False  # a semantic memory (a text written before), not a turn as it was said
    chatter: bool = False  # a reader calls it chatter: small talk a merge cites without writing (`member_unsaid`)
    # A reply to a question (`closing_question` of the turn before it, "Speaker: question"): a text writing the reply
    # opens it with the question, so "Unemployment was the reason behind it." says what it is the reason for.
    asked: str | None = None


@dataclass
class Chunk:
    """One merged text, the indexes of the members it stands for, and of those whose words it keeps (`voiced`):
    what it says was said when they were, so they alone date it."""

    text: str
    members: list[int] = field(default_factory=list)
    voiced: list[int] = field(default_factory=list)


@dataclass
class _Sentence:
    member: int
    speaker: str
    text: str
    words: frozenset[str]
    values: frozenset[str]


def is_low_signal(sentence: str, common_names: frozenset[str] = frozenset()) -> bool:
    """Greetings, acknowledgements, bare questions and value-free small talk state nothing a later question
    could need. `common_names` (lower-cased; e.g. the two people talking) do not count as concrete values, and
    neither does the name of the person spoken to ("Wow, Mel, that's awesome!")."""
    text = _unaddressed(sentence)
    if LOW_SIGNAL.match(text) or FAREWELL.match(text):
        return True
    vague = bool(_QUESTION.search(text) or SMALL_TALK.match(text)) or _content_words(text) <= 2
    return vague and _valueless(text, common_names)


# A merged text must carry at least this many words that are about something ("The stunning views really make you
# think." carries three).
MIN_SUBSTANCE = 4


def substance(text: str, *, filler: frozenset[str] = THIN_WORDS) -> int:
    """How much a text is about: its distinct words beyond stop words and chat filler (names included), and its
    numbers (the speaker's name aside)."""
    body = split_speaker(text)[1]
    content = {w for w in words(body) if len(w) > 2 and w not in QUERY_STOP_WORDS and w not in filler}
    return len(content) + len(set(NUMBER.findall(body)))


# What a written text must say beyond: chat filler and the openers of a remark ("It's inspiring to be around
# people like that." is about nothing in particular). Claims keep "I'm" ("I'm learning the violin" is a claim).
_WRITTEN_FILLER = THIN_WORDS | word_set("it's i'm you're we're they're")


def _written_substance(text: str) -> int:
    return substance(text, filler=_WRITTEN_FILLER)


def is_uninformative(text: str, common_names: frozenset[str] = frozenset()) -> bool:
    """Says nothing durable: every sentence recognisably a greeting, a reaction, thanks, a goodbye or small talk
    without a value. Stricter than `is_low_signal`: a short plain statement ("I quit smoking.") is no small talk."""
    parts = sentences(split_speaker(text)[1])
    return bool(parts) and all(_small_talk(part, common_names) for part in parts)


def is_chatter(text: str, common_names: frozenset[str] = frozenset()) -> bool:
    """`is_uninformative`, or small talk around questions that carry no value ("Wow! What did you paint?"): the
    answer after it says what matters, and a question is no knowledge. Never a text with a statement in it: a
    sentence, no question, that carries a value by the parse ("Saturday works for me!")."""
    parts = sentences(split_speaker(text)[1])
    said = [part for part in parts if not _QUESTION.search(part)]
    return bool(parts) and all(_small_talk(part, common_names, questions=True) for part in parts) \
        and not any(values_less(facts_of(part).values, _names(split_speaker(text)[0])) for part in said)


def _named(sentence: str, speaker: str, common_names: frozenset[str]) -> frozenset[str]:
    """The values of a sentence that are no name common in the store nor a short form of one (the people
    talking: "That's so cool, Deb!" of Deborah) — a name by the parse, so a date or a count stays even where the
    store also writes the word capitalised ("Tomorrow…", "Two…") — unless the sentence opens with it ("Garlic is my
    go-to ingredient.": a word the store also writes in lower case is common too, yet here it is what the sentence
    is about; "Garlic's my go-to ingredient.": the value is the opening word, however the verb is joined to it)."""
    candidates = facts_of(sentence).values
    values = values_less(candidates, _names(speaker))
    opening = normalised(sentence)
    return values_less(candidates, _names(speaker) | common_names) | {
        value for value in values if re.match(rf"{re.escape(value)}(?!\w)", opening)}


def _names(speaker: str) -> frozenset[str]:
    return frozenset({normalised(speaker)} if speaker else ())


def _small_talk(sentence: str, common_names: frozenset[str], *, questions: bool = False) -> bool:
    text = _unaddressed(sentence)
    if LOW_SIGNAL.match(text) or FAREWELL.match(text):
        return True
    chat = bool(SMALL_TALK.match(text)) or (questions and bool(_QUESTION.search(text)))
    return chat and _valueless(text, common_names)


_CASED_WORD = re.compile(r"[A-Za-z][A-Za-z']*")


def plain_openers(texts: Iterable[str]) -> frozenset[str]:
    """Capitalised words that open a sentence yet name nothing: the texts also write them in lower case and never
    capitalise them inside a sentence ("Gorgeous!", "Appreciate it."; "LeBron is incredible." and "Max!" keep their
    names). Lower-cased, as `common_names` takes them: such an opener is no value worth keeping small talk for."""
    opening: set[str] = set()
    inside: set[str] = set()
    lower: set[str] = set()
    for text in texts:
        for sentence in sentences(split_speaker(text)[1]):
            tokens = _CASED_WORD.findall(sentence)
            if tokens and tokens[0][0].isupper():
                opening.add(tokens[0].lower())
            for token in tokens[1:]:
                (lower if token.islower() else inside).add(token.lower())
    return frozenset((opening & lower) - inside)


def _unaddressed(sentence: str) -> str:
    """The sentence without the name of the person spoken to: who is talking, not what is said."""
    bare = VOCATIVE.sub(r"\1", sentence.strip())
    return re.sub(r"\s*,\s*(?=[,!?.]|$)", "", bare)


def _valueless(text: str, common_names: frozenset[str]) -> bool:
    return not NUMBER.search(text) and not _has_name(text, common_names) and not concrete_values(text) - common_names


def _content_words(text: str) -> int:
    # "It's special to me." says too little to keep on its own.
    return sum(1 for w in words(text) if w not in STOP_WORDS and len(w) > 2)


_NOT_NAMES = frozenset({"I", "I'm", "I've", "I'd", "I'll"})


def _has_name(text: str, common_names: frozenset[str]) -> bool:
    # A capitalised word after the first one ("I" aside) names someone or something.
    words = (w.strip(".,!?;:'\"()") for w in text.split()[1:])
    return any(w[:1].isupper() and w not in _NOT_NAMES and w.lower() not in common_names for w in words)


def concrete_values(sentence: str) -> frozenset[str]:
    """Numbers, dates and names: what a merge must never lose."""
    return frozenset(NUMBER.findall(sentence)) | frozenset(e.lower() for e in extract_entities(sentence))


# --- relative dates ----------------------------------------------------------------------------------------

def _day(d: date) -> str:
    return f"{d.day} {calendar.month_name[d.month]} {d.year}"


def _month(d: date, delta: int) -> str:
    index = d.year * 12 + d.month - 1 + delta
    return f"{calendar.month_name[index % 12 + 1]} {index // 12}"


def _anchor_relative(phrase: str, on: date) -> str:
    p = phrase.lower()
    fixed = {"yesterday": _day(on - timedelta(days=1)), "last night": _day(on - timedelta(days=1)),
             "tomorrow": _day(on + timedelta(days=1)), "last month": _month(on, -1), "this month": _month(on, 0),
             "next month": _month(on, 1), "last year": str(on.year - 1), "this year": str(on.year),
             "next year": str(on.year + 1), "last week": f"the week before {_day(on)}",
             "last weekend": f"the weekend before {_day(on)}", "this week": f"the week of {_day(on)}",
             "this weekend": f"the weekend of {_day(on)}", "next week": f"the week after {_day(on)}",
             "next weekend": f"the weekend after {_day(on)}"}
    if p in fixed:
        return fixed[p]
    if p.startswith("last "):
        return _last_season(p[5:], on)
    return _day(on)  # today, tonight, this morning/afternoon/evening


_SEASON_START = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}  # northern meteorological seasons


def _last_season(season: str, on: date) -> str:
    """The latest such season that was over when it was said ("last summer" said in January 2024 is summer 2023,
    never the summer to come; said in July, the one a year before). A winter runs December to February."""
    month = on.year * 12 + on.month - 1
    start = on.year * 12 + _SEASON_START[season] - 1
    while start + 2 >= month:  # not over yet
        start -= 12
    year = start // 12
    return f"winter {year}–{year + 1}" if season == "winter" else f"{season} {year}"


def _anchor_ago(match: re.Match[str], on: date) -> str:
    amount = int(match.group(1)) if match.group(1).isdigit() else NUMBERS[match.group(1).lower()]
    unit = match.group(2).lower()
    if unit == "day":
        return _day(on - timedelta(days=amount))
    if unit == "week":
        return f"the week of {_day(on - timedelta(weeks=amount))}"
    if unit == "month":
        return _month(on, -amount)
    return str(on.year - amount)


# A weekday said relative to the day it was said on ("last Friday", "next Tues"): the names come from the calendar,
# in full and abbreviated, so no word list is written here.
_WEEKDAYS = {name.lower(): name for name in calendar.day_name} | {
    short.lower(): name for short, name in zip(calendar.day_abbr, calendar.day_name, strict=True)}
WEEKDAY = re.compile(rf"\b(last|next) ({'|'.join(sorted(_WEEKDAYS, key=len, reverse=True))})\b(?! \()", re.I)


def _anchor_weekday(match: re.Match[str], on: date) -> str:
    """"last Friday" said on 5 February 2023 → "the Friday before 5 February 2023": the day it points at, in words
    as plain as the speaker's (said on a Saturday, "last Friday" may be the day before or a week earlier)."""
    side = "before" if match.group(1).lower() == "last" else "after"
    return f"the {_WEEKDAYS[match.group(2).lower()]} {side} {_day(on)}"


def anchor_dates(sentence: str, on: date) -> str:
    """Append the absolute date after each relative expression: "last year" → "last year (2022)", "last Friday" →
    "last Friday (the Friday before 5 February 2023)". One counted from another date ("the day before yesterday",
    "the week after next month") is left as it was: anchoring the word it counts from would write a wrong date."""
    sentence = AGO.sub(lambda m: f"{m.group(0)} ({_anchor_ago(m, on)})", sentence)
    sentence = _anchored(WEEKDAY, sentence, lambda m: _anchor_weekday(m, on))
    return _anchored(RELATIVE, sentence, lambda m: _anchor_relative(m.group(0), on))


def _anchored(pattern: re.Pattern[str], sentence: str, anchor: Callable[[re.Match[str]], str]) -> str:
    """Each match of `pattern` with its `anchor` after it, but one counted from another date (`_counted_from`)."""
    return pattern.sub(lambda m: m.group(0) if _counted_from(m) else f"{m.group(0)} ({anchor(m)})", sentence)


def _says_relative_date(text: str) -> bool:
    """Whether the text says a date relative to when it was said (what `anchor_dates` anchors)."""
    return any(pattern.search(text) for pattern in (AGO, RELATIVE, WEEKDAY))


def _counted_from(match: re.Match[str]) -> bool:
    return match.string[:match.start()].lower().endswith(("before ", "after "))


# --- merging -----------------------------------------------------------------------------------------------

def _sentences_of(members: Sequence[Member], common_names: frozenset[str]) -> list[_Sentence]:
    return [_Sentence(index, *parsed) for index, member in enumerate(members)
            for parsed in _parsed_sentences(member, common_names)]


@lru_cache(maxsize=4096)
def _parsed_sentences(member: Member, common_names: frozenset[str]
                      ) -> tuple[tuple[str, str, frozenset[str], frozenset[str]], ...]:
    """(speaker, anchored text, content words, values) of each informative sentence of a member. Cached: a run
    parses a cluster's members to find its paraphrase candidates and again to merge them, and the parse (entity
    extraction above all) is most of the plan's time; bounded, so a worker's memory stays flat."""
    if member.chatter:
        return ()
    speaker, body = split_speaker(member.text)
    return tuple((speaker, anchored, _content(anchored), concrete_values(anchored))
                 for text in _informative(sentences(body), common_names, speaker)
                 for anchored in [anchor_dates(text, member.on)])


def _informative(parts: Sequence[str], common_names: frozenset[str], speaker: str) -> list[str]:
    """The sentences that are not low-signal, a statement that looks like small talk ("Saturday works for me!":
    it carries a value by the parse), and a low-signal one the next kept sentence leans on ("Did your doctor say
    anything? They gave me tips.": without the question, "they" points at nothing)."""
    keep = [not is_low_signal(text, common_names) for text in parts]
    for i, kept in enumerate(keep):
        if not kept and not _QUESTION.search(parts[i]):
            keep[i] = bool(_named(parts[i], speaker, common_names))
    for i in range(1, len(parts)):
        if keep[i] and not keep[i - 1] and leans_on(parts[i], parts[i - 1]):
            keep[i - 1] = True
    return [text for text, kept in zip(parts, keep, strict=True) if kept]


def _redundant(candidate: _Sentence, kept: _Sentence, threshold: float, lossless: bool) -> bool:
    """`kept` already says what `candidate` says: the same speaker, most words (or every one, and both or neither
    denying something) and every value in common; with `lossless`, every content word too ("allergic to gluten" is
    not "allergic to sesame")."""
    if candidate.speaker != kept.speaker or not candidate.words:
        return False
    overlap = len(candidate.words & kept.words) / len(candidate.words | kept.words)
    contained = candidate.words <= kept.words and _negated(candidate.text) == _negated(kept.text)
    return ((overlap >= threshold or contained) and candidate.values <= kept.values
            and not (lossless and candidate.words - kept.words))


# A statement (a sentence with a value) is said by another that writes its values and this share of its words.
STATED_SHARE = 0.8


def _statement_kept(candidate: _Sentence, kept: _Sentence) -> bool:
    """Whether dropping `candidate` for `kept` loses no statement: it carries no value by the parse, or `kept`
    writes every one of its values and most of its words, their lemmas by the parse as `statements_lost` reads them
    ("Garlic is my go-to ingredient." is not said by "Cooking is my go-to.", nor a caption of two dogs in the grass
    by one of two dogs in a field, nor "Sure, here are seven names for the virtual app:" by "Here are seven names for
    the app:")."""
    values = _parsed_values(candidate.text)
    if not values:
        return True
    wanted, written = facts_of(candidate.text).lemmas, facts_of(kept.text).lemmas
    return written_in(values, kept.text) and len(wanted & written) >= STATED_SHARE * len(wanted)


def _parsed_values(sentence: str) -> frozenset[str]:
    return values_less(facts_of(sentence).values, frozenset())


def _negated(text: str) -> bool:
    """Whether a sentence denies something: "I don't like dogs" is not said by "I like dogs and cats"."""
    return bool(NEGATION.search(text))


@dataclass(frozen=True)
class Meaning:
    """Sentence vectors (unit length, by sentence text) and the cosine at which two sentences say the same."""

    vectors: Mapping[str, np.ndarray]
    threshold: float


NO_MEANING = Meaning({}, 1.0)
# "I adopted a dog" and "Last year I got a dog" share no value yet may say one thing; "I ran 5 km" and "I ran 10
# km" never do. A pair is compared by meaning only when neither has a value the other lacks and they share a
# content word: the rest cannot be the same statement, and need no vector.
_MIN_PARAPHRASE_WORDS = 3


def _maybe_paraphrases(a: _Sentence, b: _Sentence) -> bool:
    return (a.speaker == b.speaker and a.values == b.values and bool(a.words & b.words)
            and min(len(a.words), len(b.words)) >= _MIN_PARAPHRASE_WORDS)


def _paraphrase(candidate: _Sentence, kept: _Sentence, meaning: Meaning) -> bool:
    a, b = meaning.vectors.get(candidate.text), meaning.vectors.get(kept.text)
    return (a is not None and b is not None and _maybe_paraphrases(candidate, kept)
            and float(a @ b) >= meaning.threshold)


def paraphrase_candidates(members: Sequence[Member], common_names: frozenset[str] = frozenset()) -> set[str]:
    """The sentences of a cluster (as `merge_cluster` keeps them, dates anchored) that could be paraphrases of one
    another: what the caller embeds into `Meaning.vectors`."""
    found = _sentences_of(members, common_names)
    return {s.text for i, a in enumerate(found) for b in found[i + 1:] if _maybe_paraphrases(a, b)
            for s in (a, b)}


def meaning_of(texts: Sequence[str], vectors: Sequence[Sequence[float] | None], threshold: float) -> Meaning:
    """A `Meaning` from sentences and their vectors (None where one could not be embedded: compared by words)."""
    unit = {t: np.asarray(v, dtype=np.float32) / max(float(np.linalg.norm(v)), 1e-9)
            for t, v in zip(texts, vectors, strict=True) if v is not None}
    return Meaning(unit, threshold)


def _collapse(found: list[_Sentence], threshold: float, lossless: bool, meaning: Meaning,
              said: Sequence[_Sentence] = ()) -> list[_Sentence]:
    """Most complete first (longest; most recent member on a tie), then drop what a kept one (or one of `said`,
    what other memories already state) already says, in the same words or (`meaning`) in others — unless the next
    sentence of its member leans on it ("Thanks for your care, Maria. It's been tough…": said elsewhere, the
    thanks still names what "it" is about)."""
    after = {id(s): n for s, n in zip(found, found[1:], strict=False) if s.member == n.member}
    ranked = sorted(found, key=lambda s: (-len(s.text), -s.member))
    kept: list[_Sentence] = list(said)
    for sentence in ranked:
        said_already = any((_redundant(sentence, other, threshold, lossless)
                            or (not lossless and _paraphrase(sentence, other, meaning)))
                           and _statement_kept(sentence, other) for other in kept
                           if not _another_picture(sentence, other))
        if not said_already or _leaned_on(sentence, after.get(id(sentence))):
            kept.append(sentence)
    chosen = {id(s) for s in kept}
    return [s for s in found if id(s) in chosen]  # back in conversation order


_PICTURE = re.compile(r"^\[shares image:")


def _another_picture(candidate: _Sentence, other: _Sentence) -> bool:
    """Two captions of pictures shared in two turns describe two pictures, however alike their words ("a bench
    looking at the sunset" is not "a bench in a forest"): neither says the other."""
    return candidate.member != other.member and bool(_PICTURE.match(candidate.text)) \
        and bool(_PICTURE.match(other.text))


def _leaned_on(sentence: _Sentence, following: _Sentence | None) -> bool:
    return following is not None and leans_on(following.text, sentence.text)


def _pack(kept: list[_Sentence], limit: int) -> list[Chunk]:
    """Whole members only (a member is cited by exactly one text), in order, as few texts as fit `limit`;
    one member longer than `limit` gets a text of its own."""
    by_member: dict[int, list[_Sentence]] = {}
    for sentence in kept:
        by_member.setdefault(sentence.member, []).append(sentence)
    chunks: list[Chunk] = []
    speaker: str | None = None
    for member, group in by_member.items():
        body = " ".join(s.text for s in group)
        joined = body if group[0].speaker in ("", speaker) else f"{group[0].speaker}: {body}"
        if chunks and len(_closed(chunks[-1].text)) + 1 + len(joined) <= limit:
            chunks[-1].text = f"{_closed(chunks[-1].text)} {joined}"
            chunks[-1].members.append(member)
            chunks[-1].voiced.append(member)
        else:
            alone = f"{group[0].speaker}: {body}" if group[0].speaker else body
            chunks.append(Chunk(alone, [member], [member]))
        speaker = group[0].speaker
    return chunks


def joined_length(first: str, second: str) -> int:
    """The length of two texts written as one, as `_pack` joins them: one speaker label where both open with the
    same, a space, and a full stop where the first has no end punctuation. What a fold of their members writes,
    give or take a sentence the two both say (shorter) or speakers taking turns (longer)."""
    speaker, body = split_speaker(second)
    tail = body if speaker and split_speaker(first)[0] == speaker else second.strip()
    return len(_closed(first.strip())) + 1 + len(tail)


def _closed(text: str) -> str:
    """A text another member's follows, ended with a full stop where it has no end punctuation: event lines
    ("search p99 latency 381 ms") would otherwise run on into one sentence."""
    return text if text.rstrip("\"'”’)]").endswith((".", "!", "?", "…", ":", ";")) else f"{text}."


MERGE_REDUNDANCY = 0.7  # word overlap at which two sentences of one speaker say the same (every value in common)


def merge_cluster(members: Sequence[Member], *, limit: int, hard_limit: int = 1000,
                  redundancy: float = MERGE_REDUNDANCY,
                  common_names: frozenset[str] = frozenset(), lossless: bool = False,
                  meaning: Meaning = NO_MEANING, said: Sequence[_Sentence] = ()) -> list[Chunk]:
    """Merged texts for a cluster, each with the members it cites; every member is cited at most once. None when
    the members say nothing (greetings, reactions, thanks, small talk); the members of a text that would say
    nothing, be too thin to write yet state something, or be longer than `hard_limit` (one long member), are cited
    by none: they stay as they were said.
    `common_names`: names so frequent in this store that they say nothing (lower-cased). `lossless`: drop only
    sentences whose every content word a kept one says. `meaning`: the vectors of the cluster's
    `paraphrase_candidates`, so paraphrases collapse too. `said`: the `statements` of other memories of the store;
    what they already say is not written again. Every text keeps what each member it cites said (`keeps`)."""
    facts_ahead(member_sentences(members))
    found = _sentences_of(members, common_names)
    names = common_names | {normalised(s.speaker) for s in found if s.speaker}
    found, apart, quoted = _standing_alone(found, members, names)
    # A member is cited (and so retired) only by a text that keeps what it said (`keeps`), or when it is small talk
    # that says nothing (`unsaid`, what clustering would archive anyway); one a text keeps too little of stays out of
    # the merge, as it was said. The cluster is then merged again without it (a sentence of another member may have
    # been dropped as said by one of its own).
    asked = {n: member.asked for n, member in enumerate(members) if member.asked}
    while True:
        chunks = _written(found, apart, len(members), names, limit, hard_limit, redundancy, lossless, meaning, said,
                          asked, quoted)
        short = {m for c in chunks for m in c.members
                 if not keeps(c.text, members[m].text, names) and not member_unsaid(members[m], names)}
        if not short & {m for c in chunks for m in c.voiced}:
            return [c for c in (replace(c, members=[m for m in c.members if m not in short]) for c in chunks)
                    if c.members]
        apart |= short


def member_sentences(members: Iterable[Member]) -> Iterator[str]:
    """The sentences of the members as the sentence judgements read them (what `facts_ahead` should parse)."""
    return (sentence for member in members for sentence in sentences(split_speaker(member.text)[1]))


# A merged text replaces a member only when it keeps at least this share of the member's content words (the words
# search finds it by): "They were awestruck and humbled." dropped as a reaction leaves its turn unsaid.
KEPT_SHARE = 0.5


def unsaid(text: str, names: frozenset[str]) -> bool:
    """Small talk (`is_chatter`) that says nothing (`text_says_something`): what may be retired with nothing
    written in its place ("Thanks so much!"), by a merge citing it or by archiving."""
    return is_chatter(text, names) and not text_says_something(text, names)


def member_unsaid(member: Member, names: frozenset[str]) -> bool:
    """`unsaid`, or what a reader calls chatter (`Member.chatter`): what a merge may cite without writing it."""
    return member.chatter or unsaid(member.text, names)


def keeps(text: str, member: str, names: frozenset[str] = frozenset()) -> bool:
    """Whether `text` keeps what `member` said: at least KEPT_SHARE of the content words of what it stated. Its
    questions ask, they say nothing a text must keep, unless no other sentence of it says something
    (`text_says_something`): a turn that only reacts and asks ("Wow! Are they yours at the festival?") said what it
    asked."""
    speaker, body = split_speaker(member)
    parts = sentences(body)
    stated = [part for part in parts if not _QUESTION.search(part)]
    if not any(text_says_something(part, names) for part in stated):
        stated = parts
    wanted = frozenset(content_words(" ".join([speaker, *stated])))
    return len(wanted & frozenset(content_words(text))) >= KEPT_SHARE * len(wanted)


def _written(found: list[_Sentence], apart: set[int], count: int, names: frozenset[str], limit: int,
             hard_limit: int, redundancy: float, lossless: bool, meaning: Meaning, said: Sequence[_Sentence],
             asked: Mapping[int, str], quoted: Collection[int]) -> list[Chunk]:
    """The texts of the `count` members' sentences (`found`) but those of the members kept `apart`, each citing the
    members it stands for: those whose sentences it writes, and those that said nothing new. A member's first
    written sentence opens with the question it answers (`asked`; `quoted`: whatever the answer names)."""
    kept = _collapse([s for s in found if s.member not in apart], redundancy, lossless, meaning, said)
    kept = _with_questions(kept, asked, quoted)
    # A text that says too little is never dressed up as knowledge; its members are cited by a text that says
    # something, or the cluster writes nothing.
    chunks = _pack(kept, limit)
    # A member too long for any text (`hard_limit`) stays as it was said: cut short, its text would retire what it
    # no longer says.
    too_long = {m for c in chunks if len(c.text) > max(limit, hard_limit) for m in c.members}
    chunks = [c for c in chunks if not too_long & set(c.members)]
    # Small talk is never written as knowledge: a text that says nothing (`zeromem.language.content`) is not
    # written, and its members stay as they were said (the chatter among them is archived as such by the caller).
    empty = [c for c in chunks if not text_says_something(c.text, names)]
    said_nothing = {m for c in empty for m in c.members}
    chunks = [c for c in chunks if c not in empty]
    thin = [c for c in chunks if _written_substance(c.text) < MIN_SUBSTANCE]
    chunks = [c for c in chunks if c not in thin]
    if not chunks:
        return []
    # A thin text that states something ("Sounds like Buddy is your sidekick.") is not written, and its members are
    # not cited either: they stay as they were said rather than lose the statement.
    stating = {m for c in thin if any(_parsed_values(s) for s in sentences(split_speaker(c.text)[1]))
               for m in c.members}
    chunks[0].members += [m for c in thin for m in c.members if m not in stating]
    cited = {m for chunk in chunks for m in chunk.members} | stating | said_nothing | apart | too_long
    chunks[0].members += [i for i in range(count) if i not in cited]  # said nothing new: cited by the first
    return chunks


def closing_question(turn: str) -> str | None:
    """The question a turn closes with, under its speaker ("John: What inspired you to go on the hike?"), when it
    names something (not "How about you?"): what the other speaker's next turn answers. A picture shared after it
    aside; None for a turn that closes otherwise, or has no speaker. One question only: quoted before the reply, two
    would be two sentences, and a later merge could cut the quote apart."""
    speaker, body = split_speaker(turn)
    said = [part for part in sentences(body) if not _PICTURE.match(part)]
    if not speaker or not said or not _QUESTION.search(said[-1]) or not facts_of(said[-1]).names_something:
        return None
    return f"{speaker}: {said[-1]}"


def _with_questions(kept: list[_Sentence], asked: Mapping[int, str], quoted: Collection[int] = ()
                    ) -> list[_Sentence]:
    """`kept` with each asking member's first sentence opened by the question it answers, in brackets: one sentence
    with it, so no later merge cuts them apart. Only where the answer names none of the things the question asks
    about ("How was the event?" — "I met some investors."; not "What's your favourite part of the studio?" — "I
    love running my own studio.") or leans on it (`quoted`), and the question is not written already (its
    asker's turn is in the text)."""
    written = {s.text for s in kept}
    first: dict[int, int] = {}
    said: dict[int, set[str]] = defaultdict(set)
    for n, sentence in enumerate(kept):
        first.setdefault(sentence.member, n)
        said[sentence.member] |= sentence.words
    out = list(kept)
    for member, n in first.items():
        question = asked.get(member)
        body = split_speaker(question)[1] if question is not None else ""
        if body and body not in written and (member in quoted or not _asks_about(body) & said[member]):
            out[n] = replace(kept[n], text=f"({question}) {kept[n].text}")
    return out


def _asks_about(question: str) -> set[str]:
    """The things a question names (by the parse), in the forms a sentence's `words` take."""
    return {word for kind, lemma in facts_of(question).mentions if kind in ("thing", "mass") for word in words(lemma)}


def _standing_alone(found: list[_Sentence], members: Sequence[Member], names: frozenset[str]
                    ) -> tuple[list[_Sentence], set[int], set[int]]:
    """What a merge may write of each member's sentences, the members it may not merge, and those it writes after
    the question they answer. A sentence that leans on another turn (`leans_outside`: "Looks like fun!", "I bet
    they look adorable!") would, in a merged text, point at whatever came before it there: one that says nothing (a
    reaction) is left out of the text, its member still cited; one that says something ("He's a German Shepherd."
    answering "What breed is Toby?") keeps its turn out of the merge, as it was said, unless the text can open it
    with the question it answers (`Member.asked`): then the turn is written whole after it, as it was said. So does
    a turn that only asks (`_only_asks`). A text written before (a semantic memory the cluster joins) is merged as
    it is."""
    by_member: dict[int, list[_Sentence]] = defaultdict(list)
    for sentence in found:
        by_member[sentence.member].append(sentence)
    dropped: set[int] = set()
    answers: set[int] = set()
    quoted: set[int] = set()
    for member, own in by_member.items():
        if members[member].written:
            continue
        leaning, saying = left_out([s.text for s in own], names)
        if saying and members[member].asked:  # written whole after the question: nothing in it points elsewhere
            quoted.add(member)
            leaning = []
        elif saying or _only_asks([s.text for n, s in enumerate(own) if n not in leaning]):
            answers.add(member)
        dropped |= {id(own[n]) for n in leaning}
    return [s for s in found if id(s) not in dropped], answers, quoted


def _only_asks(texts: list[str]) -> bool:
    """Questions and nothing else ("Where in England was it?" after a reaction left out): written after another
    turn's statements, a question reads as asked of them ("I found a violin concert. Where in England was it?")."""
    return bool(texts) and all(is_question(text) for text in texts)


def speakers(texts: Iterable[str]) -> frozenset[str]:
    """The names of the texts' speakers, normalised as values are: no value in what they say."""
    return frozenset(normalised(split_speaker(text)[0]) for text in texts) - {""}


def statements(members: Sequence[Member], common_names: frozenset[str] = frozenset()) -> list[_Sentence]:
    """The informative sentences of memories, as `merge_cluster(said=...)` takes them."""
    return [_Sentence(-1, *parsed) for member in members for parsed in _parsed_sentences(member, common_names)]


@dataclass
class Said:
    """What other memories already state, indexed by speaker and by each value and content word, so a text is
    compared only with the statements that could say one of its sentences (`near`), not with all of a user's.
    `per_key`: the most recent statements looked at under one key, so a word every statement has costs no more
    than a rare one (a run stays linear in the user's memories; past it, a repeat may stay unnoticed)."""

    per_key: int = 128
    _by_value: dict[tuple[str, str], list[_Sentence]] = field(default_factory=lambda: defaultdict(list))
    _by_word: dict[tuple[str, str], list[_Sentence]] = field(default_factory=lambda: defaultdict(list))

    def add(self, found: Iterable[_Sentence]) -> None:
        for sentence in found:
            for value in sentence.values:
                self._by_value[(sentence.speaker, value)].append(sentence)
            for word in sentence.words:
                self._by_word[(sentence.speaker, word)].append(sentence)

    def near(self, found: Iterable[_Sentence], *, redundancy: float, meaning: Meaning = NO_MEANING
             ) -> list[_Sentence]:
        """The statements that may say one of `found` (as `merge_cluster(said=...)` takes them)."""
        out: dict[int, _Sentence] = {}
        for sentence in found:
            for bucket in self._buckets(sentence, redundancy, meaning):
                out.update((id(other), other) for other in bucket[-self.per_key:])
        return list(out.values())

    def _buckets(self, sentence: _Sentence, redundancy: float, meaning: Meaning) -> list[list[_Sentence]]:
        """Where every statement that can say `sentence` is. One that does has all of its values (a paraphrase:
        the same ones), so the rarest value's bucket holds it; without values it shares at least
        ceil(redundancy × |words|) of its words, so it is in one of the |words| − that + 1 rarest words' buckets,
        or for a paraphrase (one word in common is enough) in any of them."""
        speaker, words = sentence.speaker, sentence.words
        if sentence.values:
            return [min((self._by_value.get((speaker, v), []) for v in sentence.values), key=len)]
        buckets = sorted((self._by_word.get((speaker, w), []) for w in words), key=len)
        if sentence.text in meaning.vectors:
            return buckets
        return buckets[:len(words) - math.ceil(redundancy * len(words) - 1e-9) + 1]


def condensed(member: Member, *, limit: int, common_names: frozenset[str] = frozenset(),
              min_saving: int = 10) -> str | None:
    """A lone episode as a semantic memory says it: its low-signal sentences gone, its relative dates anchored.
    None when that is not worth a memory of its own — it drops under `min_saving` characters and anchors no date —
    or when what is left is longer than `limit`, a fragment, or barely says anything."""
    chunks = merge_cluster([member], limit=limit, common_names=common_names)
    if len(chunks) != 1 or len(chunks[0].text) > limit or not _balanced(chunks[0].text):
        return None
    text = chunks[0].text
    if _written_substance(text) <= MIN_SUBSTANCE:  # "It's great for self-care." is left as it was said
        return None
    anchored = _says_relative_date(member.text)
    return text if anchored or len(member.text) - len(text) >= min_saving else None


def condensed_enough(text: str) -> bool:
    """A text of one episode's statements worth a memory: balanced, and saying more than a remark's opener."""
    return _balanced(text) and _written_substance(text) > MIN_SUBSTANCE


_BRACKETS = (("(", ")"), ("[", "]"))


def _balanced(text: str) -> bool:
    """No bracket left open or closed alone ("Hah, yeah!) But…" is the rest of a winking emoticon)."""
    return all(text.count(a) == text.count(b) for a, b in _BRACKETS) and text.count('"') % 2 == 0


TOPIC_SIMILARITY = 0.2  # cosine of two texts' vectors (word overlap without one) at which they share a topic
TOPIC_SHARED_WORDS = 2  # content words two texts must share to be one topic, whatever their vectors say


def topic_similarity(texts: Sequence[str], vectors: Sequence[np.ndarray | None], *, first_row: int = 0
                     ) -> np.ndarray:
    """Pairwise, for the texts from `first_row` on against all of them: the cosine of the texts' vectors, or where
    one has none, the overlap of their content words. Texts sharing fewer than TOPIC_SHARED_WORDS content words are
    not one topic whatever their vectors say (two short first-person chat lines look alike to an embedder); between
    different speakers it is halved (one speaker's account reads as one passage; a statement inside someone else's
    report is lost to search)."""
    speakers, bodies = zip(*(split_speaker(text) for text in texts), strict=True) if texts else ((), ())
    content = [frozenset(w for w in stems(body) if not starts_with_digit(w)) for body in bodies]
    rows = range(first_row, len(texts))
    shape = (len(rows), len(texts))
    similarity = np.array([[_jaccard(content[a], b) for b in content] for a in rows], dtype=np.float32).reshape(shape)
    known = [(i, v) for i, v in enumerate(vectors) if v is not None]
    if known:
        unit = np.zeros((len(texts), len(known[0][1])), dtype=np.float32)
        for i, vector in known:
            unit[i] = np.asarray(vector, dtype=np.float32) / max(float(np.linalg.norm(vector)), 1e-9)
        has = np.zeros(len(texts), dtype=bool)
        has[[i for i, _ in known]] = True
        both = np.outer(has[first_row:], has)
        similarity = np.where(both, unit[first_row:] @ unit.T, similarity)
    related = np.array([[len(content[a] & b) >= TOPIC_SHARED_WORDS for b in content] for a in rows],
                       dtype=bool).reshape(shape)
    same_speaker = np.array([[speakers[a] == b for b in speakers] for a in rows], dtype=bool).reshape(shape)
    return np.where(related, np.where(same_speaker, similarity, similarity / 2), 0.0)


def topic_groups(similarity: np.ndarray, *, threshold: float = TOPIC_SIMILARITY) -> list[list[int]]:
    """Indexes in groups about one thing: a group takes the remaining index most similar to all of its members
    (the least similar pair counts, so a chain cannot drift from allergies to lunches to meetings) while that is
    at least `threshold`. Packed group by group, a batch gives passages that are each about one topic, which search
    finds far better than a stretch of mixed talk. Quadratic in the batch (a reflection batch of ~15), never over
    a user's memories."""
    groups: list[list[int]] = []
    remaining = list(range(len(similarity)))
    while remaining:
        group = [remaining.pop(0)]
        while remaining:
            nearest = max(remaining, key=lambda i: (min(similarity[m][i] for m in group), -i))
            if min(similarity[m][nearest] for m in group) < threshold:
                break
            group.append(nearest)
            remaining.remove(nearest)
        groups.append(group)
    return groups


def fold_into(texts: Sequence[str], similarity: np.ndarray, targets: Sequence[str], *, limit: int,
              threshold: float = TOPIC_SIMILARITY) -> tuple[list[int], list[str]]:
    """For each new text, the passage it ends up in: the most similar earlier one of its topic (`similarity`:
    texts × (targets + texts)) — a target, or one opened by an earlier text — appended to while the result stays
    within `limit`; else a passage of its own, opened at index len(targets) + its own index. Returns those indexes
    and every passage's final text ("" for one never opened). A topic's passage then fills up across texts and
    reflection calls instead of each adding a small one."""
    grown = [*targets, *([""] * len(texts))]
    homes: list[int] = []
    for index, text in enumerate(texts):
        open_ = [i for i in range(len(targets) + index) if grown[i]]
        fitting = [i for i in open_ if similarity[index][i] >= threshold and len(appended(grown[i], text)) <= limit]
        home = max(fitting, key=lambda i: (similarity[index][i], -i), default=len(targets) + index)
        grown[home] = appended(grown[home], text) if grown[home] else text
        homes.append(home)
    return homes, grown


def pack_passages(texts: Sequence[str], *, limit: int, settled: int = 0, apart: Collection[int] = (),
                  refused: Collection[tuple[int, int]] = ()) -> dict[int, int]:
    """Passages that fit whole into another one, whatever their topic: index → the index it joins (`texts`: ""
    for no passage). The shortest goes first, into the fullest that still has room for it — or, once one of its
    packings was `refused` (a pair of indexes never tried again), into the emptiest, where it is diluted least. A
    passage that took one stays where it is, those before `settled` only take, and one in `apart` neither moves
    nor takes. Quadratic in the passages of one call and its scope's earlier ones, never over a user's memories."""
    grown = list(texts)
    moved: dict[int, int] = {}
    retried = {small for small, _ in refused}
    movable = (i for i, t in enumerate(grown) if t and i >= settled and i not in apart)
    for small in sorted(movable, key=lambda i: (len(grown[i]), i)):
        if small in moved.values():
            continue
        homes = [i for i, t in enumerate(grown) if t and i != small and i not in apart and i not in moved
                 and (small, i) not in refused and len(appended(t, grown[small])) <= limit]
        if homes:
            home = max(homes, key=lambda i: (-len(grown[i]) if small in retried else len(grown[i]), -i))
            grown[home], grown[small], moved[small] = appended(grown[home], grown[small]), "", home
    return moved


def appended(target: str, text: str) -> str:
    """`target` followed by the sentences of `text` it does not already say (a sentence whose every content word
    one of its sentences has), without repeating the speaker label the target opens with; `target` unchanged when
    it says them all: the text's episode is then only cited."""
    label, body = split_speaker(text)
    said = [_content(sentence) for sentence in sentences(split_speaker(target)[1])]
    fresh = [s for s in sentences(body) if not any(_content(s) <= words for words in said)]
    if not fresh:
        return target
    joined = " ".join(fresh)
    return f"{target} {joined if not label or split_speaker(target)[0] == label else f'{label}: {joined}'}"


def _content(sentence: str) -> frozenset[str]:
    return frozenset(w for w in words(sentence) if w not in STOP_WORDS)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / (len(a | b) or 1)
