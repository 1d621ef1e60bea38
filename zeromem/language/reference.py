"""Sentences that lean on another: what a merge must not cut apart.

"They could probably give you more tips." is about whoever the sentence before named ("Did your doctor say
anything?"); dropping that one as a bare question leaves "they" pointing at nothing (`leans_on`: the sentence has a
pronoun standing for nothing it names itself, and the one before names something it could point at). "Looks like
fun!" or "I bet they look adorable!" lean on the other speaker's turn they answer (`leans_outside`: a pronoun with
nothing named before it in the turn, or a subject left out); glued into a merged text they would point at whatever
came before them there. All decided from the parse."""

from __future__ import annotations

from zeromem.language.content import text_says_something
from zeromem.language.facts import SentenceFacts, facts_of


def leans_on(sentence: str, before: str) -> bool:
    """Whether `sentence` refers back to something `before` names: read alone it leans (`leans_outside`: "They
    gave me tips.", "I bet they look adorable!") and `before` names something it could stand for — for "they" or
    "them" alone, a thing other than a mass noun ("Looks like fun! I bet they look adorable!": not the fun)."""
    reasons = _leaning(facts_of(sentence), set())
    if not reasons:
        return False
    if reasons == {"plural"}:
        return any(kind == "thing" for kind, _ in facts_of(before).mentions)
    return facts_of(before).names_something


def leans_outside(sentences: list[str]) -> list[bool]:
    """Per sentence of a turn: does it stand for something the turn never names before it? What it is about is then
    in the turn it answers:
    - a third-person or demonstrative pronoun with no thing named before it in the turn ("Woah! They look ready for
      an adventure.", "Yeah, I made them myself."); "they" or "them" not for a mass noun of its own sentence ("We
      had so much fun making them");
    - "this", "that", "these" or "those" before a noun the turn has not named ("That hiking spot looks great");
    - a main verb whose subject is left out, where it is the "it" or "that" of what was said before: a verb in the
      third person present or the copula ("Looks like fun!", "Must have been amazing!"; a bare verb is an order
      or the speaker's own elided "I").
    A sentence that leans names nothing a later one may stand for: a merge leaves it out, or the turn as said.
    (A pronoun's number is no guide across sentences: "they" may be one doctor.) The one spoken to is no antecedent
    (no mention of a thing: `facts`): "Aww John, bummer about that." is about what John said."""
    nouns: set[str] = set()
    out = []
    for sentence in sentences:
        facts = facts_of(sentence)
        leans = bool(_leaning(facts, nouns))
        out.append(leans)
        if not leans:
            nouns |= {lemma for kind, lemma in facts.mentions if kind in ("thing", "mass")}
    return out


def _leaning(facts: SentenceFacts, nouns: set[str]) -> set[str]:
    """Why a sentence leans outside itself and the `nouns` named before it: "subject" left out, a noun "pointed" at
    that was not named, a "pronoun" or a "plural" one ("they", "them") standing for nothing named."""
    reasons = {"subject"} if facts.subject_left_out else set()
    counted, mass = set[str](), set[str]()  # the things it names itself so far
    for kind, lemma in facts.mentions:
        if kind == "pronoun" and not (nouns or counted or mass and lemma != "plural"):
            reasons.add(lemma or "pronoun")
        elif kind == "pointed" and lemma not in nouns | counted | mass:
            reasons.add("pointed")
        elif kind in ("thing", "mass"):
            (mass if kind == "mass" else counted).add(lemma)
    return reasons


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
