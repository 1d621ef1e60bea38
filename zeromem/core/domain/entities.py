"""Rule-based entity extraction and kind classification for memory text.

Pure standard library and deterministic: the same text always yields the same entities and kind, so
these can run at write time without a model and be re-run later with identical results.

Extraction runs passes in priority order (URLs before paths before identifiers before names) and a
later pass may not claim characters an earlier one took: that is what keeps a URL's host, or the
"New York" inside "New York City", from showing up twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from zeromem.core.domain.text import DECIMAL_NUMBER, drop_speaker, word_set
from zeromem.language.rules_tables.entities import (
    CONNECTORS,
    DATE,
    DATE_WORDS,
    DECISION,
    DOTFILES,
    FILE_EXTENSIONS,
    META,
    OUTCOME,
    PERSONAL_FACT,
    PREFERENCE,
    QUESTION_START,
    UNIT_SYMBOLS,
    UNIT_WORDS,
    alternation,
)
from zeromem.language.rules_tables.text import CAPITALISED_STOP_WORDS

KINDS = ("observation", "decision", "question", "preference", "outcome", "fact", "meta")


_NOT_NAMES = CAPITALISED_STOP_WORDS | DATE_WORDS
# Shouted stop words are dropped too ("I LOVE THIS SO MUCH"), except these real acronyms.
_ACRONYMS = word_set("US IT WHO")


_UNITS = rf"(?i:{alternation(UNIT_WORDS)})|{alternation(UNIT_SYMBOLS)}"
_NUMBER = DECIMAL_NUMBER.pattern

_URL = re.compile(r"\bhttps?://[^\s<>\"'`]+", re.IGNORECASE)
_EMAIL = re.compile(r"(?<![\w.%+-])[\w.%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_WIN_PATH = re.compile(r"\b[A-Za-z]:\\(?:[^\s\\:*?\"<>|]+\\)*[^\s\\:*?\"<>|]*")
_PATH = re.compile(r"(?<![\w.~/@:\\-])(?:~|\.{1,2}|[A-Za-z_][\w.+-]*)?(?:/[\w.@+-]+)+/?")
_FILENAME = re.compile(
    rf"(?<![\w./\\@-])(?:[\w-]+(?:\.[\w-]+)*\.(?i:{alternation(FILE_EXTENSIONS)})"
    rf"|\.(?:{alternation(DOTFILES)}))(?![\w-]|\.\w)"
)
_MENTION = re.compile(r"(?<![\w@#])[@#]\w(?:[\w.-]*\w)?")
_MONEY = re.compile(
    rf"(?<![\w$€£¥])(?P<sym>[$€£¥])\s?(?P<num>{_NUMBER})"
    r"(?P<suffix>[kKmMbB]\b|\s(?:thousand|million|billion|trillion)\b)?"
)
_PERCENT = re.compile(rf"(?<![\w.,])(?P<num>{_NUMBER})\s?%")
_QUANTITY = re.compile(rf"(?<![\w.,$€£¥])(?P<num>{_NUMBER})(?P<space>\s?)(?P<unit>{_UNITS})(?![\w/°])")
_DECADE_CONTEXT = re.compile(r"(?:\bthe|\bearly|\blate|mid-|['’])\s*$", re.IGNORECASE)
_IDENTIFIER = re.compile(r"(?<![\w./\\@#$'’-])[A-Za-z_]\w*(?:[-.]\w+)*")
_CAMEL = re.compile(r"[a-z][A-Z]")
_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[A-Za-z]")

# A capitalised word: "Caroline", "LGBTQ", "O'Brien", "Jean-Luc", "PostgreSQL", "C++", "C#".
_CAP = r"[A-Z][A-Za-z0-9]*(?:['’][A-Za-z]+|-[A-Za-z0-9]+)*(?:\+\+|#)?(?![\w@])"
_NAME_RUN = re.compile(
    rf"(?<![\w'’@#.\\$-])(?P<name>{_CAP}(?: (?:(?:{'|'.join(sorted(CONNECTORS))}) )?{_CAP})*)"
    # A trailing version belongs to the name ("Django 5.2"), unless it is a quantity ("Redis 512 MB").
    rf"(?: (?P<version>\d+(?:\.\d+)*)(?![\w%/]|[.,]\d|\s?(?:{_UNITS})(?![\w/])))?"
)
_RUN_WORD = re.compile(r"\S+")
_POSSESSIVE = re.compile(r"['’]s$")
_APOSTROPHE = re.compile(r"['’]")

# classify_kind cues.
_QUESTION_END = re.compile(r"\?[\s!?.\"'’”)\]]*$")
_NAMED_SUBJECT = re.compile(r"^(?P<first>[A-Z][\w'’-]*)(?: [A-Z][\w'’-]*)* (?:is|are|was|were|has|have)\b")
_VERSION = re.compile(r"\bv\d+(?:\.\d+)+\b|\b\d+\.\d+\.\d+\b|(?<=[A-Za-z] )\d+\.\d+\b")


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    value: str


_Valuer = Callable[[re.Match[str]], str | None]


def _whole(match: re.Match[str]) -> str:
    return match.group()


def _url_value(match: re.Match[str]) -> str:
    url = match.group().rstrip(".,;:!?'\"")
    # Keep a closing bracket only when the URL opened it, as Wikipedia links do.
    while url[-1] in ")]}" and url.count(url[-1]) > url.count({")": "(", "]": "[", "}": "{"}[url[-1]]):
        url = url[:-1].rstrip(".,;:!?'\"")
    return url


def _path_value(match: re.Match[str]) -> str | None:
    path = match.group().rstrip(".,;:-")
    if len(path) < 2:
        return None
    if path[0] in "/~." or "\\" in path:
        return path
    # A bare "a/b" is usually prose ("and/or", "TCP/IP"); a relative path needs depth or a file name.
    return path if path.count("/") >= 2 or _FILENAME.search(path) else None


def _money_value(match: re.Match[str]) -> str:
    return match["sym"] + match["num"] + (match["suffix"] or "")


def _percent_value(match: re.Match[str]) -> str:
    return match["num"] + "%"


def _quantity_value(match: re.Match[str]) -> str | None:
    before = match.string[max(0, match.start() - 8) : match.start()]
    if match["unit"] == "s" and not match["space"] and _DECADE_CONTEXT.search(before):
        return None  # "the 90s" is a decade, not ninety seconds
    return f"{match['num']} {match['unit']}"


def _identifier_value(match: re.Match[str]) -> str | None:
    token = match.group()
    if "." in token:
        # "e.g" and "a.m" are prose abbreviations; "numpy.linalg" has a real segment.
        return token if any(len(part) > 1 for part in token.split(".")) else None
    if "_" in token:
        return token if _LETTER.search(token) else None
    camel = token[0].islower() and _CAMEL.search(token)
    return token if camel or _DIGIT.search(token) else None


# Concrete values, in claim order; classify_kind reuses them to spot facts.
_VALUE_PASSES: tuple[tuple[re.Pattern[str], _Valuer], ...] = (
    (_URL, _url_value),
    (_EMAIL, _whole),
    (_WIN_PATH, _path_value),
    (_PATH, _path_value),
    (_FILENAME, _whole),
    (_MONEY, _money_value),
    (_PERCENT, _percent_value),
    (_QUANTITY, _quantity_value),
)
_PASSES = _VALUE_PASSES + ((_MENTION, _whole), (_IDENTIFIER, _identifier_value))


def _pass_spans(pattern: re.Pattern[str], valuer: _Valuer, text: str) -> Iterator[_Span]:
    for match in pattern.finditer(text):
        value = valuer(match)
        if value:
            yield _Span(match.start(), match.end(), value)


def _is_stop(word: str) -> bool:
    base = _APOSTROPHE.split(word, maxsplit=1)[0]  # "That's" -> "That", "I'm" -> "I"
    if base in _NOT_NAMES or word.endswith(("n't", "n’t")):
        return True
    return base.isupper() and base not in _ACRONYMS and base.title() in _NOT_NAMES


def _group_span(words: list[re.Match[str]]) -> list[tuple[int, int]]:
    while words and words[-1].group() in CONNECTORS:
        words.pop()
    if not words:
        return []
    possessive = _POSSESSIVE.search(words[-1].group())
    return [(words[0].start(), words[-1].end() - (2 if possessive else 0))]


def _split_run(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Cut a capitalised run at filler words: "Thanks Caroline" -> "Caroline"."""
    groups: list[tuple[int, int]] = []
    words: list[re.Match[str]] = []
    for word in _RUN_WORD.finditer(text, start, end):
        stop = _is_stop(word.group())
        if not stop and (words or word.group() not in CONNECTORS):
            words.append(word)
        if stop or _POSSESSIVE.search(word.group()):
            groups += _group_span(words)
            words = []
    return groups + _group_span(words)


