"""Condensed passages: what reflected episodes said, kept searchable once the episodes are consolidated.

A reflection call condenses its episodes the way clustering merges (repeated sentences and small talk dropped,
relative dates anchored), topic by topic, in passages of at most the policy's merging.max_chars characters. A
passage whose topic an earlier passage of the scope already holds, with room left, grows that passage instead of
adding one. What is left is packed into fewer passages whatever their topics (into one another, or into an
earlier passage with room) — but a passage about several things is found less easily than one about one thing,
so each plan is checked before it is written: no episode may become one search no longer finds
(`consolidation/jobs/findability.py`); what would lose one is planned again without the packing that lost it.
Growing is written in the call's transaction, conditional on the passage being unchanged since it was planned,
with a snapshot an undo writes back (`passage_shrink`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np
from django.db import transaction

from consolidation.domain.merging import (
    Member,
    appended,
    fold_into,
    merge_cluster,
    pack_passages,
    speakers,
    topic_groups,
    topic_similarity,
    unsaid,
)
from consolidation.jobs.findability import Findability, Planned, canary_query
from consolidation.ledger import semantic_snapshot
from consolidation.selectors import (
    MemoryRow,
    PassageRow,
    ReflectionScope,
    cited_episodes,
    condensed_passages_of,
    memory_vectors,
)
from zeromem.core.adapters.embeddings import Vector, embed_texts_reusing
from zeromem.core.domain.entities import extract_entities
from zeromem.core.domain.policy import Policy, SearchPolicy
from zeromem.core.domain.recall import document_frequency
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.core.services import content_hash, memories_embed_pending, search_stats_add, search_stats_remove
from zeromem.models import Memory, MemorySource, MemoryState

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
    vectors: Mapping[str, Vector | None]  # the texts planned, embedded


def condensed_passages(rows: Sequence[MemoryRow], vectors: Mapping[uuid.UUID, np.ndarray], limit: int
                       ) -> list[Passage]:
    """The episodes among `rows` condensed topic by topic (`vectors`: theirs, by id), in passages of at most
    `limit` characters. Lossless: a profile item
    keeps only what a rule found, so the passages keep every fact the episodes stated ("allergic to gluten" is
    not said by "allergic to sesame")."""
    episodes = [r for r in rows if not r.is_semantic]
    number = {r.id: n for n, r in enumerate(rows, 1)}
    similarity = topic_similarity([r.content for r in episodes], [vectors.get(r.id) for r in episodes])
    passages: list[Passage] = []
    for group in topic_groups(similarity):
        members = [episodes[i] for i in group]
        chunks = merge_cluster([Member(r.content, r.created_at.date()) for r in members],
                               limit=limit, lossless=True)
        passages += [Passage(chunk.text, [number[members[m].id] for m in chunk.members],
                             _mean([vectors.get(members[m].id) for m in chunk.members])) for chunk in chunks]
    alone = said_alone(rows, passages)
    return _all_cited(passages, [number[r.id] for r in episodes if r.id not in alone])


def said_alone(rows: Sequence[MemoryRow], passages: Sequence[Passage]) -> frozenset[uuid.UUID]:
    """The episodes among `rows` no passage cites that are no small talk saying nothing (`unsaid`, what clustering
    archives): a turn leaning on another ("Thanks! I took it at the beach.", "Are they yours at the
    festival?"), a statement too thin for a text — `merge_cluster` leaves such a member as it was said, since a
    merged text would misread it. A passage citing it would retire it without saying what it said: it stays
    active, as clustering leaves it."""
    cited = {n for p in passages for n in p.numbers}
    uncited = [r for n, r in enumerate(rows, 1) if not r.is_semantic and n not in cited]
    names = speakers(r.content for r in rows)
    return frozenset(r.id for r in uncited if not unsaid(r.content, names))


def _all_cited(passages: list[Passage], episodes: Sequence[int]) -> list[Passage]:
    """A topic that said nothing worth a passage ("Haha, thanks!") still has its episodes cited: by the first
    passage (no passage at all: the caller writes a digest citing them). `episodes`: those a passage may cite,
    the ones `said_alone` left out."""
    cited = {n for p in passages for n in p.numbers}
    stray = [n for n in episodes if n not in cited]
    if not passages or not stray:
        return passages
    return [replace(passages[0], numbers=[*passages[0].numbers, *stray]), *passages[1:]]


def _mean(vectors: Sequence[np.ndarray | None]) -> np.ndarray | None:
    if not vectors or any(v is None for v in vectors):
        return None
    return np.mean(np.array(vectors, dtype=np.float32), axis=0)


def passages_plan(scope: ReflectionScope, rows: Sequence[MemoryRow], vectors: Mapping[uuid.UUID, np.ndarray], *,
                  policy: Policy, neighbours: Sequence[MemoryRow] = (), foreseen: Sequence[Planned] = ()
                  ) -> PassagePlan:
    """What the call's passages become: growths of the scope's earlier passages of their topic, or new ones (a
    topic's condensed passages of this call sharing one while it has room), packed into fewer whatever their
    topics — as far as no episode is lost to search that way (`Findability`). A plan that would lose one is made
    again without what lost it, up to PLANNING_ROUNDS times (`_Limits`). `vectors`: the rows', by id;
    `neighbours`: what the run read (an episode's canary query is its rarest phrase among them); `foreseen`:
    what the run's later calls are expected to write (`foreseen_passages`), which will compete in search too."""
    limit = policy.merging.max_chars
    passages = condensed_passages(rows, vectors, limit)
    if not passages:
        return PassagePlan([], [], [], [], {})
    targets = condensed_passages_of(scope, window=rows[0].window)
    similarity = topic_similarity([*(t.content for t in targets), *(p.text for p in passages)],
                                  [*(t.vector for t in targets), *(p.vector for p in passages)],
                                  first_row=len(targets))
    probe = _Probe(scope, rows, passages, targets, neighbours or rows, foreseen, policy.search)
    limits = _Limits()
    for last in [False] * (PLANNING_ROUNDS - 1) + [True]:
        placement = _placed(passages, targets, similarity, limits, limit)
        lost = probe.lost(placement)
        if not lost:
            break
        limits.tighten(placement, [i for i, p in enumerate(passages) if lost & set(probe.episodes_of(p))],
                       [h for h, episodes in probe.earlier.items() if lost & set(episodes)], last=last)
    else:
        placement = _placed(passages, targets, similarity, limits, limit)  # what the last plan lost: alone
    homes, texts = placement.homes, placement.texts
    gained = {home: [n for p, h in zip(passages, homes, strict=True) if h == home for n in p.numbers]
              for home in homes}
    grown, opened = sorted(h for h in gained if h < len(targets)), sorted(h for h in gained if h >= len(targets))
    return PassagePlan(
        passages=passages, new=[Passage(texts[h], gained[h]) for h in opened],
        growths=[Growth(targets[h], texts[h], gained[h]) for h in grown],
        homes=[(True, grown.index(h)) if h < len(targets) else (False, opened.index(h)) for h in homes],
        vectors=probe.vectors)


PLANNING_ROUNDS = 6  # plans probed per call; what the last one loses is placed alone, unprobed
PACKING_TRIES = 2  # packings a passage may lose episodes in before it stays out of packing


@dataclass(frozen=True)
class _Placement:
    homes: list[int]  # per condensed passage: an index into the targets, then into the passages opened
    texts: list[str]  # per home: its text ("" for none)
    unpacked: list[int]  # per condensed passage: its home before packing
    moves: dict[int, int]  # packing: home → the home it joined

    def packed(self, i: int) -> bool:
        return self.unpacked[i] in self.moves

    def taking(self, i: int) -> bool:
        return self.unpacked[i] in self.moves.values()


@dataclass
class _Limits:
    """What a call's next plan may no longer do, learnt from the episodes the earlier plans lost."""

    refused: set[tuple[int, int]] = field(default_factory=set)  # (home, home it may not join by packing)
    losses: dict[int, int] = field(default_factory=dict)  # condensed passage → plans that lost one of its episodes
    closed: set[int] = field(default_factory=set)  # earlier passages (targets) left as they are

    @property
    def unpacked(self) -> set[int]:
        return {i for i, n in self.losses.items() if n >= PACKING_TRIES}

    @property
    def alone(self) -> set[int]:
        return {i for i, n in self.losses.items() if n > PACKING_TRIES}

    def tighten(self, placement: _Placement, losing: list[int], earlier: list[int], *, last: bool) -> None:
        """A packing that lost an episode is not tried again; a passage that lost episodes in PACKING_TRIES
        packings stays out of packing, and one that lost one otherwise, once more, or in the `last` plan goes
        alone (grows nothing, shares with nothing); an earlier passage whose own episode was lost stays as it is."""
        for i in losing:
            home = placement.unpacked[i]
            if placement.packed(i):
                self.refused.add((home, placement.moves[home]))
            elif placement.taking(i):
                self.refused.update((small, home) for small, into in placement.moves.items() if into == home)
            if last or not (placement.packed(i) or placement.taking(i)):
                self.losses[i] = PACKING_TRIES
            self.losses[i] = self.losses.get(i, 0) + 1
        self.closed.update(earlier)


def _placed(passages: Sequence[Passage], targets: Sequence[PassageRow], similarity: np.ndarray,
            limits: _Limits, limit: int) -> _Placement:
    """Each condensed passage's home and every home's text: grown into an earlier passage of its topic with room,
    else opened and shared by the call's later ones of its topic (`fold_into`); then the opened ones packed whole
    into one another or into an earlier passage with room (`pack_passages`), within `limits` and `limit`
    characters."""
    opened = len(targets)
    similarity = similarity.copy()
    for i in limits.alone:
        similarity[i, :] = 0.0
        similarity[:, opened + i] = 0.0
    similarity[:, sorted(limits.closed)] = 0.0
    homes, texts = fold_into([p.text for p in passages], similarity, [t.content for t in targets], limit=limit)
    apart = {*limits.closed, *(opened + i for i in limits.alone), *(homes[i] for i in limits.unpacked)}
    moves = pack_passages(texts, limit=limit, settled=opened, apart=apart, refused=limits.refused)
    for small, home in moves.items():
        texts[home], texts[small] = appended(texts[home], texts[small]), ""
    return _Placement([moves.get(h, h) for h in homes], texts, homes, moves)


class _Probe:
    """The episodes a plan of the call would lose to search: its own, and those of the earlier passages the plan
    changes. The planned texts are embedded once (the call writes with these vectors)."""

    def __init__(self, scope: ReflectionScope, rows: Sequence[MemoryRow], passages: Sequence[Passage],
                 targets: Sequence[PassageRow], neighbours: Sequence[MemoryRow], foreseen: Sequence[Planned],
                 search: SearchPolicy) -> None:
        self.rows, self.passages, self.targets, self.foreseen = rows, passages, targets, foreseen
        self.findability = Findability(tenant_id=scope.tenant_id, user_id=scope.user_id, search=search)
        self.frequency = document_frequency(r.content for r in neighbours)
        self.queries = self._queried((r.id, r.content) for r in rows if not r.is_semantic)
        self.earlier: dict[int, list[uuid.UUID]] = {}  # target index → the episodes it cites (read once)
        self.earlier_queries: dict[uuid.UUID, str] = {}
        self.vectors: dict[str, Vector | None] = {}

    def episodes_of(self, passage: Passage) -> list[uuid.UUID]:
        return [self.rows[n - 1].id for n in passage.numbers if not self.rows[n - 1].is_semantic]

    def lost(self, placement: _Placement) -> set[uuid.UUID]:
        cites: dict[int, set[uuid.UUID]] = {}
        for passage, home in zip(self.passages, placement.homes, strict=True):
            cites.setdefault(home, set()).update(self.episodes_of(passage))
        changed = [h for h in cites if h < len(self.targets)]
        self._read_earlier(changed)
        texts = placement.texts
        wanted = [texts[h] for h in cites]
        self.vectors.update(zip(wanted, embed_texts_reusing(wanted, self.vectors), strict=True))
        planned = [Planned(self.targets[h].id, texts[h], self.vectors[texts[h]], frozenset(ids),
                           replaces=self.targets[h].content) if h < len(self.targets) else
                   Planned(uuid.uuid4(), texts[h], self.vectors[texts[h]], frozenset(ids)) for h, ids in cites.items()]
        earlier = {e for h in changed for e in self.earlier[h]}
        mixed = {*(e for i, p in enumerate(self.passages) if placement.packed(i) or placement.taking(i)
                   for e in self.episodes_of(p)),
                 *(e for h in set(placement.moves.values()) if h < len(self.targets) for e in self.earlier[h])}
        queries = {**self.queries, **{e: q for e, q in self.earlier_queries.items() if e in earlier}}
        gone = [*(r.id for r in self.rows if not r.is_semantic), *(e for p in self.foreseen for e in p.cites)]
        return self.findability.lost(queries, gone=gone, planned=[*planned, *self.foreseen], mixed=mixed)

    def _read_earlier(self, changed: list[int]) -> None:
        unread = [h for h in changed if h not in self.earlier]
        cited = cited_episodes([self.targets[h].id for h in unread])
        for h in unread:
            self.earlier[h] = [e for e, _ in cited[self.targets[h].id]]
            self.earlier_queries.update(self._queried(cited[self.targets[h].id]))

    def _queried(self, episodes: Iterable[tuple[uuid.UUID, str]]) -> dict[uuid.UUID, str]:
        return {e: q for e, content in episodes for q in [canary_query(content, self.frequency)] if q}


def foreseen_passages(rows: Sequence[MemoryRow], limit: int) -> list[Planned]:
    """What a later call of the run is expected to write: its episodes condensed by topic, not packed (the way
    its passages would compete hardest with the others for a search), each with its episodes' mean vector."""
    passages = condensed_passages(rows, memory_vectors([r.id for r in rows]), limit)
    return [Planned(uuid.uuid4(), p.text, None if p.vector is None else p.vector.tolist(),
                    frozenset(rows[n - 1].id for n in p.numbers if not rows[n - 1].is_semantic)) for p in passages]


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
