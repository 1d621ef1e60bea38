"""The `default` reader: judgements from spaCy's parse, the values themselves and time — no phrase lists.

A statement is read into *facts*: each value it carries (a number, an amount, a date, a name; in a present-tense
clause also the noun phrase in a verb's prepositional slot: "I play bass in a jazz trio") with the *attribute* it
attaches to, found by walking the dependency tree up from the value: the noun phrase it describes ("my rent is
$1,400", "they raised my rent to $1,550": the rent, once subject, once object), else the verb and preposition it
fills ("pre-approved for $350,000"). An attribute is its head lemma with its modifiers: "the staging cluster" and
"the production cluster" are two attributes. A number counting a noun keeps that noun as its unit ("3 nodes"); an
ordinal is a value of the noun it ranks ("I'm on the third chapter"), unless that noun is the subject ("my first car
was a Honda": the rank picks out which car). A count, a tally that names the counted noun ("my species count is 32")
and a rank past the count ("two cats" / "a third cat") speak of one attribute.

Two statements speak of the same attribute when a fact of each has the same head, modifiers that do not disagree and
units that do not disagree, or when, values masked, they are worded alike (most content lemmas shared) with no
attribute whose modifiers disagree. The newer replaces the older when they share an attribute, the values on it
changed, it was said later, and the older was neither a reading of a measured quantity (a verbless, speaker-less
line with a number: "disk 71 percent"; both readings were true when measured) nor a one-off event (a past action
anchored to its own moment, or one the speaker did not do). A negation that flips on the same predicate and thing is
a changed value too. A newer statement that names no new value replaces too where it says that something ended or
was replaced (the change head on its MiniLM vector: "I gave up hot yoga, I only do yin now.") and speaks of a thing
the older one does (a noun phrase head or a value in common, no modifiers that disagree). Said at the same time
(within the minimum gap), a changed value is a contradiction for a person to decide.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import lru_cache
from typing import Any

import numpy as np
from number_parser import parse_number, parse_ordinal

from zeromem.language import CONTRADICTS, KEEPS, REPLACES, Said
from zeromem.language.head import Head, change_head, chatter_head

# Entity types whose text is a value (what a later statement can change), and the ones that are amounts.
_NAMED = frozenset({"PERSON", "ORG", "GPE", "LOC", "PRODUCT", "WORK_OF_ART", "FAC", "NORP", "EVENT", "LANGUAGE"})
_AMOUNTS = frozenset({"MONEY", "QUANTITY", "PERCENT", "CARDINAL", "ORDINAL"})
_NOUNS = frozenset({"NOUN", "PROPN"})
_SPANS = frozenset({"for", "since"})  # prepositions of a duration: grammar, not vocabulary
_SOURCES = frozenset({"from", "off"})  # prepositions of where a thing is moved from
_SUBJECTS = frozenset({"nsubj", "nsubjpass"})
# A verb's prepositional slot: the parser also reads "in the shed" after a passive as the predicate's complement.
_SLOTS = frozenset({"prep", "oprd"})
_CLAUSES = frozenset({"relcl", "acl", "xcomp", "advcl"})
_ASIDE = frozenset({"npadvmod", "intj", "dep", "ROOT", "vocative", "appos"})
_CONTENT = frozenset({"NOUN", "PROPN", "VERB", "ADJ"})
_OPENERS = frozenset({"prep", "advcl", "advmod", "intj", "npadvmod"})  # how a sentence may open on its main verb
_MODIFIERS = frozenset({"compound", "amod", "nmod", "poss"})
_CLIMB = frozenset({"pobj", "attr", "dobj", "acomp", "npadvmod", "appos", "nummod", "quantmod", "oprd", "conj",
                    "advmod", "pcomp", "prep", "xcomp", "ccomp", "nmod", "compound", "dative"})
MIN_GAP = timedelta(hours=1)
_MINILM_DIMENSION = 384
# A format, not a word: a time, a version or a decimal written with digits ("7:40", "2.14.3").
_WH = frozenset({"WDT", "WP", "WP$", "WRB"})  # Penn Treebank tags of wh-words ("which", "what", "how"): grammar
_NUMERIC = re.compile(r"^v?\d+(?:[:.,/]\d+)+$")
_ORDINAL_DIGITS = re.compile(r"^(\d+)(?:st|nd|rd|th)$")  # a format: "21st" is 21 as "twenty-first" is


@dataclass(frozen=True)
class Thresholds:
    """The reader's settings (clustering's update policy passes them; defaults chosen on the labelled dev split)."""

    min_gap: timedelta = MIN_GAP  # a changed value said closer together than this contradicts, never replaces
    alike: float = 0.5  # share of content lemmas (values masked) at which two statements are worded alike
    similar: float = 0.5  # cosine of two statements' MiniLM vectors at which they mean alike


@dataclass(frozen=True)
class Attribute:
    head: str
    modifiers: frozenset[str]

    def matches(self, other: Attribute) -> bool:
        """The same head, and the modifiers of one all among the other's ("my rent" / "my monthly rent"; not "the
        staging cluster" / "the production cluster", nor "replica-1" / "replica-2")."""
        return self.head == other.head and (self.modifiers <= other.modifiers or other.modifiers <= self.modifiers)


@dataclass(frozen=True)
class Fact:
    attribute: Attribute
    value: str
    unit: str | None
    predicate: bool = False  # the attribute is the verb the value fills ("pre-approved for"), not a noun phrase
    kind: str | None = None  # COUNT: a plain cardinal number; RANK: an ordinal, a value of the noun it ranks
    new: bool = False  # said of a thing the sentence brings in ("a trip to Peru"): no standing attribute

    def about_same(self, other: Fact) -> bool:
        """Same attribute, units that do not disagree; a verb's slot only with the very same unit; or the same noun
        counted, tallied or ranked (`counted`), said in two of those ways."""
        if self.shape != other.shape and self.counted & other.counted:
            return (self.shape != RANK and other.shape != RANK) or _extends(self, other)
        if self.new or other.new:
            return False
        if (not self.attribute.matches(other.attribute) or self.predicate != other.predicate
                or _amount(self.value) != _amount(other.value)):
            return False
        if self.predicate:  # "spent $40 on it" / "spent $500 on groceries": a verb alone names no attribute
            return self.unit is not None and self.unit == other.unit
        return self.unit is None or other.unit is None or self.unit == other.unit

    @property
    def shape(self) -> str | None:
        """How a number speaks of a noun: counting it ("27 bird species", COUNT), as a tally held by a noun phrase
        that names it ("my species count is 32", "the number of species": TALLY), or ranking it ("the third
        chapter", RANK)."""
        if self.kind == COUNT and self.unit is not None:
            return COUNT
        if self.kind == COUNT and not self.predicate:
            return TALLY
        return RANK if self.kind == RANK else None

    @property
    def counted(self) -> frozenset[str]:
        """The nouns (stemmed) its number counts, tallies or ranks. Said in two of these ways, the number is one
        attribute whatever verb did the counting: "I've spotted 27 bird species" / "my species count is up to 32",
        "we have two cats" / "we took in a third cat"."""
        if self.shape == COUNT and self.unit is not None:
            return frozenset({_stem(self.unit)})
        if self.shape == TALLY:
            return frozenset(_stem(m) for m in self.attribute.modifiers)
        return frozenset({_stem(self.attribute.head)}) if self.shape == RANK else frozenset()


