"""Whether a text says something, by spaCy's parse: the one definition by which clustering never writes a semantic
memory that says nothing, and by which `evaluate merges` counts `content_free` texts.

A text says something when one of its sentences that is no question (one ending in "?", "?!") either

- is a **statement**: it carries a value (`zeromem.language.values`: a number, a name, a date, a frequency, a
  place…), the names of the people talking aside; or
- has a verb, or the adjective complementing one, **taking a thing** as object or complement: a noun, a name or a
  number, directly or through a preposition ("I love that painting", "I'm keen on counseling"; not "see you",
  "that's so cool", "stay strong").

Small talk ("I'm glad you're alright. Yeah, it's tough. Stay strong.") says nothing: it is archived or left as it
was said, never written as knowledge. Sentences are the project's own split (`zeromem.core.domain.text.sentences`),
each parsed alone, as `values` parses statements.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from zeromem.core.domain.text import sentences, split_speaker
from zeromem.language.pipeline import doc_of, nlp
from zeromem.language.values import BATCH, sentence_values

OBJECT_DEPS = frozenset({"dobj", "attr", "oprd", "dative", "nsubjpass"})
THINGS = frozenset({"NOUN", "PROPN", "NUM"})


def is_question(sentence: str) -> bool:
    return sentence.rstrip().rstrip("!.").endswith("?")


def said_sentences(text: str) -> tuple[str, list[str]]:
    """The speaker of a text ("" when none) and its sentences that are no question ("Paris?!" is one)."""
    speaker, body = split_speaker(text)
    return speaker, [s for s in sentences(body) if not is_question(s)]


def says_something(texts: Sequence[str], names: frozenset[str] = frozenset()) -> list[bool]:
    """Per text: does one of its sentences that is no question state a value or take a thing (module docstring)?
    `names`: the people talking, lower-cased (no value). Every sentence parsed in one batch."""
    pieces = [(n, sentence) for n, text in enumerate(texts) for sentence in said_sentences(text)[1]]
    found = [False] * len(texts)
    for (n, _), doc in zip(pieces, nlp().pipe([s for _, s in pieces], batch_size=BATCH), strict=True):
        found[n] = found[n] or sentence_says_something(doc, names)
    return found


def text_says_something(text: str, names: frozenset[str] = frozenset()) -> bool:
    """`says_something` of one text, its sentences parsed one by one until one says something (each verdict
    cached: a merge tries the same sentences in many texts)."""
    return any(_sentence_verdict(sentence, names) for sentence in said_sentences(text)[1])


@lru_cache(maxsize=16384)
def _sentence_verdict(sentence: str, names: frozenset[str]) -> bool:
    return sentence_says_something(doc_of(sentence), names)


def sentence_says_something(doc: Any, names: frozenset[str] = frozenset()) -> bool:
    """A parsed sentence (no question) that carries a value or whose verb takes a thing."""
    return bool(sentence_values(doc, names)) or takes_a_thing(doc)


def takes_a_thing(doc: Any) -> bool:
    """A verb, or the adjective complementing one ("keen on counseling"), taking a thing."""
    return any(t.pos_ in ("VERB", "AUX", "ADJ") and any(_is_thing_taken(c) for c in t.children) for t in doc)


def _is_thing_taken(child: Any) -> bool:
    if child.dep_ == "prep":
        return any(g.dep_ == "pobj" and g.pos_ in THINGS for g in child.children)
    return child.dep_ in OBJECT_DEPS and child.pos_ in THINGS
