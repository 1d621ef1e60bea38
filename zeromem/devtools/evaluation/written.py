"""How well merged texts are written, by fixed definitions over spaCy's parse and the language seam (not by the
merge code's own decisions): the `evaluate merges` figures of issue 34.

A merged text's sentences are traced to its sources (the episodic memories it stands for, through merges of
merges): a source sentence is **kept** when the merged text holds it, compared without case, trailing
punctuation or parenthesised date anchors ("yesterday (7 May 2023)" is "yesterday").

- `cross_session_joins`: merged texts joining two sources said more than a day apart (`created_at`) where no kept
  sentence of the one is about the same attribute as a kept sentence of the other (`Reader.same_attribute` of the
  default reader, with the sentences' vectors under the configured embedder);
- `orphaned_referents`: kept sentences opening with a third-person pronoun (tag PRP, Person=3: "they", "it") or a
  demonstrative (tag DT, PronType=Dem: "that", "this"), not standing for a clause that follows ("It's important
  to help"), whose preceding sentence in the same source was dropped
  and names a thing the pronoun could stand for (a noun or name as a verb's argument: "What did the doctor say?"
  does, "Thanks a bunch!" and "Congrats, Gina!" do not);
- `content_free`: active semantic memories that say nothing by `zeromem.language.content`: no statement (a
  sentence, no question, carrying a value) and no sentence (not a question) with a verb taking a thing as object or
  complement (a noun, name or number, directly or through a preposition, or through the adjective complementing
  the verb: "I love that painting", "I'm keen on counseling"; not "see you", "that's so cool"). Clustering decides
  by the same definition never to write such a text.
"""

from __future__ import annotations

import re
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import combinations, product
from typing import Any

from zeromem.core.domain.text import drop_speaker, sentences, split_speaker
from zeromem.language import Said
from zeromem.language.content import says_something
from zeromem.language.pipeline import nlp
from zeromem.language.values import BATCH, normalised
from zeromem.models import Memory, MemorySource, MemoryState, MemoryType

SESSION_GAP = timedelta(days=1)
ARGUMENT_DEPS = frozenset({"nsubj", "nsubjpass", "dobj", "pobj", "attr", "conj", "dative", "oprd"})
_ANCHOR = re.compile(r"\s*\([^)]*\)")
Embed = Callable[[list[str]], Sequence[Sequence[float] | None]]


def sentence_key(sentence: str) -> str:
    """A sentence as compared between a source and a merged text."""
    return " ".join(_ANCHOR.sub("", sentence).lower().split()).rstrip(" .!?;:,…")


@dataclass(frozen=True)
class Source:
    memory_id: uuid.UUID
    at: datetime
    sentences: tuple[str, ...]


@dataclass(frozen=True)
class Merged:
    memory_id: uuid.UUID
    text: str
    sources: tuple[Source, ...]

    def kept(self) -> list[tuple[Source, list[int]]]:
        """Per source, the indexes of its sentences the merged text holds."""
        held = {sentence_key(s) for s in sentences(drop_speaker(self.text))}
        return [(source, [i for i, s in enumerate(source.sentences) if sentence_key(s) in held])
                for source in self.sources]


# --- loading -----------------------------------------------------------------------------------------------

def merged_texts(tenant_id: int, user_id: str) -> list[Merged]:
    """The user's semantic memories written by clustering, each with the episodic memories it stands for."""
    memories = Memory.objects.filter(tenant_id=tenant_id, user_id=user_id)
    cites: dict[uuid.UUID, list[uuid.UUID]] = defaultdict(list)
    for memory_id, source_id in MemorySource.objects.filter(
            memory__tenant_id=tenant_id, memory__user_id=user_id).values_list("memory_id", "source_memory_id"):
        cites[memory_id].append(source_id)
    episodes = {m: (content, at) for m, content, at in memories.filter(memory_type=MemoryType.EPISODIC)
                .values_list("id", "content", "created_at")}
    merged = memories.filter(memory_type=MemoryType.SEMANTIC, metadata__source_type="consolidated").order_by(
        "created_at", "id").values_list("id", "content")
    return [Merged(memory_id, text, tuple(
        Source(s, episodes[s][1], tuple(sentences(drop_speaker(episodes[s][0]))))
        for s in episodes_of(memory_id, cites) if s in episodes)) for memory_id, text in merged]


def episodes_of(memory_id: uuid.UUID, cites: Mapping[uuid.UUID, list[uuid.UUID]]) -> list[uuid.UUID]:
    """The memories a memory cites, through the memories they cite, in citing order (leaves: the episodes)."""
    found, stack, seen = [], list(reversed(cites.get(memory_id, []))), {memory_id}
    while stack:
        source = stack.pop()
        if source in seen:
            continue
        seen.add(source)
        found.append(source)
        stack += reversed(cites.get(source, []))
    return found