COUNT, TALLY, RANK = "count", "tally", "rank"


def _extends(a: Fact, b: Fact) -> bool:
    """A rank past a count of the same noun extends the series ("two cats" / "a third cat": three now); one within
    it picks one of them out ("3 dogs" / "walking the second dog")."""
    rank, count = (a, b) if a.shape == RANK else (b, a)
    return rank.value.isdigit() and count.value.isdigit() and int(rank.value) > int(count.value)


def _amount(value: str) -> bool:
    """An amount: a value that opens with a digit, or one word that carries its number ("4", "sev1"; a format).
    An amount and a name ("4 doggies" / "care of the doggies"; "Apache 2.0" is a name) are no two values of one
    attribute."""
    return value[:1].isdigit() or " " not in value and any(c.isdigit() for c in value)


def _stem(noun: str) -> str:
    """A noun without a plural -s, a format rule: the lemmatizer reads a plural count ("27 species" → "specie") and
    the same word as a singular modifier ("my species count" → "species") as two lemmas."""
    return noun.removesuffix("s")


@dataclass(frozen=True)
class Reading:
    """What one statement says, as the parse gives it."""

    facts: tuple[Fact, ...]
    attributes: tuple[Attribute, ...]  # every noun phrase it is about (for a negation that flips)
    content: frozenset[str]  # lemmas of its content words (nouns, verbs, adjectives), values left out
    negated: bool
    predicate: str  # the main verb's lemma
    speaker: bool  # the speaker is the subject or the owner of what is described
    measured: bool  # a reading of a measured quantity at a moment
    event: bool  # a one-off: a past action on its own date, or one the speaker did not do
    past: bool = False  # its main verb is in the simple past, an action done ("I played a nocturne")
    said: frozenset[str] = frozenset()  # every value it names, whatever it attaches to, but those it leaves behind
    acted: frozenset[str] = frozenset()  # what its main verbs act on or speak of (`_acted_on`)

    @property
    def named(self) -> frozenset[str]:
        """Every noun it names: the heads and modifiers of its noun phrases, and the units its values count."""
        phrases = (*self.attributes, *(f.attribute for f in self.facts if not f.predicate))
        return (frozenset(a.head for a in phrases).union(*(a.modifiers for a in phrases))
                | frozenset(f.unit for f in self.facts if f.unit))

    @property
    def keys(self) -> frozenset[str]:
        """Index keys for candidate pairs: the attributes' heads, and the nouns counted, tallied or ranked
        (`Fact.counted`), so that a count meets its tally or rank."""
        return (frozenset(f.attribute.head for f in self.facts) | frozenset(a.head for a in self.attributes)
                | frozenset(f"#{noun}" for f in self.facts for noun in f.counted))


# Raise it when `reading_of` or the sentence facts (`zeromem.language.facts`) change: stored features of another
# version are read again.
FEATURES_VERSION = 19


def reading_json(reading: Reading) -> dict[str, Any]:
    def attribute(a: Attribute) -> list[Any]:
        return [a.head, sorted(a.modifiers)]

    return {"v": FEATURES_VERSION,
            "facts": [[attribute(f.attribute), f.value, f.unit, f.predicate, f.kind, f.new] for f in reading.facts],
            "attributes": [attribute(a) for a in reading.attributes], "content": sorted(reading.content),
            "negated": reading.negated, "predicate": reading.predicate, "speaker": reading.speaker,
            "measured": reading.measured, "event": reading.event, "past": reading.past,
            "said": sorted(reading.said), "acted": sorted(reading.acted)}


def reading_from_json(stored: Mapping[str, Any]) -> Reading | None:
    """The stored reading, or None when it was stored by another version of the reader."""
    if stored.get("v") != FEATURES_VERSION:
        return None

    def attribute(raw: list[Any]) -> Attribute:
        return Attribute(raw[0], frozenset(raw[1]))

    return Reading(facts=tuple(Fact(attribute(a), value, unit, predicate, kind, new)
                               for a, value, unit, predicate, kind, new in stored["facts"]),
                   attributes=tuple(attribute(a) for a in stored["attributes"]), content=frozenset(stored["content"]),
                   negated=stored["negated"], predicate=stored["predicate"], speaker=stored["speaker"],
                   measured=stored["measured"], event=stored["event"], past=stored["past"],
                   said=frozenset(stored["said"]), acted=frozenset(stored["acted"]))


def read_said(said: Sequence[Said]) -> list[Reading]:
    """Each statement's stored reading where it has one of this version, else a fresh parse (`read`). Pairs name a
    statement many times: each stored reading is converted once a call."""
    converted: dict[int, Reading | None] = {}
    for s in said:
        if s.features and id(s.features) not in converted:
            converted[id(s.features)] = reading_from_json(s.features)
    stored = [converted[id(s.features)] if s.features else None for s in said]
    fresh = iter(read([s.text for s, r in zip(said, stored, strict=True) if r is None]))
    return [r if r is not None else next(fresh) for r in stored]


def read(texts: Sequence[str]) -> list[Reading]:
    """Each text read once (spaCy in batches); the same texts come back search after search. The answer comes from
    this call's own readings, not the bounded cache: a call with more texts than the cache holds (a first run
    after an upgrade, every stored parse stale) would find its first readings already dropped."""
    unique = dict.fromkeys(texts)
    found = {t: _CACHE[t] for t in unique if t in _CACHE}
    missing = [t for t in unique if t not in found]
    if missing:
        from zeromem.language.pipeline import nlp

        for text, doc in zip(missing, nlp().pipe(missing, batch_size=64), strict=True):
            found[text] = reading_of(doc)
            _remember(text, found[text])
    return [found[t] for t in texts]


