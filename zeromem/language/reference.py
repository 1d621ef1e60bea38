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

from zeromem.language.content import text_says_something
from zeromem.language.pipeline import doc_of


def leans_on(sentence: str, before: str) -> bool:
    """Whether `sentence` refers back to something `before` names."""
    return refers_back(sentence) and names_something(before)


@lru_cache(maxsize=8192)
def refers_back(sentence: str) -> bool:
    """The sentence opens with a third-person or demonstrative pronoun ("they", "that", "it", "those") — not an
    expletive ("It's great to…", "There is…"), which points at nothing."""
    opener = _opener(doc_of(sentence))
    if opener is None or opener.pos_ != "PRON" or opener.dep_ == "expl":
        return False
    kind, person = opener.morph.get("PronType"), opener.morph.get("Person")
    return "Dem" in kind or ("Prs" in kind and person == ["3"] and not _pleonastic(opener))


@lru_cache(maxsize=8192)
def names_something(sentence: str) -> bool:
    return any(token.pos_ in ("NOUN", "PROPN") for token in doc_of(sentence))


# A verb's arguments: the slots a later pronoun's antecedent fills ("What did the doctor say?": the doctor).
_ARGUMENTS = frozenset({"nsubj", "nsubjpass", "dobj", "pobj", "attr", "dative", "oprd"})


@lru_cache(maxsize=8192)
def names_a_thing(sentence: str) -> bool:
    """A noun or name as a verb's argument, which a later pronoun could stand for ("What did the doctor say?"); not
    an exclamation's head ("Thanks a bunch!") or an addressee ("Max!", "Congrats, Gina!")."""
    return any(t.pos_ in ("NOUN", "PROPN") and _argument(t) for t in doc_of(sentence))


def _argument(token: Any) -> bool:
    """In an argument slot, or joined to a noun in one ("my sister and her dog"; not "Pepper and Miso!")."""
    return token.dep_ in _ARGUMENTS or token.dep_ == "conj" and token.head.dep_ in _ARGUMENTS


def leans_outside(sentences: list[str]) -> list[bool]:
    """Per sentence of a turn: does it stand for something the turn never names before it? What it is about is then
    in the turn it answers:
    - a third-person or demonstrative pronoun with no thing named before it in the turn ("Woah! They look ready for
      an adventure.", "Yeah, I made them myself.");
    - "this", "that", "these" or "those" before a noun the turn has not named ("That hiking spot looks great");
    - a main verb whose subject is left out, where it is the "it" or "that" of what was said before: a verb in the
      third person present or the copula ("Looks like fun!", "Must have been amazing!"; a bare verb is an order
      or the speaker's own elided "I").
    A sentence that leans names nothing a later one may stand for: a merge leaves it out, or the turn as said.
    (A pronoun's number is no guide: "they" may be one doctor.)"""
    nouns: set[str] = set()
    out = []
    for sentence in sentences:
        mentions, leans = _mentions(sentence)
        seen = set(nouns)
        for kind, lemma in mentions:
            if kind == "pronoun":
                leans = leans or not seen
            elif kind == "pointed":
                leans = leans or lemma not in seen
            else:
                seen.add(lemma)
        out.append(leans)
        nouns = nouns if leans else seen
    return out


def left_out(sentences: list[str], names: frozenset[str] = frozenset()) -> tuple[list[int], bool]:
    """What a text written from one turn's sentences (a merge, a remainder) may not hold: the sentences that lean
    on another turn (`leans_outside`), which would point at whatever came before them there; and whether the turn
    must rather stay as it was said, because one of them says something ("He's a German Shepherd." answering
    "What breed is Toby?") or the next sentence leans on it ("That pic is gorgeous! It gives me hope.").
    `names`: the names that are no value (the people talking)."""
    leaning = [n for n, leans in enumerate(leans_outside(sentences)) if leans]
    as_said = any(text_says_something(sentences[n], names)
                  or n + 1 < len(sentences) and leans_on(sentences[n + 1], sentences[n]) for n in leaning)
    return leaning, as_said


Mention = tuple[str, str]  # (thing | pronoun | pointed, lemma)


@lru_cache(maxsize=8192)
def _mentions(sentence: str) -> tuple[tuple[Mention, ...], bool]:
    """The sentence's things named, pronouns standing for a thing and things pointed at with "this"/"that", in
    order; and whether its subject is left out. Cached: a run's folds merge the same sentences many times."""
    doc = doc_of(sentence)
    found: list[Mention] = []
    for token in doc:
        if token.pos_ == "PRON":
            if _stands_for_a_thing(token):
                found.append(("pronoun", ""))
            continue
        if _pointed(token):
            found.append(("pointed", token.lemma_.lower()))
        if _argument(token) or token.dep_ in _COMPLEMENTS:
            found.append(("thing", token.lemma_.lower()))
    return tuple(found), _subject_left_out(doc)


# Slots where a word can be what a later pronoun stands for even when the tagger calls a noun a verb ("allergic to
# shellfish/VERB, so keep them out"); not an adjective's ("I'm sure they'll love it").
_COMPLEMENTS = frozenset({"dobj", "pobj", "attr", "xcomp", "oprd"})


def _pointed(token: Any) -> bool:
    """A noun after "this", "that", "these" or "those" (a demonstrative determiner by the parse), not a time
    ("this weekend" points at the calendar, not at another turn)."""
    return token.pos_ == "NOUN" and token.ent_type_ not in ("DATE", "TIME") and any(
        c.dep_ == "det" and "Dem" in c.morph.get("PronType") for c in token.children)


def _stands_for_a_thing(pronoun: Any) -> bool:
    if pronoun.dep_ == "expl" or _pleonastic(pronoun):
        return False
    kind, person = pronoun.morph.get("PronType"), pronoun.morph.get("Person")
    return "Dem" in kind or ("Prs" in kind and person == ["3"] and pronoun.morph.get("Reflex") != ["Yes"])


_SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj", "expl"})


def _subject_left_out(doc: Any) -> bool:
    """The main verb has no subject, and is in the third person present ("looks", "is") or is the copula ("Must
    have been amazing"): it is the "it" or "that" of what was said before."""
    return any(t.dep_ == "ROOT" and (t.tag_ == "VBZ" or t.lemma_ == "be" and t.pos_ == "AUX")
               and not any(c.dep_ in _SUBJECTS for c in t.children) for t in doc)


def _opener(doc: Any) -> Any | None:
    return next((t for t in doc if not (t.is_punct or t.pos_ in ("INTJ", "CCONJ") or t.is_space)), None)


def _pleonastic(pronoun: Any) -> bool:
    """"It's fun to paint": the subject "it" of a predicate ("fun", "great") stands for the clause that follows (an
    infinitive or a that-clause on its head), not for anything said before ("It helps me stay calm" is no such it)."""
    if pronoun.dep_ != "nsubj" or pronoun.lower_ != "it":
        return False
    children = {c.dep_ for c in pronoun.head.children}
    return bool(children & {"xcomp", "ccomp"}) and bool(children & {"acomp", "attr", "oprd"})
