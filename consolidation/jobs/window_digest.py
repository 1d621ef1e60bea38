"""Window digests, written by a clustering run after its merges (ARCHITECTURE.md, "Jobs").

A window (namespace, entity, window) the run read episodes of gets one digest memory
(`consolidation/domain/digests.py`) when the events its active memories stand for number at least the policy's
`clustering.window_digest_min`, or when it already has a digest. The digest cites every memory still active in the
window — the run's merged memories, the events left unmerged, the window's earlier digest — which move to
consolidated in the same transaction: every event is covered exactly once, transitively, and the digest's
`source_count` is the window's event count.

A later run's new events in a window that has a digest make the window's next digest, which folds the earlier one
(its statements, not its headline) with them: the window keeps one active digest, and unmerging the newest gives
the earlier digest and the new events back as they were. A digest never joins a cluster (`clustering_queryset`).
Each digest is written as a merge: one ledger row, undone by unmerging it.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from consolidation.domain.digests import SOURCE_TYPE as DIGEST
from consolidation.domain.digests import Event, mean_importance, window_digest
from consolidation.ledger import ledger_write, memory_transition
from consolidation.models import ConsolidationRun
from consolidation.runs import run_fence
from consolidation.selectors import Loaded
from zeromem.core.adapters.embeddings import embed_texts
from zeromem.core.domain.policy import Policy
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.core.events import event_emit, semantic_event_data
from zeromem.core.services import content_hash, search_stats_add
from zeromem.core.tasks import memories_parse_on_commit
from zeromem.models import Memory, MemorySource, MemoryState, MemoryType

Scope = tuple[str, str | None, str]
Events = dict[uuid.UUID, float | None]  # event id → its importance (None: deleted since)


def digest_scopes(loaded: Loaded) -> dict[Scope, list[uuid.UUID]]:
    """The windows this run read episodes of, with those episodes."""
    found: dict[Scope, list[uuid.UUID]] = defaultdict(list)
    for row, item in zip(loaded.rows, loaded.items, strict=True):
        namespace, entity_id, window = item.scope
        if window and not row.is_semantic:
            found[(str(namespace), entity_id if entity_id is None else str(entity_id), str(window))].append(row.id)
    return dict(found)


def window_digests_write(*, run: ConsolidationRun, worker: str, tenant_id: int, loaded: Loaded, policy: Policy
                         ) -> int:
    """One digest per window that qualifies under the run's `policy`; a window whose memories another writer moved
    meanwhile is skipped."""
    written = 0
    semantic_read = [r.id for r in loaded.rows if r.is_semantic]
    for scope, episodes in digest_scopes(loaded).items():
        try:
            written += _write_one(run, worker, tenant_id, scope, episodes + semantic_read, policy)
        except TransitionRefused:
            continue
    return written


def _members(tenant_id: int, user_id: str, scope: Scope, read: list[uuid.UUID]) -> list[Memory]:
    """The window's memories still active that this run may fold: those it read (never the current session or
    the recency window), what it wrote from them, and the window's digest."""
    namespace, entity_id, window = scope
    return list(Memory.objects.filter(tenant_id=tenant_id, user_id=user_id, namespace=namespace,
                                      entity_id=entity_id, window=window, state=MemoryState.RAW)
                .filter(Q(id__in=read) | Q(source_links__source_memory_id__in=read)
                        | Q(memory_type=MemoryType.SEMANTIC, metadata__contains={"source_type": DIGEST}))
                .distinct().order_by("created_at", "insertion_order"))


def _events_under(members: Sequence[Memory]) -> dict[uuid.UUID, Events]:
    """Per member, the events (episodic or working memories) it stands for, transitively: an event stands for
    itself, a semantic memory for the events under its sources, level by level (one query a level)."""
    under: dict[uuid.UUID, Events] = {m.id: {} for m in members}
    root_of = {m.id: m.id for m in members if m.memory_type == MemoryType.SEMANTIC}
    for member in members:
        if member.memory_type != MemoryType.SEMANTIC:
            under[member.id][member.id] = member.importance
    seen = set(root_of)
    while root_of:
        deeper: dict[uuid.UUID, uuid.UUID] = {}
        for node, source, kind, importance in MemorySource.objects.filter(memory_id__in=list(root_of)).values_list(
                "memory_id", "source_memory_id", "source__memory_type", "source__importance"):
            if kind != MemoryType.SEMANTIC:  # an event, or a source deleted since (its id is kept)
                under[root_of[node]][source] = importance
            elif source not in seen:
                seen.add(source)
                deeper[source] = root_of[node]
        root_of = deeper
    return under


def _is_digest(member: Memory) -> bool:
    return member.memory_type == MemoryType.SEMANTIC and member.metadata.get("source_type") == DIGEST