_CACHE: dict[str, Reading] = {}
_CACHE_SIZE = 20_000


def _remember(text: str, reading: Reading) -> None:
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[text] = reading


def reading_of(doc: Any) -> Reading:
    values = _value_tokens(doc)
    facts = tuple(fact for token, value in values
                  if not _hedged(token) and (fact := _fact(token, value, doc)) is not None)
    facts += _slot_facts(doc, {t.i for t, _ in values})
    aside = _opening_aside(doc, values)
    attributes = tuple(_attribute(chunk.root) for chunk in doc.noun_chunks
                       if _is_thing(chunk.root) and chunk.root.i not in aside)
    # "Maya and I broke up": the speaker is one of the subjects.
    speaker = any(_first_person(t) and (t.dep_ in ("nsubj", "nsubjpass", "poss")
                                        or t.dep_ == "conj" and t.head.dep_ in _SUBJECTS) for t in doc)
    finite = any(t.pos_ in ("VERB", "AUX") and "Fin" in t.morph.get("VerbForm") for t in doc)
    # A past action on a date of its own ("on June 2", "yesterday") happened then; a span ("for 6 months") is none.
    dates = [e for e in doc.ents if e.label_ in ("DATE", "TIME")
             and not (e.root.dep_ == "pobj" and e.root.head.lemma_ in _SPANS)]
    # The main verb's action, or one a date places in a clause of its own ("Here's how I spent yesterday morning").
    dated = {verb.i for e in dates for verb in [_verb_of(e.root)] if verb is not None}
    past_action = any(t.pos_ == "VERB" and (t.dep_ == "ROOT" or t.i in dated) and _done(t) for t in doc)
    anchored = bool(dates)
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    in_values = {t.i for t, _ in values} | {t.i for e in doc.ents for t in e if e.label_ in _AMOUNTS or _name(t)}
    content = frozenset(t.lemma_.lower() for t in doc if t.pos_ in _CONTENT and t.i not in in_values | aside
                        and not t.like_num)
    # A negation of the statement itself: on its main verb, in a statement of the speaker's (`_declared`).
    negated = root is not None and any(c.dep_ == "neg" for c in root.children) and _declared(root)
    return Reading(facts=facts, attributes=attributes, content=content, negated=negated,
                   predicate=_predicate(root) if root is not None else "", speaker=speaker,
                   measured=bool(values) and not speaker and not finite,
                   event=past_action and (anchored or not speaker), past=_simple_past(root),
                   said=frozenset(value for _, value in values),
                   acted=_acted_on(root) if root is not None else frozenset())


def _acted_on(root: Any) -> frozenset[str]:
    """What the main verbs (the root, the verbs joined to it and those completing it: "I stopped seeing Karen and
    found a new therapist", "I stopped riding with the club, I ride solo now") act on or speak of: their subjects,
    objects and the objects of their prepositions, and what is joined to those ("Maya and I"), as lemmas and, for a
    name, its value. A denied action ("I won't quit", "never quit") acts on nothing."""
    verbs, arguments = [root], []
    for verb in verbs:
        verbs += [c for c in verb.children if c.dep_ in ("conj", "xcomp", "ccomp") and c.pos_ in ("VERB", "AUX")]
    if any(c.dep_ == "neg" for verb in verbs for c in verb.children):
        return frozenset()
    for verb in verbs:
        for child in verb.children:
            if child.dep_ in ("nsubj", "nsubjpass", "dobj", "attr", "dative"):
                arguments.append(child)
            elif child.dep_ in ("prep", "agent"):
                arguments += [c for c in child.children if c.dep_ == "pobj"]
    arguments += [c for a in arguments for c in a.children if c.dep_ == "conj"]
    names = {_phrase(e) for a in arguments for e in a.doc.ents if e.start <= a.i < e.end}
    return frozenset({a.lemma_.lower() for a in arguments if a.pos_ in _NOUNS} | names)


def _declared(root: Any) -> bool:
    """A statement of what is, not of the person spoken to ("You never know …") nor a bidding ("Don't quit!"): a
    subject other than the listener, or, the subject left out as chat does ("Can't imagine life without them"), a
    modal or tensed auxiliary, which an imperative lacks."""
    subject = next((c for c in root.children if c.dep_ in _SUBJECTS), None)
    if subject is not None:
        return not _second_person(subject)
    return any(c.dep_ == "aux" and (c.tag_ == "MD" or "Fin" in c.morph.get("VerbForm")) for c in root.children)


def _predicate(root: Any) -> str:
    """The main verb with the verbs that complete it: "I'm not gonna give up on my dreams" does not deny "I'm going
    for my dreams", what is done is "go give", not "go"."""
    verbs = [root]
    while (more := next((c for c in verbs[-1].children if c.dep_ == "xcomp" and c.pos_ == "VERB"), None)) is not None:
        verbs.append(more)
    return " ".join(v.lemma_.lower() for v in verbs)


def _opening_aside(doc: Any, values: list[tuple[Any, str]]) -> set[int]:
    """The tokens of what opens a sentence ahead of its subject, set off by a comma, and modifies the main verb
    without carrying a value ("By the way, …", "Speaking of which, …", "Honestly, …"): it says how the speaker
    goes on, not what the statement is about. "Last week, …" carries a date and stays."""
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    subject = next((c for c in root.children if c.dep_ in _SUBJECTS), None) if root is not None else None
    if root is None or subject is None:
        return set()
    carrying = {t.i for t, _ in values} | {t.i for e in doc.ents for t in e}
    aside: set[int] = set()
    for child in (c for c in root.lefts if c.i < subject.i and c.dep_ in _OPENERS):
        span = {t.i for t in child.subtree}
        after = doc[max(span) + 1] if max(span) + 1 < len(doc) else None
        if after is not None and after.text == "," and not span & carrying:
            aside |= span
    return aside


def _verb_of(token: Any) -> Any | None:
    """The verb a date or a phrase hangs from, directly or through its preposition ("spent yesterday morning",
    "hiked on Friday")."""
    node = token.head.head if token.dep_ == "pobj" else token.head
    return node if node.pos_ == "VERB" and node.i != token.i else None


