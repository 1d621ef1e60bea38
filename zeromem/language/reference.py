"""Sentences that lean on another: what a merge must not cut apart.

"They could probably give you more tips." is about whoever the sentence before named ("Did your doctor say
anything?"); dropping that one as a bare question leaves "they" pointing at nothing (`leans_on`: the sentence opens,
interjections and punctuation aside, with a third-person or demonstrative pronoun, and the one before names
something it could point at). "Looks like fun!" or "I bet they look adorable!" lean on the other speaker's turn
they answer (`leans_outside`: a pronoun with nothing named before it in the turn, or a subject left out); glued
into a merged text they would point at whatever came before them there. All decided from the parse."""

from __future__ import annotations

from zeromem.language.content import text_says_something
from zeromem.language.facts import facts_of


def leans_on(sentence: str, before: str) -> bool:
    """Whether `sentence` refers back to something `before` names: it opens with a third-person or demonstrative
    pronoun (not an expletive: "It's great to…") and `before` has a noun or a name."""
    return facts_of(sentence).refers_back and facts_of(before).names_something


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
    (A pronoun's number is no guide: "they" may be one doctor.) The one spoken to is no antecedent (no mention of
    a thing: `facts`): "Aww John, bummer about that." is about what John said."""
    nouns: set[str] = set()
    out = []
    for sentence in sentences:
        facts = facts_of(sentence)
        mentions, leans = facts.mentions, facts.subject_left_out
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


def left_out(sentences: list[str], names: frozenset[str] = frozenset()) -> tuple[list[int], list[int]]:
    """What a text written from one turn's sentences (a merge, a remainder) may not hold: the sentences that lean
    on another turn (`leans_outside`), which would point at whatever came before them there; and those of them
    that keep the turn as it was said, as they cannot go: they say something ("He's a German Shepherd." answering
    "What breed is Toby?") or the next sentence leans on them ("That pic is gorgeous! It gives me hope.").
    `names`: the names that are no value (the people talking)."""
    leaning = [n for n, leans in enumerate(leans_outside(sentences)) if leans]
    saying = [n for n in leaning if text_says_something(sentences[n], names)
              or n + 1 < len(sentences) and leans_on(sentences[n + 1], sentences[n])]
    return leaning, saying
