"""Sentences that lean on the one before: what a merge must not cut apart.

"They could probably give you more tips." is about whoever the sentence before named ("Did your doctor say
anything?"); dropping that one as a bare question leaves "they" pointing at nothing. Decided from the parse: the
sentence opens (interjections and punctuation aside) with a third-person or demonstrative pronoun, and the one
before names something it could point at (a noun or a name)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from zeromem.language.pipeline import nlp


def leans_on(sentence: str, before: str) -> bool:
    """Whether `sentence` refers back to something `before` names."""
    return refers_back(sentence) and names_something(before)


@lru_cache(maxsize=8192)
def refers_back(sentence: str) -> bool:
    """The sentence opens with a third-person or demonstrative pronoun ("they", "that", "it", "those") — not an
    expletive ("It's great to…", "There is…"), which points at nothing."""
    opener = _opener(nlp()(sentence))
    if opener is None or opener.pos_ != "PRON" or opener.dep_ == "expl":
        return False
    kind, person = opener.morph.get("PronType"), opener.morph.get("Person")
    return "Dem" in kind or ("Prs" in kind and person == ["3"] and not _pleonastic(opener))


@lru_cache(maxsize=8192)
def names_something(sentence: str) -> bool:
    return any(token.pos_ in ("NOUN", "PROPN") for token in nlp()(sentence))


# A verb's arguments: the slots a later pronoun's antecedent fills ("What did the doctor say?": the doctor).
_ARGUMENTS = frozenset({"nsubj", "nsubjpass", "dobj", "pobj", "attr", "dative", "oprd"})


@lru_cache(maxsize=8192)
def names_a_thing(sentence: str) -> bool:
    """A noun or name as a verb's argument, which a later pronoun could stand for ("What did the doctor say?"); not
    an exclamation's head ("Thanks a bunch!") or an addressee ("Max!", "Congrats, Gina!")."""
    return any(t.pos_ in ("NOUN", "PROPN") and _argument(t) for t in nlp()(sentence))


def _argument(token: Any) -> bool:
    """In an argument slot, or joined to a noun in one ("my sister and her dog"; not "Pepper and Miso!")."""
    return token.dep_ in _ARGUMENTS or token.dep_ == "conj" and token.head.dep_ in _ARGUMENTS


def points_outside(sentences: list[str]) -> bool:
    """Does one of a turn's sentences refer back with nothing before it in the turn naming a thing it could stand
    for ("Woah! They look ready for an adventure.": "they" are in the turn it answers)?"""
    named = False
    for sentence in sentences:
        if refers_back(sentence) and not named:
            return True
        named = named or names_a_thing(sentence)
    return False


def _opener(doc: Any) -> Any | None:
    return next((t for t in doc if not (t.is_punct or t.pos_ in ("INTJ", "CCONJ") or t.is_space)), None)


def _pleonastic(pronoun: Any) -> bool:
    """"It's fun to paint": the subject "it" stands for the clause that follows (an infinitive or a that-clause on
    its head), not for anything said before."""
    head = pronoun.head
    return pronoun.lower_ == "it" and any(c.dep_ in ("xcomp", "ccomp") for c in head.children) \
        if pronoun.dep_ == "nsubj" else False