def _done(verb: Any) -> bool:
    """An action done: a verb in the past ("I played", "last seen 365 s ago"), or a passive whose auxiliary is
    ("was parked"); not a perfect ("I've watched 4 films": a running total that holds now) nor a passive said of now
    ("is stored", "has been stored")."""
    if "Past" not in verb.morph.get("Tense"):
        return False
    if "Part" not in verb.morph.get("VerbForm"):
        return True
    passive = [c for c in verb.children if c.dep_ == "auxpass"]
    if passive and not any(c.dep_ == "aux" for c in verb.children):
        return any("Past" in c.morph.get("Tense") and "Fin" in c.morph.get("VerbForm") for c in passive)
    return not any(c.dep_ in ("aux", "auxpass") for c in verb.children)


def _simple_past(root: Any) -> bool:
    """A main verb in the simple past ("I played a nocturne"): an action done; "I've visited 14 countries" is a
    perfect, a running total that holds now, and "I found that … is the perfect ratio" reports a state."""
    return (root is not None and root.pos_ == "VERB" and "Past" in root.morph.get("Tense")
            and "Fin" in root.morph.get("VerbForm") and not any(c.dep_ == "ccomp" for c in root.children))


def _first_person(token: Any) -> bool:
    return token.pos_ == "PRON" and "1" in token.morph.get("Person")


def _hedged(token: Any) -> bool:
    """Said under a modal ("I think I'll try the fajitas", "we might move to Leeds"): a plan or a possibility, no
    value that holds. The modal is a part of speech (MD), not a word list."""
    modal = any(c.dep_ == "aux" and c.tag_ == "MD" for t in (token, *token.ancestors) for c in t.children)
    return modal or _wished(token)


def _wished(token: Any) -> bool:
    """Said in a verb without tense that completes an adjective ("I'm interested in trying Nobu", "excited to try it
    with lime"): an attitude toward a thing not done, no value that holds. The adjective is a part of speech and
    the verb's form is morphology, no word list."""
    for verb in token.ancestors:
        if "Fin" in verb.morph.get("VerbForm"):
            return False
        if verb.pos_ == "VERB" and verb.dep_ in ("xcomp", "pcomp"):
            governor = verb.head if verb.dep_ == "xcomp" else verb.head.head
            if governor.pos_ == "ADJ":
                return True
    return False


def _second_person(token: Any) -> bool:
    return token.pos_ == "PRON" and "2" in token.morph.get("Person")


def _is_thing(token: Any) -> bool:
    return token.pos_ in _NOUNS and not token.like_num and token.ent_type_ not in _AMOUNTS | {"DATE", "TIME"}


def _attribute(token: Any) -> Attribute:
    """A noun and what tells it apart: its noun and adjective modifiers, names included ("traditional Lakota games"
    are not "traditional Iroquois games"), a name set beside it ("our cat Miso"), the parts glued to it
    ("replica-2"), and the things it is of or on ("latency on checkout")."""
    # What a copula says something is ("… is the perfect ratio") describes it: its adjectives praise, not pick out.
    kinds = _NOUNS | {"VERB"} if token.dep_ == "attr" else _NOUNS | {"ADJ", "VERB"}
    modifiers = {c.lemma_.lower() for c in token.children if c.dep_ in _MODIFIERS and c.pos_ in kinds
                 and not c.like_num and any(ch.isalpha() for ch in c.text)}
    # A subject's rank picks out which one is spoken of ("my first car was a Honda"): elsewhere it is a value.
    if token.dep_ in _SUBJECTS:
        modifiers |= {_number(c) for c in token.children if c.dep_ in ("amod", "nummod") and _ordinal(c)}
    modifiers |= {c.text.lower() for c in token.subtree if _glued(c) and c.head.i == token.i}
    modifiers |= {c.lemma_.lower() for c in token.children if c.dep_ == "appos" and c.ent_type_ == "PERSON"}
    for prep in (c for c in token.children if c.dep_ == "prep"):
        modifiers |= {p.lemma_.lower() for p in prep.children if p.dep_ == "pobj" and _is_thing(p)}
    return Attribute(token.lemma_.lower(), frozenset(modifiers))


def _glued(token: Any) -> bool:
    """Part of an identifier written with hyphens and no space ("replica-2", "db-3"): a name, not a value."""
    before = token.doc[token.i - 1] if token.i > 0 else None
    after = token.doc[token.i + 1] if token.i + 1 < len(token.doc) else None
    return (before is not None and before.text == "-" and not before.whitespace_
            or after is not None and after.text == "-" and not token.whitespace_)


def _value_tokens(doc: Any) -> list[tuple[Any, str]]:
    """(the token a value hangs from, the value's normal form): amounts, dated days, names."""
    found: list[tuple[Any, str]] = []
    covered: set[int] = set()
    for ent in doc.ents:
        dated_day = ent.label_ == "DATE" and (any(c.like_num for c in ent) or any(
            c.pos_ == "PROPN" for c in ent) and not _happened_then(ent.root))  # "the 14th", "Friday"
        # A name is a proper noun or written as one: the tagger also calls chat's "kinda" a person.
        named = ent.label_ in _NAMED and not _owned(ent.root) and not _addressed(ent) and any(
            c.pos_ == "PROPN" or c.text[:1].isupper() for c in ent)
        if (ent.label_ in _AMOUNTS or named or dated_day) and not (len(ent) == 1 and _pronoun_number(ent.root)):
            numbers = [t for t in ent if t.like_num or _NUMERIC.match(t.text)]
            value = " ".join(map(_number, numbers)) if numbers and ent.label_ in _AMOUNTS else _phrase(ent)
            if not _left_behind(ent.root):
                found.append((_anchor(ent, numbers), value))
            covered.update(t.i for t in ent)
        elif ent.label_ == "DATE":  # the time of an action: none of its words a name either ("on Wednesday")
            covered.update(t.i for t in ent)
    found += [(t, _number(t)) for t in doc
              if (t.like_num or _NUMERIC.match(t.text)) and t.i not in covered and not _glued(t)
              and not _pronoun_number(t)]
    return found + _untagged_names(doc, covered)


def _anchor(ent: Any, numbers: list[Any]) -> Any:
    """The token a value hangs from: the entity's root, or its number where the root is an article both hang from
    the same noun by ("a third cat")."""
    return numbers[0] if ent.root.pos_ == "DET" and numbers else ent.root