def _name_spans(text: str) -> Iterator[_Span]:
    for run in _NAME_RUN.finditer(text):
        groups = _split_run(text, run.start("name"), run.end("name"))
        if groups and run["version"] and groups[-1][1] == run.end("name"):
            groups[-1] = (groups[-1][0], run.end("version"))
        for start, end in groups:
            yield _Span(start, end, text[start:end])


def _candidates(text: str) -> Iterator[_Span]:
    for pattern, valuer in _PASSES:
        yield from _pass_spans(pattern, valuer, text)
    yield from _name_spans(text)


def extract_entities(text: str, *, limit: int = 20) -> list[str]:
    """What a memory mentions, de-duplicated, in order of first appearance, at most `limit`."""
    taken = bytearray(len(text))
    kept: list[_Span] = []
    for span in _candidates(text):
        if not any(taken[span.start : span.end]):
            taken[span.start : span.end] = b"\x01" * (span.end - span.start)
            kept.append(span)
    values = list(dict.fromkeys(span.value for span in sorted(kept, key=lambda s: s.start)))
    # "New York" said again after "New York City" is the same thing, not a second entity.
    distinct = [value for value in values if not any(_is_part_of(value, other) for other in values)]
    return distinct[: max(limit, 0)]


def _is_word_char(text: str, index: int) -> bool:
    return 0 <= index < len(text) and (text[index].isalnum() or text[index] == "_")


