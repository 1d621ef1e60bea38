"""What one sentence's parse says, kept so that a sentence is parsed once in its life, not once a night.

The sentence judgements of merging (`content`: does it say something; `reference`: does it lean on another) read a
sentence through its `SentenceFacts`: its values (with which are names, so any speakers' names can be left out
later), whether a verb takes a thing, and what it refers to and names. They are taken from spaCy's doc here, stored
with the memory they come from (`sentence_facts`, in its features) and loaded for a run (`remember`); a sentence
with none stored (a merged text's, one whose date was anchored) is parsed on first use, in batches where the caller
knows what comes (`facts_ahead`). The cache is bounded: a worker's memory stays flat."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zeromem.core.domain.text import sentences, split_speaker
from zeromem.language.pipeline import nlp
from zeromem.language.values import Candidate, is_addressee, value_candidates

# (thing | mass | pronoun | pointed, lemma); a pronoun's lemma is "plural" for "they"/"them"/"those", else "".
Mention = tuple[str, str]


@dataclass(frozen=True)
class SentenceFacts:
    values: tuple[Candidate, ...]  # `values.value_candidates`
    takes_a_thing: bool  # a verb, or the adjective complementing one, takes a thing ("keen on counseling")
    names_something: bool  # it has a noun or a name
    mentions: tuple[Mention, ...]  # things named (`mass`: a bare singular noun), pronouns standing for a thing,
    # things pointed at, in order
    subject_left_out: bool  # its main verb's subject is left out ("Looks like fun!")
    reports: bool  # an account: a first-person subject, or a main verb in the past ("They were awestruck.")
    lemmas: frozenset[str]  # its content words' lemmas (`content_lemmas`): what a statement's words are


def facts_of(sentence: str) -> SentenceFacts:
    facts = _FACTS.get(sentence)
    if facts is None:
        facts_ahead([sentence])
        facts = _FACTS[sentence]
    return facts


def facts_ahead(texts: Iterable[str]) -> None:
    """Parse in one batch the sentences `facts_of` will be asked for and has no facts of: batched, a short sentence
    costs a fraction of what it costs alone (~1.6 ms against ~7 ms)."""
    missing = [text for text in dict.fromkeys(texts) if text not in _FACTS][:_FACTS_SIZE]
    for text, doc in zip(missing, nlp().pipe(missing, batch_size=64), strict=True):
        _keep(text, facts_from_doc(doc))


def remember(stored: Iterable[Mapping[str, Any] | None], version: int) -> None:
    """Load the sentence facts stored with memories (`sentence_facts`, under "sentences" in their features) by this
    features `version`: one stored by an earlier version may say what this one no longer does."""
    for features in stored:
        if not features or features.get("v") != version:
            continue
        for sentence, raw in (features.get("sentences") or {}).items():
            if sentence not in _FACTS:
                _keep(sentence, facts_from_json(raw))


def sentence_facts(texts: Sequence[str]) -> list[dict[str, list[Any]]]:
    """Per text, the facts of each of its sentences (speaker aside) as JSON, to store with the memory."""
    said = [sentences(split_speaker(text)[1]) for text in texts]
    facts_ahead(sentence for parts in said for sentence in parts)
    return [{sentence: facts_json(facts_of(sentence)) for sentence in parts} for parts in said]


_FACTS: dict[str, SentenceFacts] = {}
# A few hundred bytes each: a run's sentences (tens of thousands for a large user) fit, and memory stays bounded.
_FACTS_SIZE = 65_536


def _keep(sentence: str, facts: SentenceFacts) -> None:
    if len(_FACTS) >= _FACTS_SIZE:
        _FACTS.pop(next(iter(_FACTS)))
    _FACTS[sentence] = facts


def facts_json(facts: SentenceFacts) -> list[Any]:
    return [[list(c) for c in facts.values], facts.takes_a_thing, facts.names_something,
            [list(m) for m in facts.mentions], facts.subject_left_out, facts.reports, sorted(facts.lemmas)]


def facts_from_json(raw: Sequence[Any]) -> SentenceFacts:
    values, takes, names, mentions, left_out, reports, lemmas = raw
    return SentenceFacts(tuple((v, bool(name)) for v, name in values), takes, names,
                         tuple((kind, lemma) for kind, lemma in mentions), left_out, reports, frozenset(lemmas))


def facts_from_doc(doc: Any) -> SentenceFacts:
    return SentenceFacts(values=value_candidates(doc), takes_a_thing=takes_a_thing(doc),
                         names_something=any(t.pos_ in ("NOUN", "PROPN") for t in doc),
                         mentions=_mentions(doc), subject_left_out=_subject_left_out(doc), reports=_reports(doc),
                         lemmas=content_lemmas(doc))


def content_lemmas(doc: Any) -> frozenset[str]:
    """The lemmas of a parse's words that are no stop word, lower-cased: letters or a number."""
    return frozenset(t.lemma_.lower() for t in doc if not t.is_stop and (t.is_alpha or t.like_num))