def _untagged_names(doc: Any, covered: set[int]) -> list[tuple[Any, str]]:
    """A proper noun the entity tagger missed ("moved CI to Buildkite") names something all the same: with the
    proper nouns compounded before it, unless it is spoken to or stands alone ("Thanks, Sam!", "Buildkite.")."""
    found = []
    for token in doc:
        if token.pos_ != "PROPN" or token.dep_ == "compound" or token.dep_ in _ASIDE or not _capitalised(token):
            continue
        name = [c for c in token.lefts if c.dep_ == "compound" and c.pos_ == "PROPN"] + [token]
        if not any(t.i in covered for t in name) and not _left_behind(token):
            found.append((token, " ".join(t.lemma_.lower() for t in name)))
    return found


def _happened_then(token: Any) -> bool:
    """A date that says when a past action happened ("I dropped my phone on Wednesday", "I ended up dropping my
    phone on Wednesday last week", "… on Saturday mornings"): the action's time, no value of what it was done to.
    The tense is that of the date's own verb, or of the finite verb a verb without tense completes."""
    while token.dep_ == "compound" and token.head.i != token.i:
        token = token.head
    if not _when(token):
        return False
    verb = token.head if token.dep_ == "npadvmod" else token.head.head
    while verb.dep_ in ("xcomp", "pcomp") and "Fin" not in verb.morph.get("VerbForm") and verb.head.i != verb.i:
        verb = verb.head
    return verb.pos_ == "VERB" and "Past" in verb.morph.get("Tense") and "Fin" in verb.morph.get("VerbForm")


def _when(token: Any) -> bool:
    """A date that says when something happened ("Last Friday, I hiked", "hiked on Friday"), not where an action
    moved something ("moved the call to Wednesday")."""
    return token.dep_ == "npadvmod" or token.dep_ == "pobj" and token.head.lemma_.lower() == "on"


def _name(token: Any) -> bool:
    return token.ent_type_ in _NAMED and not _owned(token)


def _owned(token: Any) -> bool:
    """A common noun someone has ("our CDN", "my GP") is a thing, whatever the entity tagger calls it: a name takes
    no possessive, and the tagger's part of speech says it is no proper noun."""
    return token.pos_ == "NOUN" and any(c.dep_ == "poss" for c in token.children)


def _addressed(ent: Any) -> bool:
    """The person spoken to ("Wow, Jon, …", "Maria, I've been busy"), not one spoken of."""
    after = ent.doc[ent.end] if ent.end < len(ent.doc) else None
    return ent.label_ == "PERSON" and (ent.root.dep_ in _ASIDE or ent.start == ent.sent.start
                                       and after is not None and after.text == ",")


def _capitalised(token: Any) -> bool:
    """Written with a capital where a sentence does not start: the tagger calls chat's "kinda" and "Yep" proper
    nouns too."""
    return token.text[:1].isupper() and not token.is_sent_start


def _pronoun_number(token: Any) -> bool:
    """A number word standing alone for a thing said before, counting nothing ("hard to choose just one", "the
    first of them"): no value. A count is written in digits or counts a noun ("one dog"), a rank ranks one ("the
    third chapter")."""
    return token.like_num and token.is_alpha and token.dep_ not in ("nummod", "quantmod", "compound", "amod")


def _number(token: Any) -> str:
    """A number in digits, whether written in digits or words ("nine" → 9, "21st" → 21): a format rule."""
    text = _ORDINAL_DIGITS.sub(r"\1", token.text.lower().replace(",", ""))
    parsed = parse_number(text) or parse_ordinal(text)
    return str(parsed) if parsed is not None else text


def _phrase(span: Any) -> str:
    """A value's words, numbers normalised and articles dropped: "the 21st" → 21, "nine months" → 9 month; a named
    day said of every week is that day ("on Fridays" → friday: the tagger leaves the plural on a proper noun)."""
    return " ".join(_number(t) if t.like_num else _day(t) if span.label_ == "DATE" and t.pos_ == "PROPN"
                    else t.lemma_.lower() for t in span if t.pos_ != "DET")


def _day(token: Any) -> str:
    return token.lemma_.lower().removesuffix("s")


def _left_behind(token: Any) -> bool:
    """A value in a verb's slot of where it comes from is the one being left ("changed from Madrid to Valencia",
    "moved off Jenkins"): two prepositions of English grammar, not vocabulary."""
    return token.dep_ == "pobj" and token.head.lemma_.lower() in _SOURCES and token.head.head.pos_ == "VERB"


def _fact(token: Any, value: str, doc: Any) -> Fact | None:
    """The attribute a value attaches to: an ordinal's is the noun it ranks (`_position`), any other value's is
    found by climbing from the value to the noun it describes or the verb it fills (`_attached`)."""
    if _ordinal(token):
        position = _position(token, value)
        if position is not None:
            return position
    fact = _attached(token, value, doc)
    return None if fact is None else replace(fact, kind=COUNT if _cardinal(token) else None)


def _ordinal(token: Any) -> bool:
    """A rank: tagged so, or a number word the tagger calls an adjective ("a third cat", which the entity tagger
    reads as the fraction)."""
    return (token.ent_type_ == "ORDINAL" or "Ord" in token.morph.get("NumType")
            or token.like_num and token.tag_ == "JJ")


def _cardinal(token: Any) -> bool:
    """A plain count: a cardinal number, in digits or words, that no entity makes an amount, a measure or a date."""
    return token.like_num and token.ent_type_ in ("CARDINAL", "") and not _ordinal(token)


def _position(ordinal: Any, value: str) -> Fact | None:
    """An ordinal ranking a noun is a value of that noun: "I'm on the third chapter" / "I'm on the fifth chapter
    now" (where one is in a sequence). Not where the ranked noun is the subject: "my first car was a Honda" speaks
    of one car among others, and what it says of it is the value. Whose rank it is and what is ranked tell two
    ranks of one noun apart, as modifiers do (`_whose`, `_ranked_by`)."""
    noun = ordinal.head
    if ordinal.dep_ not in ("amod", "nummod") or not _is_thing(noun) or noun.dep_ in _SUBJECTS:
        return None
    attribute = _attribute(noun)
    # A noun compounded into another ranks that one with it ("my first year teaching").
    compounded = {noun.head.lemma_.lower()} if noun.dep_ == "compound" and _is_thing(noun.head) else set()
    modifiers = attribute.modifiers | _ranked_by(noun) | _whose(noun) | compounded
    return Fact(Attribute(attribute.head, frozenset(modifiers)), value, None, kind=RANK)