# --- cross-session joins -----------------------------------------------------------------------------------

def cross_session_joins(merged: Sequence[Merged], reader: Any, embed: Embed) -> list[str]:
    """The merged texts joining two sources more than a day apart with no kept sentences about the same attribute
    (module docstring). One batch of vectors and one of judgements for all."""
    joins = {m.memory_id: far_pairs(m) for m in merged}
    pairs = [(a, b) for far in joins.values() for group in far for a, b in group]
    texts = list(dict.fromkeys(s.text for pair in pairs for s in pair))
    vectors = dict(zip(texts, embed(texts), strict=True)) if texts else {}
    verdicts = iter(reader.same_attribute([(Said(a.text, a.at, vectors[a.text]), Said(b.text, b.at, vectors[b.text]))
                                           for a, b in pairs]))
    found = []
    for m in merged:
        if not all([any([next(verdicts) for _ in group]) for group in joins[m.memory_id]]):
            found.append(m.text)
    return found


def far_pairs(merged: Merged) -> list[list[tuple[Said, Said]]]:
    """Per two sources said more than a day apart, each with a kept sentence: every pair of their kept sentences."""
    kept = [(s, [Said(s.sentences[i], s.at) for i in indexes]) for s, indexes in merged.kept() if indexes]
    return [list(product(said_a, said_b)) for (a, said_a), (b, said_b) in combinations(kept, 2)
            if abs(a.at - b.at) > SESSION_GAP]


# --- orphaned referents ------------------------------------------------------------------------------------

def orphaned_referents(merged: Sequence[Merged]) -> list[str]:
    """Kept sentences opening with a third-person pronoun or a demonstrative whose preceding sentence in the same
    source was dropped, as "<dropped> → <kept>"."""
    candidates = [(s.sentences[i - 1], s.sentences[i]) for m in merged for s, kept in m.kept()
                  for i in kept if i > 0 and i - 1 not in kept]
    docs = list(nlp().pipe([text for pair in candidates for text in pair], batch_size=BATCH))
    return [f"{dropped} → {kept}" for (dropped, kept), before, after in zip(candidates, docs[0::2], docs[1::2],
                                                                          strict=True)
            if names_a_thing(before) and opens_with_referent(after)]


def names_a_thing(doc: Any) -> bool:
    """Has the sentence a noun phrase a pronoun could stand for: a noun or name as a verb's argument ("What did the
    doctor say?"), not an exclamation's head ("Thanks a bunch!") or an addressee ("Congrats, Gina!")."""
    return any(t.pos_ in ("NOUN", "PROPN") and t.dep_ in ARGUMENT_DEPS for t in doc)


def opens_with_referent(doc: Any) -> bool:
    first = next((t for t in doc if not t.is_punct and t.pos_ != "INTJ"), None)
    if first is None:
        return False
    referent = ((first.tag_ == "PRP" and "3" in first.morph.get("Person"))
                or (first.tag_ == "DT" and "Dem" in first.morph.get("PronType")))
    return referent and not anticipates_clause(first)


def anticipates_clause(pronoun: Any) -> bool:
    """The "it" of "It's important to help people" / "It's true that …": the subject of "be" standing for the
    clause that follows, not for anything said before."""
    head = pronoun.head
    return head.lemma_ == "be" and any(c.dep_ in ("xcomp", "ccomp", "csubj") for c in head.children)


# --- content-free memories ---------------------------------------------------------------------------------

def content_free(texts: Mapping[uuid.UUID, str]) -> list[str]:
    """The texts that say nothing by `zeromem.language.content` (no statement, no sentence whose verb takes a
    thing), the speakers of the texts being the people talking (their names are no value)."""
    names = frozenset(normalised(speaker) for text in texts.values() for speaker in [split_speaker(text)[0]]
                      if speaker)
    return [text for text, says in zip(texts.values(), says_something(list(texts.values()), names), strict=True)
            if not says]


def active_semantic(tenant_id: int, user_id: str) -> dict[uuid.UUID, str]:
    return dict(Memory.objects.filter(tenant_id=tenant_id, user_id=user_id, memory_type=MemoryType.SEMANTIC,
                                      state=MemoryState.RAW).values_list("id", "content"))


def users_of(tenant_id: int) -> Iterable[str]:
    return (Memory.objects.filter(tenant_id=tenant_id).order_by("user_id").values_list("user_id", flat=True)
            .distinct())