def _sentence(text: str) -> str:
    """An event line as a sentence, so the digest's statements stay apart ("… 613 ms. SEV2: …")."""
    text = text.strip()
    return text if text[-1:] in ".!?" else f"{text}."


def _statements_of(member: Memory) -> str:
    """What a member says; an earlier digest without its headline ("outage window, 50 events: …")."""
    if _is_digest(member) and ": " in member.content:
        return member.content.split(": ", 1)[1]
    return _sentence(member.content)


def _labels(tags: Sequence[str], prefix: str) -> tuple[str, ...]:
    """What the headline generalises from: the tags, the window tag aside (extracted names are too noisy: "p99",
    "5 min")."""
    return tuple(t for t in tags if not (prefix and t.startswith(prefix)))


def _loudest(member: Memory, events: Events) -> float:
    """What a member ranks by in the digest: the importance of the loudest event it stands for."""
    return max((i for i in events.values() if i is not None), default=member.importance)


def _write_one(run: ConsolidationRun, worker: str, tenant_id: int, scope: Scope, read: list[uuid.UUID],
               policy: Policy) -> int:
    members = _members(tenant_id, run.user_id, scope, read)
    under = _events_under(members)
    events: Events = {e: i for found in under.values() for e, i in found.items()}
    earlier = next((m for m in members if _is_digest(m)), None)
    if len(members) < 2 or (earlier is None and len(events) < policy.clustering.window_digest_min):
        return 0
    prefix = policy.clustering.window_tag_prefix
    # What the members still say (a merge's text, an event left alone): never a statement this run retired.
    inputs = [Event(_statements_of(m), _loudest(m, under[m.id]), (m.valid_from or m.created_at).date(),
                    _labels(m.tags, prefix)) for m in members]
    importance = mean_importance([i for i in events.values() if i is not None],
                                 fallback=max(m.importance for m in members))
    digest = window_digest(scope[2], inputs, event_count=len(events), limit=policy.merging.max_chars,
                           importance=importance)
    [vector] = embed_texts([digest.text])
    with transaction.atomic():
        run_fence(run_id=run.id, worker=worker)
        memory_transition(tenant_id=tenant_id, memory_ids=[m.id for m in members], operation="consolidate",
                          actor=f"run:{run.id}", run_id=run.id, reason="folded into the window's digest")
        memory = _create(tenant_id, run.user_id, scope, members, digest.text, digest.importance, vector,
                         len(events))
        ledger_write(tenant_id=tenant_id, action="merge", actor=f"run:{run.id}", run_id=run.id, user_id=run.user_id,
                     memory_ids=[m.id for m in members],
                     inputs={"members": [{"id": str(m.id), "content_hash": m.content_hash} for m in members],
                             "base": None, "base_content": None, "base_before": None,
                             "earlier_digest": str(earlier.id) if earlier else None},
                     outputs={"semantic_id": str(memory.id), "content": digest.text, "created": True},
                     reason=f"digest of the {scope[2]} window", scores={"size": len(members),
                                                                         "events": len(events)}, undoable=True)
        data = {"semantic_id": str(memory.id), "user_id": run.user_id, "created": True,
                "source_ids": [str(m.id) for m in members], **semantic_event_data(memory)}
        event_emit(event="memory.semantic.updated", tenant_id=tenant_id, data=data)
        event_emit(event="memory.merged", tenant_id=tenant_id, data=data)
    return 1


def _create(tenant_id: int, user_id: str, scope: Scope, members: list[Memory], text: str, importance: float,
            vector: list[float] | None, event_count: int) -> Memory:
    namespace, entity_id, window = scope
    memory = Memory.objects.create(
        tenant_id=tenant_id, user_id=user_id, namespace=namespace, entity_id=entity_id, window=window,
        memory_type=MemoryType.SEMANTIC, embedding=vector, created_at=timezone.now(), content=text,
        content_hash=content_hash(text), importance=importance, kind=members[0].kind,
        confidence=max(m.confidence for m in members),
        stability_score=sum((m.importance + m.reward_score) / 2 for m in members) / len(members),
        # At least as accessible as the most accessed member, and the members' reads carried over.
        activation=max(m.activation for m in members), access_count=sum(m.access_count for m in members),
        entities=list(dict.fromkeys(e for m in members for e in m.entities))[:50],
        tags=sorted({t for m in members for t in m.tags}),
        valid_from=max(m.valid_from or m.created_at for m in members),
        metadata={"source_type": DIGEST, "source_count": event_count})
    MemorySource.objects.bulk_create([MemorySource(memory=memory, source_id=m.id, source_memory_id=m.id,
                                                   source_content_hash=m.content_hash) for m in members])
    search_stats_add(memory_ids=[memory.id])
    memories_parse_on_commit([memory.id])
    return memory
