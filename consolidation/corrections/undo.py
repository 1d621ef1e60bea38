"""Undo: `unmerge` retracts a semantic memory and gives its members back; `restore` brings an archived
(superseded, decayed) memory back. Each writes a ledger row and a compensating event after commit, and is
refused, with the reason, when a later change depends on what it would undo."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import transaction

from consolidation.ledger import ledger_write, memory_transition
from consolidation.models import LedgerEntry
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.core.events import event_emit
from zeromem.models import Memory, MemoryRelation, MemorySource, MemoryState, MemoryType, RelationType


class UndoRefused(TransitionRefused):
    """The undo would break a later change (or needs something that is gone)."""


@dataclass(frozen=True)
class UnmergeResult:
    semantic_id: uuid.UUID
    restored: list[uuid.UUID]


def _unmerge_blockers(semantic: Memory, links: list[MemorySource]) -> str | None:
    if semantic.memory_type != MemoryType.SEMANTIC or not links:
        return "only a semantic memory with sources can be unmerged"
    if semantic.state != MemoryState.RAW:
        folded = MemorySource.objects.filter(source_memory_id=semantic.id).values_list("memory_id", flat=True)
        return (f"semantic memory is {semantic.state}" + (f"; it was folded into {list(folded)}: unmerge that first"
                                                          if folded else ""))
    if any(link.source_id is None for link in links):
        return "a source of this memory was deleted; unmerging would need it"
    states = {link.source.state for link in links}
    if states != {MemoryState.CONSOLIDATED}:
        return f"its sources are no longer all consolidated ({sorted(states)}); a later change depends on them"
    return None


def memory_unmerge(*, tenant_id: int, semantic_id: uuid.UUID, actor: str, reason: str = "") -> UnmergeResult:
    """1. refuse when a later change depends on the merge; 2. in one transaction: retract the semantic memory,
    move every source back to raw, remove the source links (kept in the ledger row), mark the merge ledger rows
    undone; 3. `memory.unmerged` after commit."""
    with transaction.atomic():
        semantic = Memory.objects.select_for_update().filter(tenant_id=tenant_id, id=semantic_id).first()
        if semantic is None:
            raise UndoRefused(f"memory {semantic_id} does not exist in this tenant")
        links = list(semantic.source_links.select_related("source"))
        blocker = _unmerge_blockers(semantic, links)
        if blocker:
            raise UndoRefused(blocker)
        sources = [link.source_memory_id for link in links]
        memory_transition(tenant_id=tenant_id, memory_ids=[semantic.id], operation="retract", actor=actor,
                          reason=reason or "unmerge")
        memory_transition(tenant_id=tenant_id, memory_ids=sources, operation="unmerge", actor=actor,
                          reason=reason or "unmerge")
        MemorySource.objects.filter(memory=semantic).delete()
        entry = ledger_write(tenant_id=tenant_id, action="unmerge", actor=actor, user_id=semantic.user_id,
                             memory_ids=[semantic.id, *sources], reason=reason,
                             inputs={"semantic_id": str(semantic.id), "content": semantic.content},
                             outputs={"restored": [str(s) for s in sources],
                                      "links": [{"source_memory_id": str(link.source_memory_id),
                                                 "source_content_hash": link.source_content_hash}
                                                for link in links]})
        LedgerEntry.objects.filter(action="merge", outputs__semantic_id=str(semantic.id),
                                   undone_by__isnull=True).update(undone_by=entry)
        event_emit(event="memory.unmerged", tenant_id=tenant_id,
                   data={"semantic_id": str(semantic.id), "restored_ids": [str(s) for s in sources]})
    return UnmergeResult(semantic_id=semantic.id, restored=sources)


def memory_restore(*, tenant_id: int, memory_id: uuid.UUID, actor: str, reason: str = "") -> Memory:
    """Bring an archived memory back to raw (never one an undo retracted); a supersede relation pointing at it
    is removed and recorded in the ledger. `memory.restored` after commit."""
    with transaction.atomic():
        memory = Memory.objects.select_for_update().filter(tenant_id=tenant_id, id=memory_id).first()
        if memory is None:
            raise UndoRefused(f"memory {memory_id} does not exist in this tenant")
        superseded_by = memory.superseded_by_id
        memory_transition(tenant_id=tenant_id, memory_ids=[memory.id], operation="restore", actor=actor,
                          reason=reason or "restore")
        relations = MemoryRelation.objects.filter(to_memory=memory, relation_type=RelationType.SUPERSEDES)
        removed = [str(r.from_memory_id) for r in relations]
        relations.delete()
        entry = ledger_write(tenant_id=tenant_id, action="restore", actor=actor, user_id=memory.user_id,
                     memory_ids=[memory.id], reason=reason,
                     inputs={"archive_reason": memory.archive_reason,
                             "superseded_by": str(superseded_by) if superseded_by else None},
                     outputs={"removed_supersedes_from": removed})
        LedgerEntry.objects.filter(action="supersede", memory_ids__0=str(memory.id),
                                   undone_by__isnull=True).update(undone_by=entry)
        event_emit(event="memory.restored", tenant_id=tenant_id,
                   data={"memory_id": str(memory.id), "previous_archive_reason": memory.archive_reason})
    memory.refresh_from_db()
    return memory
