"""The values a sentence carries, by spaCy's parse: what makes a sentence a statement a merge may never drop.

A value is an entity of a value type (`VALUE_ENTITIES`: a number, a name, a date, a time, an amount, a place…), a
NUM token counting something, a capitalised PROPN token that does not open the sentence (the tagger calls any
capitalised opener a name), or a frequency (a noun-phrase adverbial with a determiner and a count: "twice a week",
"three times a week"; "every Sunday" is a DATE already). Not values: the speakers' own names (and short forms of
them), the addressee (a name alone between punctuation, an interjection or the sentence's ends: "Thanks, Mel!"), a
one-word "name" that is a capitalised exclamation ("Woohoo!"), a lower-case "name" ("see ya") and a spelled number
standing for a thing ("nice one"). Values are lower-cased, digits as written.

The same definition decides what clustering keeps and what `evaluate` counts as a statement (its
`statements_lost` then checks that an active memory still states each one)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from zeromem.language.pipeline import nlp

VALUE_ENTITIES = frozenset({"CARDINAL", "DATE", "TIME", "MONEY", "QUANTITY", "PERCENT", "ORDINAL", "PERSON", "GPE",
                            "LOC", "ORG", "FAC", "EVENT", "PRODUCT", "WORK_OF_ART", "NORP"})
NAME_ENTITIES = frozenset({"PERSON", "GPE", "LOC", "ORG", "FAC", "EVENT", "PRODUCT", "WORK_OF_ART", "NORP"})
BATCH = 256
_WORD = re.compile(r"\w+")
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'"})


def normalised(text: str) -> str:
    return " ".join(text.translate(_APOSTROPHES).lower().split())


def written_in(values: Iterable[str], text: str) -> bool:
    """Every value appears in `text` as a whole (case, apostrophes and spacing aside): "3" is not found in "2023".
    What an extractive text must write to still state a sentence's values."""
    text = normalised(text)
    return all(value_pattern(value).search(text) for value in values)


@lru_cache(maxsize=4096)
def value_pattern(value: str) -> re.Pattern[str]:
    """A value as whole words of a `normalised` text, where the date a merge anchors may stand after any of its words:
    "last month (August 2023)'s" says "last month's", "next Wednesday (the Wednesday after 29 May 2023) to Sunday"
    says "next Wednesday to Sunday" (`anchor_dates` writes the date right after the relative phrase, which may end
    inside a longer value)."""
    words = _WORD_END.split(normalised(value))
    return re.compile(r"(?<!\w)" + _ANCHOR.join(re.escape(w) for w in words) + r"(?!\w)")


_WORD_END = re.compile(r"(?<=\w)(?=[\s'])")  # after a word, before a space or an apostrophe
_ANCHOR = r"(?: \([^()]*\))?"


def values_of(sentences: Sequence[str], speakers: frozenset[str] = frozenset()) -> list[frozenset[str]]:
    """The values of each sentence (parsed in one batch); `speakers`: the names of the people talking,
    lower-cased."""
    return [sentence_values(doc, speakers) for doc in nlp().pipe(list(sentences), batch_size=BATCH)]


def sentence_values(doc: Any, speakers: frozenset[str] = frozenset()) -> frozenset[str]:
    """The values a parsed sentence carries (module docstring), less the speakers' names and the addressee; a value
    inside a longer one ("sunday" in "every sunday") is that one."""
    return values_less(value_candidates(doc), speakers)


Candidate = tuple[str, bool]  # a value as written (normalised), and whether the parse takes it for a name


def value_candidates(doc: Any) -> tuple[Candidate, ...]:
    """Every value of a parsed sentence but the addressee, with whether it is a name: what `values_less` needs to
    leave out the speakers' names, so it can be kept once for any speakers (`zeromem.language.facts`)."""
    spans = [e for e in doc.ents if e.label_ in VALUE_ENTITIES and is_value_entity(e)]
    in_entity = {t.i for e in spans for t in e}
    spans += [doc[t.i:t.i + 1] for t in doc if t.i not in in_entity and is_value_token(t)]
    spans += frequencies(doc)
    return tuple(dict.fromkeys((value, is_name(span)) for span in spans if not is_addressee(span)
                               for value in [normalised(whole_words(span).text)] if _WORD.search(value)))