def _whose(noun: Any) -> set[str]:
    """The subject of the clause the ranked noun sits in: "my daughter is in first grade" and "my son started third
    grade" are two children's grades, "we live on the third floor" and "my office is on the 12th floor" two floors.
    A pronoun is itself (the speaker stays the speaker), or, in the third person, what it stands for where the
    sentence names it. A name tells nothing apart: the parse cannot say whether "Jake" is "my son"."""
    node = noun
    while node.pos_ not in ("VERB", "AUX") and node.head.i != node.i:
        node = node.head
    for subject in (c for c in node.children if c.dep_ in _SUBJECTS):
        if subject.pos_ == "PROPN" or _name(subject):
            return set()
        if _is_thing(subject):
            return {subject.lemma_.lower()}
        if subject.pos_ == "PRON" and "3" not in subject.morph.get("Person") and subject.morph.get("Person"):
            return {subject.lower_}
        found = _antecedent(subject) if subject.pos_ == "PRON" else None
        return {found.lemma_.lower()} if found is not None and found.i != noun.i else set()
    return set()


def _ranked_by(noun: Any) -> set[str]:
    """The verbs of the clauses that say what is ranked, modifiers as much as an adjective is: on the noun ("the
    second time I've seen them": the times I saw them), or, where a copula says what the noun is, on the copula
    ("it's my first time trying sushi"): not my times at a concert, nor painting a mural."""
    holders = [noun, noun.head] if noun.dep_ == "attr" else [noun]
    return {c.lemma_.lower() for holder in holders for c in holder.children
            if c.dep_ in _CLAUSES and c.pos_ in ("VERB", "AUX") and c.i != noun.i}


def _attached(token: Any, value: str, doc: Any) -> Fact | None:
    """Climb from the value to the noun it describes or the verb it fills."""
    unit = None
    node = token
    if node.dep_ == "nummod" and _is_thing(node.head):
        # "17 new ones": a pro-form counts what the sentence already named, no unit of its own.
        unit = None if node.head.lemma_.lower() in ("one", node.lemma_.lower()) else node.head.lemma_.lower()
        node = node.head
    preposition = ""
    for _ in range(6):
        if not (node.dep_ in _CLIMB or _copula_subject(node)) or node.head.i == node.i:
            break
        parent = node.head
        if parent.pos_ == "ADP":
            preposition = parent.lemma_.lower()
        elif _is_thing(parent) and not _name(parent):
            return Fact(_attribute(parent), value, unit, new=unit is None and _introduced(parent))
        elif parent.pos_ in ("VERB", "AUX"):
            described = _described(parent, node)
            if described is not None:
                return Fact(_attribute(described), value, unit, new=unit is None and _introduced(described))
            if parent.pos_ == "AUX":  # "that's tough, Jon": a copula says nothing of what the value is about
                return None
            if parent.dep_ != "xcomp":  # "upgraded Postgres to version 17": the value's verb serves another
                return Fact(Attribute(parent.lemma_.lower(), frozenset({preposition} - {""})), value, unit,
                            predicate=True)
        node = parent
    return None


def _introduced(noun: Any) -> bool:
    """A noun phrase under an indefinite article, or hanging from one ("a trip to Peru", "a degree in marine
    biology", "a friend's café"), brings a new thing into the talk: what it says of that thing is no value of an
    attribute the speaker had before ("a trip to Chile" is another trip, not Peru replaced). The article is grammar
    (the tagger's Definite=Ind), not a word list. A count ("a collection of 15 stamps" / "… 20 stamps") still counts
    what it counts: the caller asks this of values without a unit."""
    node = noun
    while True:
        if any(_indefinite(c) or c.dep_ == "poss" and any(_indefinite(d) for d in c.children) for c in node.children):
            return True
        if node.dep_ == "pobj" and node.head.pos_ == "ADP" and _is_thing(node.head.head):
            node = node.head.head
        elif node.dep_ == "compound" and _is_thing(node.head):
            node = node.head
        else:
            return False


def _indefinite(token: Any) -> bool:
    return token.dep_ == "det" and "Ind" in token.morph.get("Definite")


def _copula_subject(token: Any) -> bool:
    """The subject of "is": the value may be said first ("1 tablespoon for every 6 ounces is the perfect ratio")."""
    return token.dep_ == "nsubj" and token.head.pos_ == "AUX"


def _described(verb: Any, path: Any) -> Any | None:
    """The noun phrase a verb's value describes: its object, else its subject (not the value), else what a copula
    says the value is ("1 tablespoon for every 6 ounces is the perfect ratio"); a third-person pronoun subject
    stands for the nearest thing named before it ("… log retention, it's 30 days now")."""
    for dep in ("dobj", "nsubj", "nsubjpass", "attr"):
        for child in verb.children:
            if child.dep_ != dep or child.i == path.i:
                continue
            if _is_thing(child) and not _name(child):
                return child
            if child.pos_ == "PRON" and "3" in child.morph.get("Person"):
                return _antecedent(child)
    return None


def _antecedent(pronoun: Any) -> Any | None:
    """The nearest thing named before the pronoun that agrees with it in number ("they" → "my parents")."""
    number = pronoun.morph.get("Number")
    before = [c.root for c in pronoun.doc.noun_chunks if c.root.i < pronoun.i and _is_thing(c.root)
              and not _name(c.root) and (not number or c.root.morph.get("Number") == number)]
    return before[-1] if before else None


def _slot_facts(doc: Any, taken: set[int]) -> tuple[Fact, ...]:
    """In a present-tense clause, a noun phrase in a verb's prepositional slot is a value of the verb's object in
    that slot: "I play bass in a jazz trio" → (bass in, jazz trio). The preposition is part of the attribute: time
    spent "in the garden" and time spent "with loved ones" are no two values of one thing (two statements worded
    alike, "I keep my bike in the shed" / "I keep my bike under the stairs", still are: `_said_alike`)."""
    found = []
    for verb in doc:
        if verb.pos_ != "VERB" or verb.dep_ != "ROOT" or not _present(verb) or _hedged(verb):
            continue
        # What is done to: the object, or the subject of a passive ("the kayak is stored at …").
        objects = [c for c in verb.children if c.dep_ in ("dobj", "nsubjpass") and _is_thing(c)]
        for prep in (c for c in verb.children if c.dep_ in _SLOTS and c.pos_ == "ADP" and objects
                     and c.i > objects[0].i):
            for slot in (c for c in prep.children if c.dep_ == "pobj" and _is_thing(c) and c.i not in taken):
                filled = _attribute(slot)
                value = " ".join(sorted(filled.modifiers | {filled.head}))
                for obj in objects:
                    thing = _attribute(obj)
                    found.append(Fact(Attribute(thing.head, thing.modifiers | {prep.lemma_.lower()}), value, None))
    return tuple(found)


