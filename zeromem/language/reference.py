"""Sentences that lean on another: what a merge must not cut apart.

"They could probably give you more tips." is about whoever the sentence before named ("Did your doctor say
anything?"); dropping that one as a bare question leaves "they" pointing at nothing (`leans_on`: the sentence opens,
interjections and punctuation aside, with a third-person or demonstrative pronoun, and the one before names
something it could point at). "Looks like fun!" or "I bet they look adorable!" lean on the other speaker's turn
they answer (`leans_outside`: a pronoun with nothing named before it in the turn, or a subject left out); glued
into a merged text they would point at whatever came before them there. All decided from the parse."""

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


def leans_outside(sentences: list[str]) -> list[bool]:
    """Per sentence of a turn: does it stand for something the turn never names before it? A third-person or
    demonstrative pronoun with no thing named earlier in the turn ("Woah! They look ready for an adventure.",
    "Yeah, I made them myself."), or a finite verb whose subject is left out ("Looks like fun!", "Sure is a
    different experience."): what they are about is in the turn they answer."""
    named, out = False, []
    for sentence in sentences:
        pronoun_first, subject_left_out = _leaning(sentence)
        out.append((pronoun_first and not named) or subject_left_out)
        named = named or names_a_thing(sentence)
    return out


@lru_cache(maxsize=8192)
def _leaning(sentence: str) -> tuple[bool, bool]:
    """(a pronoun standing for a thing comes before any noun or name of the sentence, its subject is left out).
    Cached: a run's folds merge the same sentences many times."""
    doc = nlp()(sentence)
    return _pronoun_first(doc), _subject_left_out(doc)


# Slots where a word before a pronoun can be what it stands for even when the tagger calls a noun a verb or an
# adjective ("allergic to shellfish/VERB, so keep them out").
_COMPLEMENTS = frozenset({"dobj", "pobj", "attr", "acomp", "xcomp", "conj", "oprd"})


def _pronoun_first(doc: Any) -> bool:
    """A pronoun standing for a thing (third person, not "it" of "it's fun to…", or a demonstrative) before any
    noun, name or complement of its sentence."""
    for token in doc:
        if token.pos_ == "PRON":
            if _stands_for_a_thing(token):
                return True
        elif token.pos_ in ("NOUN", "PROPN", "NUM") or token.dep_ in _COMPLEMENTS:
            return False
    return False


def _stands_for_a_thing(pronoun: Any) -> bool:
    if pronoun.dep_ == "expl" or _pleonastic(pronoun):
        return False
    kind, person = pronoun.morph.get("PronType"), pronoun.morph.get("Person")
    return "Dem" in kind or ("Prs" in kind and person == ["3"] and pronoun.morph.get("Reflex") != ["Yes"])


_SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj", "expl"})


def _subject_left_out(doc: Any) -> bool:
    """The sentence's verb is in the third person present ("looks", "is") yet has no subject: it is the "it" or
    "that" of what was said before. (A verb in its bare form is an order or the speaker's own elided "I".)"""
    return any(t.dep_ == "ROOT" and t.tag_ == "VBZ" and not any(c.dep_ in _SUBJECTS for c in t.children)
               for t in doc)


def _opener(doc: Any) -> Any | None:
    return next((t for t in doc if not (t.is_punct or t.pos_ in ("INTJ", "CCONJ") or t.is_space)), None)


def _pleonastic(pronoun: Any) -> bool:
    """"It's fun to paint": the subject "it" stands for the clause that follows (an infinitive or a that-clause on
    its head), not for anything said before."""
    head = pronoun.head
    return pronoun.lower_ == "it" and any(c.dep_ in ("xcomp", "ccomp") for c in head.children) \
        if pronoun.dep_ == "nsubj" else False
