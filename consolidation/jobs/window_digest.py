"""Window digests, written by a clustering run after its merges (ARCHITECTURE.md, "Jobs").

For each window the run read at least `ZEROMEMORY_WINDOW_DIGEST_MIN` memories of, one digest memory
(`consolidation/domain/digests.py`) cites every memory still active in the window — the run's merged memories, the
events left unmerged, an earlier digest — which move to consolidated in the same transaction: every event is
covered exactly once, transitively, and the digest's `source_count` is the window's event count. It is written as
a merge (one ledger row, undone by unmerging it).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from consolidation.domain.digests import Event, window_digest
from consolidation.ledger import ledger_write, memory_transition
from consolidation.models import ConsolidationRun
from consolidation.runs import run_fence
from consolidation.selectors import ClusteringRow, Loaded
from zeromem.core.adapters.embeddings import embed_texts
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.core.events import event_emit, semantic_event_data
from zeromem.core.services import content_hash, search_stats_add
from zeromem.models import Memory, MemorySource, MemoryState, MemoryType

DIGEST = "window_digest"
Scope = tuple[str, str | None, str]


def digest_scopes(loaded: Loaded) -> dict[Scope, list[ClusteringRow]]:
    """The windows this run read enough episodes of, with those episodes."""
    found: dict[Scope, list[ClusteringRow]] = defaultdict(list)
    for row, item in zip(loaded.rows, loaded.items, strict=True):
        namespace, entity_id, window = item.scope
        if window and not row.is_semantic:
            found[(str(namespace), entity_id if entity_id is None else str(entity_id), str(window))].append(row)
    return {scope: rows for scope, rows in found.items() if len(rows) >= settings.ZEROMEMORY_WINDOW_DIGEST_MIN}


def window_digests_write(*, run: ConsolidationRun, worker: str, tenant_id: int, loaded: Loaded) -> int:
    """One digest per qualifying window; a window whose memories another writer moved meanwhile is skipped."""
    written = 0
    semantic_read = [r.id for r in loaded.rows if r.is_semantic]
    for scope, events in digest_scopes(loaded).items():
        try:
            written += _write_one(run, worker, tenant_id, scope, [e.id for e in events] + semantic_read)
        except TransitionRefused:
            continue
    return written


def _members(tenant_id: int, user_id: str, scope: Scope, read: list[uuid.UUID]) -> list[Memory]:
    """The window's memories still active that this run may fold: those it read (never the current session or
    the recency window), and what it wrote from them."""
    namespace, entity_id, window = scope
    return list(Memory.objects.filter(tenant_id=tenant_id, user_id=user_id, namespace=namespace,
                                      entity_id=entity_id, window=window, state=MemoryState.RAW)
                .filter(Q(id__in=read) | Q(source_links__source_memory_id__in=read)).distinct()
                .order_by("created_at", "id"))


def _sentence(text: str) -> str:
    """An event line as a sentence, so the digest's statements stay apart ("… 613 ms. SEV2: …")."""
    text = text.strip()
    return text if text[-1:] in ".!?" else f"{text}."


def _statements_of(member: Memory) -> str:
    """What a member says; an earlier digest without its headline ("outage window, 50 events: …")."""
    if member.metadata.get("source_type") == DIGEST and ": " in member.content:
        return member.content.split(": ", 1)[1]
    return _sentence(member.content)


def _labels(tags: Sequence[str]) -> tuple[str, ...]:
    """What the headline generalises from: the tags, the window tag aside (extracted names are too noisy: "p99",
    "5 min")."""
    prefix = settings.ZEROMEMORY_WINDOW_TAG_PREFIX
    return tuple(t for t in tags if not (prefix and t.startswith(prefix)))


def _mean_event_importance(members: list[Memory]) -> float:
    """The mean importance of the events the members stand for (a merge's own importance is its loudest event's)."""
    episodes = [m.importance for m in members if m.memory_type != MemoryType.SEMANTIC]
    folded = MemorySource.objects.filter(memory__in=[m for m in members if m.memory_type == MemoryType.SEMANTIC],
                                         source__memory_type__in=(MemoryType.EPISODIC, MemoryType.WORKING))
    episodes += list(folded.values_list("source__importance", flat=True))
    return round(sum(episodes) / len(episodes), 4) if episodes else members[0].importance


def _covered(member: Memory) -> int:
    """How many events a member stands for: itself, or what its metadata says a semantic memory folded."""
    if member.memory_type != MemoryType.SEMANTIC:
        return 1
    return int(member.metadata.get("source_count", 1))


def _write_one(run: ConsolidationRun, worker: str, tenant_id: int, scope: Scope, read: list[uuid.UUID]) -> int:
    members = _members(tenant_id, run.user_id, scope, read)
    if len(members) < 2:
        return 0
    event_count = sum(_covered(m) for m in members)
    # What the members still say (a merge's text, an event left alone): never a statement this run retired.
    inputs = [Event(_statements_of(m), m.importance, (m.valid_from or m.created_at).date(), _labels(m.tags))
              for m in members]
    digest = window_digest(scope[2], inputs, event_count=event_count, limit=settings.ZEROMEMORY_MERGED_MAX_CHARS,
                           importance=_mean_event_importance(members))
    [vector] = embed_texts([digest.text])
    with transaction.atomic():
        run_fence(run_id=run.id, worker=worker)
        memory_transition(tenant_id=tenant_id, memory_ids=[m.id for m in members], operation="consolidate",
                          actor=f"run:{run.id}", run_id=run.id, reason="folded into the window's digest")
        memory = _create(tenant_id, run.user_id, scope, members, digest.text, digest.importance, vector,
                         event_count)
        ledger_write(tenant_id=tenant_id, action="merge", actor=f"run:{run.id}", run_id=run.id, user_id=run.user_id,
                     memory_ids=[m.id for m in members],
                     inputs={"members": [{"id": str(m.id), "content_hash": m.content_hash} for m in members],
                             "base": None, "base_content": None, "base_before": None},
                     outputs={"semantic_id": str(memory.id), "content": digest.text, "created": True},
                     reason=f"digest of the {scope[2]} window", scores={"size": len(members),
                                                                         "events": event_count}, undoable=True)
        event_emit(event="memory.semantic.updated", tenant_id=tenant_id,
                   data={"semantic_id": str(memory.id), "user_id": run.user_id, "created": True,
                         "source_ids": [str(m.id) for m in members], **semantic_event_data(memory)})
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
        activation=max(m.activation for m in members), access_count=sum(m.access_count for m in members),
        entities=list(dict.fromkeys(e for m in members for e in m.entities))[:50],
        tags=sorted({t for m in members for t in m.tags}),
        valid_from=max(m.valid_from or m.created_at for m in members),
        metadata={"source_type": DIGEST, "source_count": event_count})
    MemorySource.objects.bulk_create([MemorySource(memory=memory, source_id=m.id, source_memory_id=m.id,
                                                   source_content_hash=m.content_hash) for m in members])
    search_stats_add(memory_ids=[memory.id])
    return memory
