"""Statements, and the ones consolidation lost: the measure behind `statements_lost` and `current_lost`
(`evaluate locomo`, `evaluate longmemeval`, `evaluate merges`).

- A **statement** is one sentence of a source (episodic) memory carrying a value by spaCy's parse
  (`zeromem.language.values`, by which clustering keeps sentences; this module checks the outcome): an entity of a
  value type (`VALUE_ENTITIES`: a number, a name, a date, a time, an amount, a place…), a NUM token, a capitalised
  PROPN token that does not open the sentence (the tagger calls any capitalised opener a name), or a frequency (a
  noun-phrase adverbial of a verb, with a determiner and a count: "twice a week", "three times a week"; "every
  Sunday" is a DATE already). Not values: the speakers' own names ("Name: " prefixes of the texts read, and short
  forms of them), the addressee (a name alone between punctuation, an interjection or the sentence's ends:
  "Thanks, Mel!", "Hey Caroline!"), a one-word "name" that is a capitalised exclamation ("Woohoo!", "Congrats,
  Gina!"), a lower-case "name" ("see ya") and a spelled number standing for a thing ("nice one"). Questions (a
  sentence ending in "?", "?!") are no statements. Values are lower-cased, digits as written, without trailing
  punctuation. Sentences are the project's own split (`zeromem.core.domain.text.sentences`), each parsed alone, so
  a kept sentence parses alike.
- A memory **states** a statement when its text holds every value of it as whole words, lower-cased, a date's
  anchor aside (`values.value_pattern`: "yesterday (7 May 2023)" holds "yesterday", "last month (August 2023)'s"
  "last month's"), and at least `STATED_SHARE` (0.8) of its content lemmas. Tuned on the
  dev split by reading examples: merged memories keep sentences verbatim (457 of 486 statements of merged sources
  on 4 dev conversations sit at 1.0, anchored dates at 0.85–1.0), while 0.6–0.8 held only other memories sharing
  a value and a few common words ("Your four pups must have a lot of fun." / "I love checking out new parks with
  my four pups."). Formulaic image captions ("[shares image: a photo of two dogs …]") still match each other
  above 0.8: a dropped caption may go uncounted when a like one stays.
- A statement is **lost** when no active memory (any type) states it and no retirement explains it: its memory
  was archived as superseded, or a superseded memory standing for its memory (a retired claim citing it, directly
  or through merges) states it.
"""

from __future__ import annotations

import re
import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from zeromem.core.domain.text import drop_speaker, sentences
from zeromem.core.domain.transitions import SUPERSEDED
from zeromem.language.content import said_sentences
from zeromem.language.facts import content_lemmas
from zeromem.language.pipeline import nlp
from zeromem.language.values import BATCH, names_of, normalised, sentence_values, value_pattern
from zeromem.models import Memory, MemorySource, MemoryState, MemoryType

STATED_SHARE = 0.8  # tuned on the dev split (module docstring)
_WORD = re.compile(r"\w+")
# A value ends at its last word: the point of "last Wed." is punctuation, and an anchored "last Wed (the Wednesday
# before …)." still says it.
_TRAILING = re.compile(r"\W+$")


@dataclass(frozen=True)
class Statement:
    """One source sentence carrying a value."""

    memory_id: uuid.UUID
    text: str
    values: frozenset[str]
    words: frozenset[str]  # its content lemmas, lower-cased


# --- statements of source texts ----------------------------------------------------------------------------

def source_statements(texts: Mapping[uuid.UUID, str]) -> list[Statement]:
    """The statements of source memories' texts, in the order given (one parse of every sentence, batched). The
    speakers of these texts are the people talking: their names are no value ("That is really great Jon!")."""
    pieces = [(memory_id, speaker, sentence) for memory_id, text in texts.items()
              for speaker, said in [said_sentences(text)] for sentence in said]
    names = frozenset(normalised(speaker) for _, speaker, _ in pieces if speaker)
    found = []
    for (memory_id, _, sentence), doc in zip(pieces, nlp().pipe([p[2] for p in pieces], batch_size=BATCH),
                                             strict=True):
        values = frozenset(_TRAILING.sub("", value) for value in sentence_values(doc, names))
        if values:
            found.append(Statement(memory_id=memory_id, text=sentence, values=values,
                                   words=content_lemmas(doc) - names_of(values, names)))
    return found


# --- which memories state them -----------------------------------------------------------------------------

