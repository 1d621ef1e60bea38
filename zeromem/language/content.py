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

from zeromem.core.domain.text import sentences, split_speaker
from zeromem.language.facts import facts_ahead, facts_of
from zeromem.language.values import values_less


def is_question(sentence: str) -> bool:
    return sentence.rstrip().rstrip("!.").endswith("?")


def said_sentences(text: str) -> tuple[str, list[str]]:
    """The speaker of a text ("" when none) and its sentences that are no question ("Paris?!" is one)."""
    speaker, body = split_speaker(text)
    return speaker, [s for s in sentences(body) if not is_question(s)]


def says_something(texts: Sequence[str], names: frozenset[str] = frozenset()) -> list[bool]:
    """Per text: does one of its sentences that is no question state a value or take a thing (module docstring)?
    `names`: the people talking, lower-cased (no value). Every sentence parsed in one batch."""
    said = [said_sentences(text)[1] for text in texts]
    facts_ahead(sentence for parts in said for sentence in parts)
    return [any(sentence_says_something(sentence, names) for sentence in parts) for parts in said]


def text_says_something(text: str, names: frozenset[str] = frozenset()) -> bool:
    """`says_something` of one text."""
    return any(sentence_says_something(sentence, names) for sentence in said_sentences(text)[1])


def text_reports(text: str, names: frozenset[str] = frozenset()) -> bool:
    """Whether a sentence of the text that is no question carries a value (the people talking aside) or is an
    account (`SentenceFacts.reports`: a first-person subject, a main verb in the past): what a reader's sense of
    chatter never overrules."""
    return any(facts.reports or values_less(facts.values, names)
               for facts in (facts_of(sentence) for sentence in said_sentences(text)[1]))


def in_an_exchange(turns: Sequence[str]) -> list[bool]:
    """Per turn of one conversation, in the order said: does it ask something, or follow a turn that does? A question
    and what follows it are one exchange: "Yeah, awesome! Glad to be part of it." is the answer to "Are you in the
    festival?", and the question is what the answer is about, however much each sounds like chatter alone."""
    asks = [any(is_question(s) for s in sentences(split_speaker(turn)[1])) for turn in turns]
    return [asked or (n > 0 and asks[n - 1]) for n, asked in enumerate(asks)]


def sentence_says_something(sentence: str, names: frozenset[str] = frozenset()) -> bool:
    """A sentence (no question) that carries a value or whose verb takes a thing."""
    facts = facts_of(sentence)
    return facts.takes_a_thing or bool(values_less(facts.values, names))