# --- accounts ----------------------------------------------------------------------------------------------

def _reports(doc: Any) -> bool:
    """An account of the speaker or of what happened, by the parse: a subject in the first person, or joined with
    one ("My husband and I are trying…"), or a main verb in the past ("They were awestruck and humbled.", "Just
    started learning."). Pep talk and platitudes speak to the listener or of the world at large, in the present
    ("Keep it up!", "Family is everything."): whatever a reader's sense of chatter, an account is no such talk."""
    return any(t.dep_ in ("nsubj", "nsubjpass") and any(_first_person(s) for s in (t, *t.conjuncts)) for t in doc) \
        or any(t.dep_ == "ROOT" and _in_the_past(t) for t in doc)


def _first_person(token: Any) -> bool:
    return "1" in token.morph.get("Person")


def _in_the_past(verb: Any) -> bool:
    """A past form ("started", "was"), or a participle after an auxiliary ("have gone", "were told") or after one
    in the past ("was going")."""
    auxiliaries = [c for c in verb.children if c.dep_ in ("aux", "auxpass")]
    return (verb.tag_ == "VBD" or verb.tag_ == "VBN" and bool(auxiliaries)
            or any("Past" in c.morph.get("Tense") for c in auxiliaries))


# --- taking a thing ----------------------------------------------------------------------------------------

OBJECT_DEPS = frozenset({"dobj", "attr", "oprd", "dative", "nsubjpass"})
THINGS = frozenset({"NOUN", "PROPN", "NUM"})


def takes_a_thing(doc: Any) -> bool:
    """A verb, or the adjective complementing one ("keen on counseling"), taking a thing: a noun, a name or a
    number, directly or through a preposition ("I love that painting"; not "see you", "that's so cool")."""
    return any(t.pos_ in ("VERB", "AUX", "ADJ") and any(_is_thing_taken(c) for c in t.children) for t in doc)


def _is_thing_taken(child: Any) -> bool:
    if child.dep_ == "prep":
        return any(g.dep_ == "pobj" and g.pos_ in THINGS for g in child.children)
    return child.dep_ in OBJECT_DEPS and child.pos_ in THINGS


# --- reference ---------------------------------------------------------------------------------------------

# A verb's arguments: the slots a later pronoun's antecedent fills ("What did the doctor say?": the doctor).
_ARGUMENTS = frozenset({"nsubj", "nsubjpass", "dobj", "pobj", "attr", "dative", "oprd"})
# Slots where a word can be what a later pronoun stands for even when the tagger calls a noun a verb ("allergic to
# shellfish/VERB, so keep them out"); not an adjective's ("I'm sure they'll love it"), nor a verb's with an object of
# its own, which is a verb indeed ("Sorry to hear that.": "that" is what the other turn said).
_COMPLEMENTS = frozenset({"dobj", "pobj", "attr", "xcomp", "oprd"})
_SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj", "expl"})


def _argument(token: Any) -> bool:
    """In an argument slot, or joined to a noun in one ("my sister and her dog"; not "Pepper and Miso!")."""
    return token.dep_ in _ARGUMENTS or token.dep_ == "conj" and token.head.dep_ in _ARGUMENTS