def _present(verb: Any) -> bool:
    """Said of now: the verb in the present tense or progressive, or, in the passive, its auxiliary in the present
    ("is stored": the participle itself is tagged past)."""
    return ("Pres" in verb.morph.get("Tense") or "Prog" in verb.morph.get("Aspect")
            or any(c.dep_ == "auxpass" and "Pres" in c.morph.get("Tense") for c in verb.children))


@lru_cache(maxsize=1024)
def _question(question: str) -> tuple[bool, frozenset[str] | None]:
    """(asks now, what it asks about), parsed once: an agent asks the same questions again. What it asks about
    matters only to a question that asks now (search reorders for those alone), and `asks_now` reads no lemma nor
    entity: a question about then is parsed only that far (None: not read), ~60 % of its parse spared."""
    from zeromem.language.pipeline import early_parse, finish_parse

    doc = early_parse(question)
    if not asks_now(doc):
        return False, None
    return True, _asked(question, finish_parse(doc))


def _asked(question: str, doc: Any) -> frozenset[str]:
    """What the parsed question asks about, its reading kept for `read`: search reads the question that way too."""
    _remember(question, reading_of(doc))
    return asked_things(doc)


def asks_now(doc: Any) -> bool:
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    verbs = [root, *(c for c in root.children if c.dep_ in ("aux", "auxpass"))] if root is not None else []
    return not any("Past" in t.morph.get("Tense") and "Fin" in t.morph.get("VerbForm") for t in verbs)


def asked_things(doc: Any) -> frozenset[str]:
    """What a question asks about, as lemmas: the noun its wh-word belongs to, with what that noun is of ("how many
    bikes", "what type of vehicle model": type and model), else its subject where that is a thing ("how long have
    my parents been staying": the parents), else every thing it names ("do I still go to the gym": the gym); a
    person only where it names nothing else."""
    for token in doc:
        noun = _wh_noun(token) if token.tag_ in _WH else None
        if noun is not None:
            return frozenset({noun.lemma_.lower()} | {p.lemma_.lower() for prep in noun.children
                                                      if prep.dep_ == "prep" and prep.lemma_.lower() == "of"
                                                      for p in prep.children if p.dep_ == "pobj" and _is_thing(p)})
    things = [c.root for c in doc.noun_chunks if _is_thing(c.root)]
    # A person named is whom the question is about, not what it asks of them ("Where has Mel camped?").
    unnamed = [t for t in things if t.ent_type_ != "PERSON"] or things
    subjects = [t for t in unnamed if t.dep_ in ("nsubj", "nsubjpass")]
    return frozenset(t.lemma_.lower() for t in subjects or unnamed)


def _wh_noun(wh: Any) -> Any | None:
    """The noun a wh-word determines, directly ("which car") or through the adjective it grades ("how many")."""
    node = wh
    while node.dep_ in ("det", "advmod", "amod", "npadvmod") and node.head.i != node.i:
        node = node.head
        if _is_thing(node):
            return node
        if node.pos_ not in ("ADJ", "ADV", "DET"):
            return None
    return None


# --- judgements -------------------------------------------------------------------------------------------------

def shared_facts(a: Reading, b: Reading) -> list[tuple[Fact, Fact]]:
    return [(x, y) for x in a.facts for y in b.facts if x.about_same(y)]


def _flipped(a: Reading, b: Reading, threshold: float) -> bool:
    """A negation that flips on the same predicate, worded alike otherwise ("I eat meat" / "I don't eat meat")."""
    return (a.negated != b.negated and a.predicate == b.predicate and bool(a.content | b.content)
            and len(a.content & b.content) / len(a.content | b.content) >= threshold)


def _conflicting(a: Reading, b: Reading) -> bool:
    """Two phrases with one head and disagreeing modifiers: "the staging cluster" / "the production cluster"."""
    return any(x.head == y.head and not x.matches(y) for x in a.attributes for y in b.attributes)


def _said_alike(a: Reading, b: Reading, threshold: float) -> bool:
    """Worded alike once the values are masked (shared content lemmas over all of them), every unit agreeing."""
    if not (a.content and b.content and a.facts and b.facts) or _conflicting(a, b):
        return False
    units_a, units_b = {f.unit for f in a.facts} - {None}, {f.unit for f in b.facts} - {None}
    if units_a and units_b and not units_a & units_b:
        return False
    shared = a.content & b.content
    # One word in common is wording alike only where it is all either says ("I work at Deloitte" / "I work at KPMG
    # now"), not beside words of their own ("I'm planning a trip to Peru" / "My trip is with Condor Travel").
    if len(shared) < 2 and a.content != b.content:
        return False
    return len(shared) / len(a.content | b.content) >= threshold


def same_attribute(a: Reading, b: Reading, *, similarity: float | None = None, policy: Thresholds | None = None
                   ) -> bool:
    """A shared fact, or worded alike, or (given the texts' vectors' cosine) meaning alike with no attribute whose
    modifiers disagree; where one carries values, the other names what they are values of ("How much is my rent?"
    / "My rent is $1,400."); where neither does, a shared noun phrase ("I'm learning the violin." / "I quit the
    violin.")."""
    policy = policy or Thresholds()
    if shared_facts(a, b) or _said_alike(a, b, policy.alike) or _meant_alike(a, b, similarity, policy.similar):
        return True
    if a.facts and b.facts:
        return False
    if a.facts or b.facts:  # one carries values: what they are values of must be what the other speaks of
        valued, other = (a, b) if a.facts else (b, a)
        return any(any(x.matches(f.attribute) for x in other.attributes)
                   or f.attribute.head in other.content and (f.unit is None or f.unit in other.content)
                   for f in valued.facts)
    return any(x.matches(y) for x in a.attributes for y in b.attributes)


def _meant_alike(a: Reading, b: Reading, similarity: float | None, threshold: float) -> bool:
    return similarity is not None and similarity >= threshold and not _conflicting(a, b)


