"""Profile statements: one chat sentence turned into a third-person statement about the entity it is about, with
its subject checked. Pure; standard library only.

The rule book (`attribute`):

1. Markup goes first: "[shares image: …]" and a "Name: " speaker label. The *narrator* (who says "I") is the
   label when there is one, else `speaker`. Then discourse openers ("Yeah,", "Oh wow,", "Honestly,", "By the way,
   speaking of which,", "Haha,", "Btw", a vocative "Mel, " before I/my/we) are stripped.
2. Nothing is kept from a question (a "?" outside quotation marks), from a sentence addressed to the listener
   (you/your/yourself anywhere outside quotes) or from a sentence with no words left.
3. The subject is found at the start of the main clause: after a fronted subordinate clause ("Whenever I hear
   this jam, I think …" → "I think") or a fronted time or place phrase ("Last week I …", "In Paris, I …").
   - "I", "I'm", "we", "we're" …: the narrator (`own`). So is a joint subject ("My wife and I", "Sam and I",
     "Me and Sam": the narrator took part, written "<Narrator> and their wife"), a possession that is no person
     or pet ("My favourite food is …", "My job …"), a copula naming a possession ("Pottery is my favourite
     hobby"), and a gerund that affects the narrator ("Painting helps me relax").
   - "My/Our <relation>" (daughter, colleague, dog … — `RELATIONS`; adjectives and a following name kept: "best
     friend", "colleague Sam"), "One of my friends", "A friend of mine", "<Narrator>'s dog", "Sam is my
     colleague": about the narrator, relation set, never `own`.
   - A capitalised name in `known` (or the speaker's/narrator's own name): about that entity, `own`; an unknown
     name ("Sam always drinks espresso"): about the narrator, relation = the name.
   - he/she/they/it/this/that/there/… : unresolved (None) — unless `pronoun_means_speaker` (an LLM item whose
     subject field names the entity), where he/she/they/"the user" stand for the speaker.
   - Any other subject ("The kids loved it"): unresolved.
4. The sentence is rewritten in the third person outside quotation marks: I → the narrator's name with the verb
   agreeing (love → loves, am → is, have → has, do/don't → does/doesn't, try → tries, go → goes; past tense
   and modals unchanged; I'm/I've/I'll/I'd → is/has/will/would or had); me → the name; my/mine → "their"/
   "theirs" as the object straight after the narrator's (main) verb ("I love my dog" → "Caroline loves their
   dog", "I should call my mom" → "… call their mom"), else "<Name>'s" ("I told Sam about my trip" → "…
   about Caroline's trip") — so a "their" always points at the clause's subject, the narrator; myself →
   themself once the narrator is a subject, else the name; we → "<Name> and others" (plural verb kept),
   our/ours/us likewise (their/theirs/them straight after their verb).
5. Finishing: whitespace collapsed, first letter capitalised, a final "!" stated as "." (a profile states, it
   does not exclaim), the sentence's other punctuation kept.

`is_third_person` is the guard a caller can apply to any statement: no first or second person outside quotes
and no speaker label.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from zeromem.core.domain.text import split_speaker
from zeromem.language.rules_tables.contradictions import CHAT_GLUE
from zeromem.language.rules_tables.profile_statements import (
    ADVERBS,
    AGREEMENT,
    AUXILIARIES,
    COPULA_MINE,
    FIRST_OR_SECOND,
    FRONTED,
    JOINT,
    NARRATOR_MENTION,
    NOT_ADVERBS,
    NOT_NAMES,
    NOT_VERBS,
    OPENERS,
    PARTICIPLES,
    PAST,
    POSSESSED,
    PREFACE,
    PRONOUN_SUBJECT,
    RELATIONS,
    SPEAKER_PRONOUN,
    SUBORDINATE,
    TIME,
    VOCATIVE,
)

# --- words ---------------------------------------------------------------------------------------------------

IMAGE_MARKUP = re.compile(r"\s*\[shares image:[^\]]*\]")
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|‘[^’]*’")
_TOKEN = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*|\s+|.")
_ADDRESSED = re.compile(r"\b(?:you|your|yours|yourself|yourselves|ya|y'all)\b", re.I)

# --- where the main clause starts ----------------------------------------------------------------------------

_FIRST_PERSON_SUBJECT = re.compile(r"^(?:i|we)(?:'m|'re|'ve|'ll|'d)?\b", re.I)
_OF_MINE = re.compile(r"^an? (?P<phrase>(?P<noun>[a-z-]+)) of (?:mine|ours)\b", re.I)
_NAME = re.compile(r"^(?P<name>[A-Z][\w-]*(?: [A-Z][\w-]*){0,2})(?P<possessive>'s)?\b")
_GERUND = re.compile(r"^[A-Z][a-z]+ing\b")


@dataclass(frozen=True)
class Attributed:
    about: str  # the speaker (as given), the narrator, or a name as given in `known`
    relation: str  # "" when about `about` themself; else what of theirs: "daughter", "colleague Sam", "Sam"
    statement: str  # third person, normalised

    @property
    def own(self) -> bool:
        """About the entity themself: only then may it be a preference or a habit."""
        return self.relation == ""


@dataclass(frozen=True)
class _Subject:
    about: str
    relation: str
    clause: str  # the main clause with its subject put in a form the rewrite reads ("They love" → "I love")


def attribute(text: str, *, speaker: str, known: Collection[str] = (),
              pronoun_means_speaker: bool = False) -> Attributed | None:
    """The statement one sentence makes, in the third person, and who it is about; None when the subject is
    not resolved or nothing is left (the module docstring has the rules)."""
    label, body = split_speaker(IMAGE_MARKUP.sub("", text))
    names = _Names(label or speaker, speaker, tuple(known))
    body = _without_openers(_straight_apostrophes(body))
    if not re.search(r"\w", body) or _addressed_or_asked(body):
        return None
    lead = _lead(body)
    subject = _subject(body[lead:], names, pronoun_means_speaker)
    if subject is None or not re.search(r"\w", _after_subject(subject.clause)):
        return None
    statement = _finish(_third_person(body[:lead] + subject.clause, names.narrator))
    return Attributed(subject.about, subject.relation, statement)


def is_third_person(statement: str) -> bool:
    """No I/me/my/we/us/our/you/your outside quotation marks ("US" the country aside) and no "Name:" label."""
    found = (m.group() for m in FIRST_OR_SECOND.finditer(_unquoted(statement)))
    return not any(word != "US" for word in found) and not split_speaker(statement)[0]


# --- clean-up before the subject ------------------------------------------------------------------------------

def _straight_apostrophes(text: str) -> str:
    # Curly apostrophes outside quotes read as straight ones: "I’m" is "I'm".
    return "".join(part if quoted else part.replace("’", "'") for part, quoted in _parts(text))


def _without_openers(body: str) -> str:
    """Chat glue off the front, repeatedly: "Haha, yeah, by the way, I …" → "I …"."""
    while True:
        stripped = OPENERS.sub("", CHAT_GLUE.sub("", body.lstrip(" ,.-…"))).lstrip(" ,.-…")
        vocative = VOCATIVE.match(stripped)
        if vocative and vocative.group("name") not in NOT_NAMES:  # "Mel, I …" but not "Yesterday, I …"
            stripped = stripped[vocative.end():]
        if stripped == body:
            return body
        body = stripped


def _addressed_or_asked(body: str) -> bool:
    outside = _unquoted(body)
    return "?" in outside or bool(_ADDRESSED.search(outside))


def _lead(body: str) -> int:
    """Where the main clause's subject starts: after a fronted clause or a time or place phrase."""
    start = 0
    # Time phrases can come two in a row ("Last week on Monday I …").
    for pattern in (SUBORDINATE, FRONTED, TIME, TIME, PREFACE):
        match = pattern.match(body[start:])
        if match and _subject_like(body[start + match.end():]):
            start += match.end()
    return start


