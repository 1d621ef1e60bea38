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


def _opener(doc: Any) -> Any | None:
    return next((t for t in doc if not (t.is_punct or t.pos_ in ("INTJ", "CCONJ") or t.is_space)), None)


def _pleonastic(pronoun: Any) -> bool:
    """"It's fun to paint": the subject "it" stands for the clause that follows (an infinitive or a that-clause on
    its head), not for anything said before."""
    head = pronoun.head
    return pronoun.lower_ == "it" and any(c.dep_ in ("xcomp", "ccomp") for c in head.children) \
        if pronoun.dep_ == "nsubj" else False