def changed(a: Reading, b: Reading, *, similarity: float | None = None, policy: Thresholds | None = None) -> bool:
    """A value on a shared attribute the newer one no longer states, or a negation that flips on one."""
    policy = policy or Thresholds()
    pairs = shared_facts(a, b)
    still: frozenset[str] = frozenset()
    if not pairs and _said_alike(a, b, policy.alike):
        pairs = [(x, y) for x in a.facts for y in b.facts]
    elif not pairs and _meant_alike(a, b, similarity, policy.similar):
        pairs = [(x, y) for x in a.facts for y in b.facts]
        # Alike in meaning alone, with no fact or wording shared, a value the newer statement still names, whatever
        # it attaches to there, is not taken as gone ("I love Toby" / "I named him Buddy, I hope him and Toby become
        # buddies"); one it moves off is ("moved CI off GitHub Actions"). The price: "Luis moved away, so I switched
        # to a teacher named Beth" replaces "My teacher is Luis" only where the facts meet.
        still = b.said
    if pairs:
        older = {x.value for x, _ in pairs}
        newer = {y.value for _, y in pairs}
        return bool(older - newer - still) and bool(newer - older)
    return _flipped(a, b, policy.alike)


def relation(older: Reading, newer: Reading, gap: timedelta, *, similarity: float | None = None,
             policy: Thresholds | None = None, reports_change: bool = False) -> str:
    """`REPLACES` a changed value said later; `CONTRADICTS` one said at the same time (a person decides which
    holds); readings of a moment and one-off events are each true on their own. `reports_change`: the newer says
    that something ended or was replaced (the change head): said later of a thing the older speaks of, it replaces
    the older whatever their values; said at the same time it is part of one account."""
    policy = policy or Thresholds()
    if older.measured or newer.measured or older.event or older.past or gap < timedelta(0):
        return KEEPS
    if changed(older, newer, similarity=similarity, policy=policy):
        return REPLACES if gap >= policy.min_gap else CONTRADICTS
    return REPLACES if reports_change and gap >= policy.min_gap and _ends(older, newer) else KEEPS


def _ends(older: Reading, newer: Reading) -> bool:
    """The newer, a change the speaker reports, ends what the older says of the speaker: both the speaker's, and
    the newer's main verbs act on a thing the older names: a value ("My therapist is Karen." / "I stopped seeing
    Karen"), or a noun phrase's head where no phrase of one head has modifiers that disagree ("I do hot yoga." / "I
    gave up hot yoga"; not "I work night shifts" / "I moved to the day shift"). A thing named only in passing
    ("Losing my job gave me the push to start my studio") is not what changed."""
    if not (older.speaker and newer.speaker):
        return False
    heads = {x.head for x in older.attributes}
    return bool(newer.acted & older.said) or bool(newer.acted & heads) and not _conflicting(older, newer)


class DefaultReader:
    name = "default"
    features_version = FEATURES_VERSION

    def __init__(self, *, thresholds: Thresholds | None = None, strict: bool = False) -> None:
        self.thresholds = thresholds or Thresholds()
        self.strict = strict  # chatter only past the head's strict threshold: for callers that drop chatter

    def features(self, texts: Sequence[str]) -> list[dict[str, Any] | None]:
        return [reading_json(r) for r in read(texts)]

    def keys(self, said: Sequence[Said]) -> list[frozenset[str]]:
        return [r.keys for r in read_said(said)]

    def asks_now(self, question: str) -> bool:
        """Present tense on the question's main verb or its auxiliary: "How many bikes do I own?" asks now, "When
        did I buy the bike?" asks about then."""
        return _question(question)[0]

    def about_asked(self, question: str, said: Sequence[Said]) -> list[bool]:
        """Whether each text names what the question asks about (`asked_things`), as a noun phrase's head or
        modifier ("my total species count" names the species) or the unit a value counts."""
        asked = _question(question)[1]
        if asked is None:
            from zeromem.language.pipeline import nlp

            asked = _asked(question, nlp()(question))
        return [bool(asked & r.named) for r in read_said(said)]

    def chatter(self, said: Sequence[Said]) -> list[bool]:
        """The learned head on each text's stored MiniLM vector; without one (another embedder, none stored) a
        text counts as a statement: nothing is dropped on a guess."""
        return _head_says(chatter_head(), said, strict=self.strict)

    def same_attribute(self, pairs: Sequence[tuple[Said, Said]]) -> list[bool]:
        return [same_attribute(a, b, similarity=_cosine(x, y), policy=self.thresholds)
                for (a, b), (x, y) in zip(_paired(pairs), pairs, strict=True)]

    def change(self, said: Sequence[Said]) -> list[bool]:
        """The change head on each text's stored MiniLM vector, at its strict threshold (a fact retired on a wrong
        yes costs more than a change missed); without a vector of the sentence alone, no change: nothing is retired
        on a guess."""
        return [s.alone and says for s, says in zip(said, _head_says(change_head(), said, strict=True), strict=True)]

    def relation(self, pairs: Sequence[tuple[Said, Said]]) -> list[str]:
        changes = self.change([newer for _, newer in pairs])
        return [relation(a, b, y.at - x.at, similarity=_cosine(x, y), policy=self.thresholds, reports_change=change)
                for (a, b), (x, y), change in zip(_paired(pairs), pairs, changes, strict=True)]


def _head_says(head: Head, said: Sequence[Said], *, strict: bool) -> list[bool]:
    """The head's yes or no for each text with a MiniLM vector stored; no for the others."""
    found = [False] * len(said)
    rows = [n for n, s in enumerate(said) if s.vector is not None and len(s.vector) == _MINILM_DIMENSION]
    if rows:
        verdicts = head.says(np.array([said[n].vector for n in rows]), strict=strict)
        for n, verdict in zip(rows, verdicts, strict=True):
            found[n] = bool(verdict)
    return found


def _cosine(a: Said, b: Said) -> float | None:
    """Of the stored MiniLM vectors (unit length), when both texts have one."""
    if a.vector is None or b.vector is None or len(a.vector) != len(b.vector):
        return None
    return float(np.dot(np.asarray(a.vector, dtype=np.float64), np.asarray(b.vector, dtype=np.float64)))


def _paired(pairs: Sequence[tuple[Said, Said]]) -> list[tuple[Reading, Reading]]:
    found = read_said([s for pair in pairs for s in pair])
    return list(zip(found[::2], found[1::2], strict=True))

