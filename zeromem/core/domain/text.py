"""Text helpers shared by the pure modules: stop words, word tokenisers, the "<speaker>: text" split, number
patterns and content-word stems. Standard library only, no Django import.

Where two callers tokenise or filter differently, the variants stay apart under their own names: merging,
contradiction judging, reflection and recall were each tuned (and measured) with their own, so folding them into
one would move results.
"""

from __future__ import annotations

import re

from zeromem.language.rules_tables import word_set as word_set  # re-exported: short word sets are written with it
from zeromem.language.rules_tables.text import FUNCTION_WORDS, STOP_WORDS

# --- stop words ----------------------------------------------------------------------------------------------

# Recall's content words: negations carry no topic there; "really" was never on recall's list (kept off, so
# canary phrases and budget recall do not move).
QUERY_STOP_WORDS = (STOP_WORDS - {"really"}) | FUNCTION_WORDS | frozenset(["not", "no"])

# --- numbers -------------------------------------------------------------------------------------------------

# Digits with any "." "," ":" separators ("3.5", "1,200", "9:30"): a value a merge must never lose.
NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
# Thousands groups and a decimal part only, so an amount, percentage or quantity never swallows "9:30" (entities
# embeds `.pattern` in larger patterns).
DECIMAL_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_LEADING_DIGIT = re.compile(r"\d")


def starts_with_digit(token: str) -> bool:
    """A value rather than a word: "30", "2nd", "9:30", "3pm"."""
    return bool(_LEADING_DIGIT.match(token))


# --- words ---------------------------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9']+")
_LETTER_WORD = re.compile(r"[a-z][a-z0-9']+")
# Hyphenated words stay whole ("billing-api") and numbers keep an ordinal ("3rd").
_STATEMENT_TOKEN = re.compile(rf"[a-z][a-z'-]+|{NUMBER.pattern}(?:st|nd|rd|th)?")
_PUNCTUATION = re.compile(r"[^\w\s]")


def words(text: str) -> list[str]:
    """Lower-cased runs of letters, digits and apostrophes, one character or more (merging)."""
    return _WORD.findall(text.lower())


def letter_words(text: str) -> list[str]:
    """Lower-cased words of two or more characters that start with a letter (stems)."""
    return _LETTER_WORD.findall(text.lower())


def statement_tokens(text: str) -> list[str]:
    """Lower-cased words of two or more letters (hyphens kept) and numbers (contradictions)."""
    return _STATEMENT_TOKEN.findall(text.lower())


def plain_words(text: str) -> list[str]:
    """Lower-cased text split on whitespace once punctuation is blanked; digits and underscores stay (recall)."""
    return _PUNCTUATION.sub(" ", text.lower()).split()


# --- speakers ------------------------------------------------------------------------------------------------

# "Name: text", a name of one to three capitalised words.
_SPEAKER = re.compile(r"^([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}): (.*)$", re.S)
# Lenient about typography (curly apostrophes, any whitespace after the colon): classifying a kind only needs the
# prefix gone, whereas split_speaker's exact form is what a merged text writes back.
_SPEAKER_PREFIX = re.compile(r"^[A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2}:\s+")


def split_speaker(text: str) -> tuple[str, str]:
    """("Name", "text") for "Name: text"; ("", text) when there is no speaker. Both stripped of outer space."""
    match = _SPEAKER.match(text.strip())
    return (match.group(1), match.group(2)) if match else ("", text.strip())


def drop_speaker(text: str) -> str:
    """The text without a leading "Name: " prefix (the text as given when it has none)."""
    return _SPEAKER_PREFIX.sub("", text, count=1)


# --- sentences -----------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
_LETTER = re.compile(r"[^\W\d_]")


def sentences(text: str) -> list[str]:
    """The sentences of `text`. A piece with no letter ("(#12)", "2.") belongs to the sentence before it: alone it
    would be a fragment."""
    found: list[str] = []
    for piece in (s.strip() for s in _SENTENCE_END.split(text)):
        if found and piece and not _LETTER.search(piece):
            found[-1] = f"{found[-1]} {piece}"
        elif piece:
            found.append(piece)
    return found


def normalised_sentence(text: str) -> str:
    """A sentence as compared for repeats: without a leading speaker, lower-cased, runs of whitespace as one space,
    no trailing punctuation. Reflection writes a turn's sentence with and without its speaker, so "Alice: I drink
    tea." and "i drink  tea" are the same sentence."""
    return " ".join(drop_speaker(text.strip()).lower().split()).rstrip(" .!?;:,…")


# --- stems ---------------------------------------------------------------------------------------------------

_SUFFIX = re.compile(r"(?:'s|ing|ed|es|s|ly)$")


def stems(text: str, exclude: frozenset[str] = frozenset()) -> frozenset[str]:
    """Content-word stems of a text (stop words and `exclude`d stems removed)."""
    found = (_SUFFIX.sub("", w) if len(w) > 4 else w for w in letter_words(text) if w not in STOP_WORDS)
    return frozenset(w for w in found if len(w) >= 3 and w not in exclude)


def same_statement(a: str, b: str, threshold: float = 0.8) -> bool:
    """Do two texts say the same thing: stem overlap (Jaccard) >= threshold; equal texts when either has none."""
    first, second = stems(a), stems(b)
    if not first or not second:
        return a.strip().lower() == b.strip().lower()
    return len(first & second) / len(first | second) >= threshold