def _subject_like(rest: str) -> bool:
    return bool(re.match(r"[A-Z]|(?:i|we|my|our)\b", rest))


# --- the subject -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Names:
    narrator: str
    speaker: str
    known: tuple[str, ...]

    def entity(self, name: str) -> str | None:
        """The speaker, narrator or known entity a name stands for (a first name matches a full name)."""
        wanted = name.lower()
        for candidate in (self.speaker, self.narrator, *self.known):
            if candidate.strip() and wanted in (candidate.lower(), candidate.lower().split()[0]):
                return candidate
        return None

    @property
    def own(self) -> str:
        """Who "I" is, named as the caller names them."""
        return self.entity(self.narrator) or self.narrator


_DROP = _Subject("", "", "")  # a rule that applies and drops the sentence (a pronoun nobody resolves)


def _subject(clause: str, names: _Names, pronoun_means_speaker: bool) -> _Subject | None:
    """The first rule that recognises the clause's subject decides; none recognising it drops the sentence."""
    for finder in (_joint, _first_person, _possessed, _pronoun, _named, _thing):
        found = finder(clause, names, pronoun_means_speaker)
        if found is not None:
            return None if found is _DROP else found
    return None


def _joint(clause: str, names: _Names, _: bool) -> _Subject | None:
    match = JOINT.match(clause)
    if not match:
        return None
    # "My wife and I" → "I and their wife": the narrator first, so "their" can only mean the narrator.
    other = re.sub(r"^(?:my|our)\b", "their", match.group("after") or match.group("before"), flags=re.I)
    return _Subject(names.own, "", f"I and {other}{clause[match.end():]}")


