"""Condensed passages: what reflected episodes said, kept searchable once the episodes are consolidated.

A reflection call condenses its episodes the way clustering merges (repeated sentences and small talk dropped,
relative dates anchored), topic by topic, in passages of at most ZEROMEMORY_MERGED_MAX_CHARS characters. A
passage whose topic an earlier passage of the scope already holds, with room left, grows that passage instead of
adding one: the store ends up with fewer, fuller passages, each about one thing (which search finds far better
than a stretch of mixed talk). Growing is written in the call's transaction, conditional on the passage being
unchanged since it was planned, with a snapshot an undo writes back (`passage_shrink`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction

from consolidation.domain.merging import (
    Member,
    fold_into,
    merge_cluster,
    share_thin,
    topic_groups,
    topic_similarity,
)
from consolidation.ledger import semantic_snapshot
from consolidation.selectors import (
    MemoryRow,
    PassageRow,
    ReflectionScope,
    condensed_passages_of,
    has_near_twin,
)
from zeromem.core.adapters.embeddings import Vector
from zeromem.core.domain.entities import extract_entities
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.core.services import content_hash, memories_embed_pending, search_stats_add, search_stats_remove
from zeromem.models import Memory, MemorySource, MemoryState

# A statement this similar to another memory of the user keeps a passage of its own topic: mixed with other
# statements, search would rank the twin above it.
TWIN_SIMILARITY = 0.85
SNAPSHOT = ["content", "entities", "metadata", "importance", "corroboration_count", "valid_from"]


@dataclass(frozen=True)
class Passage:
    text: str
    numbers: list[int]  # short ids (positions in the batch, from 1) of the episodes it stands for
    vector: np.ndarray | None = None  # its topic: the mean of its episodes' vectors (None: one has none)


@dataclass(frozen=True)
class Growth:
    """An earlier passage of the same topic that new passages are appended to."""

    target: PassageRow  # as it was planned: a passage changed since refuses the call
    text: str  # its text once they are appended
    numbers: list[int]  # the episodes it gains


@dataclass(frozen=True)
class PassagePlan:
    passages: list[Passage]  # everything the call condensed (what items are checked against)
    new: list[Passage]  # the passages the call writes (the condensed ones of a topic share one)
    growths: list[Growth]
    homes: list[tuple[bool, int]]  # per condensed passage: (grows an earlier one, index into growths or new)


def condensed_passages(rows: Sequence[MemoryRow], vectors: Mapping[uuid.UUID, np.ndarray]) -> list[Passage]:
    """The episodes among `rows` condensed topic by topic (`vectors`: theirs, by id). Lossless: a profile item
    keeps only what a rule found, so the passages keep every fact the episodes stated ("allergic to gluten" is
    not said by "allergic to sesame")."""
    episodes = [r for r in rows if not r.is_semantic]
    number = {r.id: n for n, r in enumerate(rows, 1)}
    similarity = topic_similarity([r.content for r in episodes], [vectors.get(r.id) for r in episodes])
    passages: list[Passage] = []
    for group in topic_groups(similarity):
        members = [episodes[i] for i in group]
        chunks = merge_cluster([Member(r.content, r.created_at.date()) for r in members],
                               limit=settings.ZEROMEMORY_MERGED_MAX_CHARS, lossless=True)
        passages += [Passage(chunk.text, [number[members[m].id] for m in chunk.members],
                             _mean([vectors.get(members[m].id) for m in chunk.members])) for chunk in chunks]
    return _all_cited(passages, [number[r.id] for r in episodes])


def _all_cited(passages: list[Passage], episodes: Sequence[int]) -> list[Passage]:
    """A topic that said nothing worth a passage ("Haha, thanks!") still has its episodes cited: by the first
    passage (no passage at all: the caller writes a digest citing the whole batch)."""
    cited = {n for p in passages for n in p.numbers}
    stray = [n for n in episodes if n not in cited]
    if not passages or not stray:
        return passages
    return [replace(passages[0], numbers=[*passages[0].numbers, *stray]), *passages[1:]]


def _mean(vectors: Sequence[np.ndarray | None]) -> np.ndarray | None:
    if not vectors or any(v is None for v in vectors):
        return None
    return np.mean(np.array(vectors, dtype=np.float32), axis=0)


def passages_plan(scope: ReflectionScope, rows: Sequence[MemoryRow],
                  vectors: Mapping[uuid.UUID, np.ndarray]) -> PassagePlan:
    """What the call's passages become: growths of the scope's earlier passages of their topic, or new ones (a
    topic's condensed passages of this call sharing one while it has room). `vectors`: the rows', by id."""
    passages = condensed_passages(rows, vectors)
    limit = settings.ZEROMEMORY_MERGED_MAX_CHARS
    targets = condensed_passages_of(scope, window=rows[0].window) if passages else []
    similarity = topic_similarity([*(t.content for t in targets), *(p.text for p in passages)],
                                  [*(t.vector for t in targets), *(p.vector for p in passages)],
                                  first_row=len(targets))
    homes, texts = fold_into([p.text for p in passages], similarity, [t.content for t in targets], limit=limit)
    homes, texts = share_thin(homes, texts, opened_from=len(targets), limit=limit,
                              mixable={h for h in set(homes) if h >= len(targets)
                                       and not _has_twin(scope, rows, passages[h - len(targets)])})
    gained = {home: [n for p, h in zip(passages, homes, strict=True) if h == home for n in p.numbers]
              for home in homes}
    grown, opened = sorted(h for h in gained if h < len(targets)), sorted(h for h in gained if h >= len(targets))
    return PassagePlan(
        passages=passages, new=[Passage(texts[h], gained[h]) for h in opened],
        growths=[Growth(targets[h], texts[h], gained[h]) for h in grown],
        homes=[(True, grown.index(h)) if h < len(targets) else (False, opened.index(h)) for h in homes])


def _has_twin(scope: ReflectionScope, rows: Sequence[MemoryRow], passage: Passage) -> bool:
    """Whether another memory of the user says nearly the same (no vector: assume so, and keep it apart)."""
    return passage.vector is None or has_near_twin(tenant_id=scope.tenant_id, user_id=scope.user_id,
                                                   vector=passage.vector, threshold=TWIN_SIMILARITY,
                                                   excluding=[r.id for r in rows])


def passage_grow(growth: Growth, rows: Sequence[MemoryRow], vector: Vector | None) -> tuple[Memory, dict[str, Any]]:
    """Append to an earlier passage and cite the episodes it gains (`rows`); returns it and the snapshot an undo
    writes back. Raises TransitionRefused when the passage changed since it was planned."""
    memory = (Memory.objects.select_for_update().filter(id=growth.target.id, state=MemoryState.RAW,
                                                        content_hash=growth.target.content_hash).first())
    if memory is None:
        raise TransitionRefused("a passage this call grows changed meanwhile; nothing of this call was written")
    before = {"id": str(memory.id), "added_source_ids": [str(r.id) for r in rows],
              "content_hash_after": content_hash(growth.text), **semantic_snapshot(memory, SNAPSHOT)}
    ids = list(dict.fromkeys([*memory.metadata.get("source_ids", []), *(str(r.id) for r in rows)]))
    search_stats_remove(memory_ids=[memory.id])
    memory.content, memory.content_hash, memory.embedding = growth.text, content_hash(growth.text), vector
    memory.entities = extract_entities(growth.text)[:50]
    memory.metadata = {**memory.metadata, "source_ids": ids, "source_count": len(ids)}
    memory.corroboration_count = len(ids)
    memory.importance = max([memory.importance, *(r.importance for r in rows)])
    memory.valid_from = min([*([memory.valid_from] if memory.valid_from else []), *(r.created_at for r in rows)])
    memory.save(update_fields=["content", "content_hash", "embedding", "entities", "metadata",
                               "corroboration_count", "importance", "valid_from", "updated_at"])
    search_stats_add(memory_ids=[memory.id])
    MemorySource.objects.bulk_create([MemorySource(memory=memory, source_id=r.id, source_memory_id=r.id,
                                                   source_content_hash=r.content_hash) for r in rows],
                                     ignore_conflicts=True)
    return memory, before


def passage_shrink(before: dict[str, Any]) -> None:
    """Undo a growth: the passage's text, fields and links as they were; its vector is recomputed after commit.
    Refused (TransitionRefused) when a later call grew the passage again or cited more episodes from it: undo
    that one first."""
    memory_id = uuid.UUID(before["id"])
    memory = Memory.objects.select_for_update().filter(id=memory_id, state=MemoryState.RAW).first()
    expected = {*before["metadata"].get("source_ids", []), *before["added_source_ids"]}
    if memory is None or memory.content_hash != before["content_hash_after"] or \
            set(memory.metadata.get("source_ids", [])) != expected:
        raise TransitionRefused(f"passage {memory_id} changed after this call grew it; undo the later change first")
    MemorySource.objects.filter(memory_id=memory_id, source_memory_id__in=before["added_source_ids"]).delete()
    search_stats_remove(memory_ids=[memory_id])
    Memory.objects.filter(id=memory_id).update(
        content=before["content"], content_hash=content_hash(before["content"]), embedding=None,
        entities=before["entities"], metadata=before["metadata"], importance=before["importance"],
        corroboration_count=before["corroboration_count"],
        valid_from=datetime.fromisoformat(before["valid_from"]) if before["valid_from"] else None)
    search_stats_add(memory_ids=[memory_id])
    transaction.on_commit(lambda: memories_embed_pending(memory_ids=[memory_id]))