def values_less(candidates: Iterable[Candidate], speakers: frozenset[str]) -> frozenset[str]:
    """The values of `value_candidates` but the names of `speakers`; a value inside a longer one is that one."""
    values = {value for value, name in candidates if not (name and names_of({value}, speakers))}
    return frozenset(v for v in values if not any(v != w and re.search(rf"(?<!\w){re.escape(v)}(?!\w)", w)
                                                  for w in values))


def whole_words(span: Any) -> Any:
    """The span widened to the words it is written in: the tagger splits "5K" and "3pm" into two tokens, and a
    value "5" is then found in no text as a whole word, not even in the sentence it came from."""
    doc, start, end = span.doc, span.start, span.end
    while start > 0 and _glued(doc[start - 1], doc[start]):
        start -= 1
    while end < len(doc) and _glued(doc[end - 1], doc[end]):
        end += 1
    return doc[start:end]


def _glued(first: Any, second: Any) -> bool:
    """Two tokens written as one word: no space between, letters or digits on both sides of the seam."""
    return not first.whitespace_ and first.text[-1:].isalnum() and second.text[:1].isalnum()


def is_value_entity(entity: Any) -> bool:
    """Not a name the tagger made of a capitalised exclamation ("Woohoo!", "Congrats, Gina!") or a lower-case word
    ("see ya"), nor a spelled number standing for a thing (`counts`): a name is capitalised, and a one-word name
    opening the sentence is its subject or object, not the sentence's head standing alone."""
    if entity.label_ == "CARDINAL":
        return counts(entity.root)
    if entity.label_ not in NAME_ENTITIES:
        return True
    if not any(t.text[:1].isupper() for t in entity):
        return False
    opener = entity.start == 0 and len(entity) == 1
    after = entity.doc[1] if len(entity.doc) > 1 else None
    return not (opener and (entity.root.dep_ in ("ROOT", "intj") or after is None or after.is_punct))


def names_of(values: Iterable[str], speakers: frozenset[str]) -> frozenset[str]:
    """The values naming a speaker: the name, or a short form of its first word ("mel" of "melanie")."""
    firsts = {name.split()[0] for name in speakers if name}
    return frozenset(v for v in values if v in speakers or (len(v) >= 3 and " " not in v
                                                            and any(f.startswith(v) for f in firsts)))


def is_value_token(token: Any) -> bool:
    if token.pos_ == "NUM":
        return counts(token)
    return token.pos_ == "PROPN" and token.i > 0 and token.text[:1].isupper()


def counts(token: Any) -> bool:
    """A number counting something: written in digits, or a spelled number modifying a noun ("three dogs", "two of
    my kids"), not a spelled one standing for a thing ("nice one")."""
    return (any(c.isdigit() for c in token.text) or token.dep_ in ("nummod", "quantmod")
            or any(c.dep_ == "prep" for c in token.children))


def frequencies(doc: Any) -> list[Any]:
    """How often, by the parse: a noun-phrase adverbial with a determiner and a count, an adverb ("twice a week",
    "once a month") or a counted noun it modifies ("three times a week"). "A lot" and "all the way" count nothing."""
    found = []
    for t in doc:
        if t.dep_ != "npadvmod" or t.pos_ not in ("NOUN", "PROPN") or not any(c.dep_ == "det" for c in t.children):
            continue
        if any(c.pos_ == "ADV" for c in t.children):
            found.append(doc[t.left_edge.i:t.right_edge.i + 1])
        elif t.head.dep_ == "npadvmod" and any(c.pos_ == "NUM" for c in t.head.children):
            found.append(doc[t.head.left_edge.i:t.head.right_edge.i + 1])
    return found


def is_name(span: Any) -> bool:
    """A name entity, or proper nouns the tagger put in none ("May" the month is no name: "may" of "Maya")."""
    return span.label_ in NAME_ENTITIES or (not span.label_ and all(t.pos_ == "PROPN" for t in span))


def is_addressee(span: Any) -> bool:
    """A name said to someone: alone between punctuation, an interjection or the ends of the sentence."""
    if span.label_ != "PERSON" and not (not span.label_ and all(t.pos_ == "PROPN" for t in span)):
        return False
    doc = span.doc
    before = doc[span.start - 1] if span.start > 0 else None
    after = doc[span.end] if span.end < len(doc) else None
    return ((before is None or before.is_punct or before.pos_ == "INTJ")
            and (after is None or after.is_punct))