def _first_person(clause: str, names: _Names, _: bool) -> _Subject | None:
    return _Subject(names.own, "", clause) if _FIRST_PERSON_SUBJECT.match(clause) else None


def _possessed(clause: str, names: _Names, _: bool) -> _Subject | None:
    match = POSSESSED.match(clause) or _OF_MINE.match(clause)
    if not match:
        return None
    if match.group("noun").lower() not in RELATIONS:
        return _Subject(names.own, "", clause)  # "My favourite food", "My job": the narrator's own
    name = match.groupdict().get("name")
    phrase = match.group("phrase").lower()
    return _Subject(names.own, f"{phrase} {name}" if name else phrase, clause)


def _pronoun(clause: str, names: _Names, pronoun_means_speaker: bool) -> _Subject | None:
    if not PRONOUN_SUBJECT.match(clause):
        return None
    match = SPEAKER_PRONOUN.match(clause)
    if not (pronoun_means_speaker and match):
        return _DROP
    return _Subject(names.speaker, "", _as_speaker(match, clause, names.speaker))


def _as_speaker(match: re.Match[str], clause: str, speaker: str) -> str:
    """"They love" → "I love" (the rewrite then agrees the verb); "She's been" → "<Speaker> has been"."""
    rest = clause[match.end():]
    verb = (match.group("verb") or "").lower()
    if match.group("they"):
        return "I" + {"'re": "'m"}.get(verb, verb) + rest
    if verb == "'s":
        verb = " has" if re.match(r"\s+(?:been|got|gotten)\b", rest) else " is"
    return speaker + {"'re": " is", "'ve": " has", "'ll": " will", "'d": " would"}.get(verb, verb) + rest


def _named(clause: str, names: _Names, _: bool) -> _Subject | None:
    match = _NAME.match(clause)
    name = _name_words(match.group("name")) if match else ""
    if not match or not name:
        return None
    entity = names.entity(name)
    if match.group("possessive") and name == match.group("name"):
        # "Caroline's dog …" is about her dog; "Sam's dog …" about someone the narrator knows.
        thing = clause[match.end():].split()
        noun = thing[0].strip(",.").lower() if thing else ""
        return _Subject(entity or names.own, noun if entity else f"{name}'s {noun}".strip(), clause)
    if entity:
        return _Subject(entity, "", clause)
    return _copula(clause, names, name) or _Subject(names.own, name, clause)


def _name_words(phrase: str) -> str:
    """The leading words of a capitalised phrase that can be a name ("Sam Lee", not "Painting" or "Last")."""
    kept = []
    for word in phrase.split():
        if word in NOT_NAMES or (word.endswith("ing") and len(word) > 5):
            break
        kept.append(word)
    return " ".join(kept)


def _copula(clause: str, names: _Names, name: str = "") -> _Subject | None:
    """"Sam is my colleague" (a relation, named) or "Pottery is my favourite hobby" (the narrator's own)."""
    match = COPULA_MINE.match(clause)
    if not match:
        return None
    if match.group("noun").lower() in RELATIONS:
        return _Subject(names.own, f"{match.group('phrase').lower()} {name}".strip(), clause)
    return _Subject(names.own, "", clause)


def _thing(clause: str, names: _Names, _: bool) -> _Subject | None:
    # "Painting helps me relax": an activity said to affect the narrator is about the narrator.
    if _GERUND.match(clause) and NARRATOR_MENTION.search(_unquoted(clause)):
        return _Subject(names.own, "", clause)
    found = _copula(clause, names)
    return found if found is not None and not found.relation else None


def _after_subject(clause: str) -> str:
    return re.sub(r"^\S+", "", clause, count=1)


# --- the rewrite -------------------------------------------------------------------------------------------------

_AGREE, _KEEP = "agree", "keep"  # the verb after "I" agrees; after "we" it stays plural


@dataclass
class _State:
    name: str
    tokens: list[str]
    index: int = 0
    narrator_subject: bool = False  # the narrator is a subject in this sentence: reflexives point at them
    right_after_verb: bool = False  # the next word is the narrator's verb's object: "their" is unambiguous
    verb_next: str = ""  # _AGREE or _KEEP while the narrator's verb is still to come