def _is_part_of(part: str, whole: str) -> bool:
    """Whether `part` occurs in a longer `whole` as whole words ("Redis" in "Redis 7", not in "Rediska")."""
    at = whole.find(part) if part != whole else -1
    while at >= 0:
        if not _is_word_char(whole, at - 1) and not _is_word_char(whole, at + len(part)):
            return True
        at = whole.find(part, at + 1)
    return False


def _has_value(text: str) -> bool:
    if DATE.search(text) or _VERSION.search(text):
        return True
    return any(next(_pass_spans(pattern, valuer, text), None) for pattern, valuer in _VALUE_PASSES)


def _has_named_subject(body: str) -> bool:
    match = _NAMED_SUBJECT.match(body)
    return bool(match and not _is_stop(match["first"]))


def _is_question(text: str, body: str) -> bool:
    return bool(_QUESTION_END.search(text) or QUESTION_START.match(body))


def _is_fact(text: str, body: str) -> bool:
    return _has_value(body) or bool(PERSONAL_FACT.search(body)) or _has_named_subject(body)


# First match wins: content-bearing kinds beat the "meta" marker, which beats nothing at all.
_KIND_RULES: tuple[tuple[str, Callable[[str, str], bool]], ...] = (
    ("question", _is_question),
    ("preference", lambda text, body: bool(PREFERENCE.search(text))),
    ("decision", lambda text, body: bool(DECISION.search(text))),
    ("outcome", lambda text, body: bool(OUTCOME.search(text))),
    ("fact", _is_fact),
    ("meta", lambda text, body: bool(META.search(text))),
)


def classify_kind(text: str) -> str:
    """One of KINDS, from simple cue rules; "observation" when nothing more specific applies."""
    text = text.strip()
    body = drop_speaker(text)  # "Melanie: Do you ...?" is asked by Melanie
    for kind, applies in _KIND_RULES:
        if applies(text, body):
            return kind
    return "observation"