class Stating:
    """Memories indexed by their words, so a statement is checked only against memories holding its values' words;
    lemmas are parsed lazily, only for such candidates."""

    def __init__(self, texts: Mapping[uuid.UUID, str], share: float) -> None:
        self.raw = texts
        self.texts = {memory_id: normalised(text) for memory_id, text in texts.items()}
        self.share = share
        self.by_word: dict[str, set[uuid.UUID]] = defaultdict(set)
        for memory_id, text in self.texts.items():
            for word in set(_WORD.findall(text)):
                self.by_word[word].add(memory_id)
        self.lemmas: dict[uuid.UUID, frozenset[str]] = {}

    def candidates(self, statement: Statement, among: Iterable[uuid.UUID] | None = None) -> set[uuid.UUID]:
        """Memories whose text holds every value of the statement as whole words."""
        words = {w for value in statement.values for w in _WORD.findall(value)}
        found = set.intersection(*(self.by_word.get(w, set()) for w in words)) if words else set()
        if among is not None:
            found &= set(among)
        patterns = [value_pattern(value) for value in statement.values]
        return {m for m in found if all(p.search(self.texts[m]) for p in patterns)}

    def parse(self, memory_ids: Iterable[uuid.UUID]) -> None:
        """Each memory's lemmas, parsed sentence by sentence as statements are: a sentence kept verbatim lemmatises
        as it did in its source."""
        wanted = [m for m in dict.fromkeys(memory_ids) if m not in self.lemmas]
        pieces = [(m, sentence) for m in wanted for sentence in sentences(drop_speaker(self.raw[m]))]
        for memory_id in wanted:
            self.lemmas[memory_id] = frozenset()
        for (memory_id, _), doc in zip(pieces, nlp().pipe([p[1] for p in pieces], batch_size=BATCH),
                                       strict=True):
            self.lemmas[memory_id] |= content_lemmas(doc)

    def stated(self, statements: Sequence[Statement],
               among: Mapping[uuid.UUID, Iterable[uuid.UUID]] | None = None) -> list[bool]:
        """Per statement: does a memory (of `among[statement.memory_id]`, when given) state it?"""
        candidates = [self.candidates(s, None if among is None else among.get(s.memory_id, ())) for s in statements]
        self.parse(m for found in candidates for m in found)
        return [any(self.keeps(s, m) for m in found) for s, found in zip(statements, candidates, strict=True)]

    def keeps(self, statement: Statement, memory_id: uuid.UUID) -> bool:
        if not statement.words:
            return True
        return len(statement.words & self.lemmas[memory_id]) >= self.share * len(statement.words)


# --- lost statements ---------------------------------------------------------------------------------------

def lost(tenant_id: int, user_id: str | None = None, *, share: float = STATED_SHARE) -> list[Statement]:
    """The statements of every episodic memory of the scope (whatever its state) that no active memory states and
    no retirement explains (module docstring). One user at a time, so memory stays bounded by the largest user."""
    users = [user_id] if user_id is not None else list(
        Memory.objects.filter(tenant_id=tenant_id, memory_type=MemoryType.EPISODIC)
        .order_by("user_id").values_list("user_id", flat=True).distinct())
    return [statement for user in users for statement in lost_of_user(tenant_id, user, share)]


def lost_of_user(tenant_id: int, user_id: str, share: float) -> list[Statement]:
    """1. the statements of the user's episodic memories; 2. those not stated by an active memory (a memory still
    active states its own); 3. of those, the ones no retirement explains."""
    memories = Memory.objects.filter(tenant_id=tenant_id, user_id=user_id)
    sources = dict(memories.filter(memory_type=MemoryType.EPISODIC).values_list("id", "content"))
    statements = source_statements(sources)
    active = dict(memories.filter(state=MemoryState.RAW).values_list("id", "content"))
    unstated = [s for s in statements if s.memory_id not in active]
    unstated = [s for s, kept in zip(unstated, Stating(active, share).stated(unstated), strict=True) if not kept]
    return unexplained(tenant_id, user_id, unstated, share)


def unexplained(tenant_id: int, user_id: str, statements: list[Statement], share: float) -> list[Statement]:
    """The statements no supersede retired: neither their memory nor a retired memory standing for it (one citing
    it, directly or through merges) that states them."""
    retired = dict(Memory.objects.filter(tenant_id=tenant_id, user_id=user_id, state=MemoryState.ARCHIVED,
                                         archive_reason=SUPERSEDED).values_list("id", "content"))
    statements = [s for s in statements if s.memory_id not in retired]
    if not statements or not retired:
        return statements
    standing_for = retired_covering(tenant_id, user_id, frozenset(retired))
    explained = Stating(retired, share).stated(statements, among=standing_for)
    return [s for s, gone in zip(statements, explained, strict=True) if not gone]


def retired_covering(tenant_id: int, user_id: str, retired: frozenset[uuid.UUID]) -> dict[uuid.UUID, set[uuid.UUID]]:
    """Source memory id → the retired memories citing it, directly or through the memories they cite."""
    cites: dict[uuid.UUID, list[uuid.UUID]] = defaultdict(list)
    for memory_id, source_id in MemorySource.objects.filter(
            memory__tenant_id=tenant_id, memory__user_id=user_id).values_list("memory_id", "source_memory_id"):
        cites[memory_id].append(source_id)
    covering: dict[uuid.UUID, set[uuid.UUID]] = defaultdict(set)
    for memory_id in retired:
        stack, seen = list(cites.get(memory_id, ())), set()
        while stack:
            source = stack.pop()
            if source not in seen:
                seen.add(source)
                covering[source].add(memory_id)
                stack += cites.get(source, ())
    return covering