def _third_person(text: str, narrator: str) -> str:
    out: list[str] = []
    for part, quoted in _parts(text):
        out.extend([part] if quoted else _rewritten(_State(narrator, _TOKEN.findall(part))))
    return "".join(out)


def _rewritten(state: _State) -> Iterator[str]:
    while state.index < len(state.tokens):
        token = state.tokens[state.index]
        state.index += 1
        if re.match(r"\w", token):
            yield _word(token, state)
        else:
            if not token.isspace():  # punctuation ends an object; only a comma may sit before the verb ("I, too, …")
                state.verb_next = state.verb_next if token == "," else ""
                state.right_after_verb = False
            yield token


def _word(token: str, state: _State) -> str:
    low = token.lower()
    if state.verb_next:
        return _verb(token, state)
    after_verb, state.right_after_verb = state.right_after_verb, False
    if low in _I_FORMS or low in _WE_FORMS:
        return _narrator(low, state)
    return _possessive(low, state, after_verb) or token


_I_FORMS = {"i": "", "i'm": " is", "i've": " has", "i'll": " will", "i'd": ""}
_WE_FORMS = {"we": "", "we're": " are", "we've": " have", "we'll": " will", "we'd": " would"}


def _narrator(low: str, state: _State) -> str:
    """I → the name (its verb to agree), we → "<name> and others" (its verb stays plural)."""
    state.narrator_subject = True
    contracted = _I_FORMS.get(low, _WE_FORMS.get(low, ""))
    if low == "i'd":
        contracted = " had" if _participle_follows(state) else " would"
    # After "I'll", "we've" the main verb is still to come ("I'll start my job"): "their" waits for its object.
    state.verb_next = _AGREE if low == "i" else _KEEP
    return (state.name if low in _I_FORMS else f"{state.name} and others") + contracted


def _participle_follows(state: _State) -> bool:
    following = [t.lower() for t in state.tokens[state.index:] if re.match(r"\w", t)]
    verb = next((w for w in following if w not in ADVERBS), "")
    return verb in PARTICIPLES or verb.endswith("ed") and not verb.endswith("eed")


# my → "their" right after the narrator's verb, else "<Name>'s" ({} stands for the name).
_POSSESSIVES = {"my": ("their", "{}'s"), "our": ("their", "{}'s"), "mine": ("theirs", "{}'s"),
                "ours": ("theirs", "{}'s"), "me": ("{}", "{}"), "us": ("them", "{} and others"),
                "myself": ("themself", "{}"), "ourselves": ("themselves", "{} and others")}


def _possessive(low: str, state: _State, after_verb: bool) -> str | None:
    if low not in _POSSESSIVES:
        return None
    reflexive = low in ("myself", "ourselves") and state.narrator_subject
    return _POSSESSIVES[low][0 if after_verb or reflexive else 1].format(state.name)


def _verb(token: str, state: _State) -> str:
    low = token.lower()
    if low in ADVERBS or (low.endswith("ly") and len(low) > 4 and low not in NOT_ADVERBS):
        return token  # "I really love" → "really loves": agreement waits for the verb
    mode, state.verb_next = state.verb_next, ""
    if low in _POSSESSIVES:  # "I'm my own boss": the object, straight after the verb
        return _possessive(low, state, after_verb=True) or token
    if low in NOT_VERBS or not token.replace("'", "").isalpha() or token[0].isupper():
        return token
    if low in AUXILIARIES:
        state.verb_next = _KEEP  # "I should call my mom": the object comes after the main verb
    else:
        state.right_after_verb = True
    return agree(token) if mode == _AGREE else token


def agree(verb: str) -> str:
    """The third-person singular of a verb that followed "I": love → loves, try → tries, am → is."""
    low = verb.lower()
    if low in AGREEMENT:
        return AGREEMENT[low]
    if low in PAST or low.endswith("n't") or (low.endswith("ed") and not low.endswith("eed")):
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


# --- finishing ---------------------------------------------------------------------------------------------------

def _finish(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"!+$", ".", text)
    return text[:1].upper() + text[1:]


def _parts(text: str) -> Iterator[tuple[str, bool]]:
    """The text in order as (part, is it inside quotation marks)."""
    position = 0
    for match in _QUOTED.finditer(text):
        yield text[position:match.start()], False
        yield match.group(), True
        position = match.end()
    yield text[position:], False


def _unquoted(text: str) -> str:
    return " ".join(part for part, quoted in _parts(text) if not quoted)