def _mentions(doc: Any) -> tuple[Mention, ...]:
    found: list[Mention] = []
    for token in doc:
        if token.pos_ == "PRON":
            if _stands_for_a_thing(token):
                found.append(("pronoun", "plural" if "Plur" in token.morph.get("Number") else ""))
            continue
        if _pointed(token):
            found.append(("pointed", token.lemma_.lower()))
        if (_argument(token) or token.dep_ in _COMPLEMENTS and not _has_object(token)) \
                and not _spoken_to(token):
            found.append(("mass" if _bare_singular(token) else "thing", token.lemma_.lower()))
    return tuple(found)


def _bare_singular(noun: Any) -> bool:
    """A common noun in the singular with no determiner, possessive or number: a mass noun ("so much fun", "we made
    pizza"), which "they" or "them" later in its sentence does not stand for ("We had so much fun making them": the
    pizzas of the sentence before). Across sentences it may ("We made pizza! They were great."): English is loose
    there, so only the sentence's own nouns are held to it."""
    return (noun.pos_ == "NOUN" and "Sing" in noun.morph.get("Number")
            and not any(c.dep_ in ("det", "poss", "nummod") for c in noun.children))


def _spoken_to(token: Any) -> bool:
    """The token names the one spoken to ("Aww John, …", "Wow, Maria!"): in the words of its name (the tagger may
    take "Aww John" for one), alone between punctuation, an interjection or the sentence's ends."""
    doc = token.doc
    name = next((e for e in doc.ents if e.start <= token.i < e.end), doc[token.i:token.i + 1])
    return is_addressee(name)


def _has_object(token: Any) -> bool:
    return any(c.dep_ == "dobj" for c in token.children)


def _pointed(token: Any) -> bool:
    """A noun after "this", "that", "these" or "those" (a demonstrative determiner by the parse), not a time
    ("this weekend" points at the calendar, not at another turn)."""
    return token.pos_ == "NOUN" and token.ent_type_ not in ("DATE", "TIME") and any(
        c.dep_ == "det" and "Dem" in c.morph.get("PronType") for c in token.children)


def _stands_for_a_thing(pronoun: Any) -> bool:
    if pronoun.dep_ == "expl" or _pleonastic(pronoun):
        return False
    kind, person = pronoun.morph.get("PronType"), pronoun.morph.get("Person")
    return _demonstrative(pronoun) or ("Prs" in kind and person == ["3"] and pronoun.morph.get("Reflex") != ["Yes"])


def _demonstrative(pronoun: Any) -> bool:
    """A demonstrative by the parse; or one the tagger took for a relative pronoun with nothing to relate to: its
    verb is the sentence's root ("Wow, that looks great!"), or it is a "that" right after a comma, where a relative
    "that" never stands ("Woah, Maria, that sounds cool!")."""
    kind = pronoun.morph.get("PronType")
    if "Dem" in kind:
        return True
    after_comma = pronoun.i > 0 and pronoun.doc[pronoun.i - 1].is_punct and pronoun.lower_ == "that"
    return "Rel" in kind and (pronoun.head.dep_ == "ROOT" or after_comma)


def _subject_left_out(doc: Any) -> bool:
    """The main verb has no subject, and is in the third person present ("looks", "is"), the copula ("Must have
    been amazing") or a modal's perfect ("Must have taken a lot of work."): it is the "it" or "that" of what was
    said before. (A modal alone is the speaker's own elided "I": "Can't wait to see it!")"""
    return any(t.dep_ == "ROOT" and (t.tag_ == "VBZ" or t.lemma_ == "be" and t.pos_ == "AUX" or _supposed(t))
               and not any(c.dep_ in _SUBJECTS for c in t.children) for t in doc)


def _supposed(verb: Any) -> bool:
    """A modal's perfect ("must have taken", "could have been"): what the speaker supposes happened."""
    helpers = [c for c in verb.children if c.dep_ == "aux"]
    return any(c.tag_ == "MD" for c in helpers) and any(c.lemma_ == "have" for c in helpers)


def _pleonastic(pronoun: Any) -> bool:
    """"It's fun to paint": the subject "it" of a predicate ("fun", "great") stands for the clause that follows (an
    infinitive or a that-clause on its head), not for anything said before ("It helps me stay calm" is no such it)."""
    if pronoun.dep_ != "nsubj" or pronoun.lower_ != "it":
        return False
    children = {c.dep_ for c in pronoun.head.children}
    return bool(children & {"xcomp", "ccomp"}) and bool(children & {"acomp", "attr", "oprd"})
