"""Undo of a whole run through its ledger (the retrieval safety net's remedy, issue 9).

The run's ledger rows are compensated newest first, each in its own transaction with its own ledger row and
event: a merge that created a semantic memory is unmerged; a merge into an existing semantic memory puts
the memory's earlier fields back and gives the members back; a supersede is restored; a flagged
contradiction is withdrawn; a reflection call retracts what it created, takes the added sources off what it
corroborated, shrinks the passages it grew back to what they said and gives the episodes back; a profile update
restores the snapshot it kept; an extraction call puts kinds and entities back. A row that cannot be compensated
(a later change depends on it) is reported, never forced.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction

from consolidation.corrections.undo import UndoRefused, memory_restore, memory_unmerge
from consolidation.jobs.passages import passage_shrink
from consolidation.ledger import ledger_write, memory_transition, profile_restore_record
from consolidation.models import LedgerEntry
from profiles.services import ProfileChangedSince, profile_restore
from zeromem.core.adapters.embeddings import embed_texts
from zeromem.core.domain.transitions import UNDONE, TransitionRefused
from zeromem.core.events import event_emit
from zeromem.core.services import content_hash
from zeromem.models import Memory, MemoryRelation, MemorySource, MemoryState, MemoryType, RelationType


@dataclass
class RevertResult:
    undone: int = 0
    refused: list[str] = field(default_factory=list)


def run_revert(*, run_id: uuid.UUID, actor: str, reason: str) -> RevertResult:
    result = RevertResult()
    entries = (LedgerEntry.objects.filter(run_id=run_id, undone_by__isnull=True)
               .exclude(action__startswith="transition.").order_by("-id"))
    for entry in entries:
        compensate = COMPENSATIONS.get(entry.action)
        if compensate is None:
            continue
        try:
            with transaction.atomic():
                compensate(entry, actor, reason)
            result.undone += 1
        except TransitionRefused as exc:
            result.refused.append(f"{entry.action} #{entry.id}: {exc}")
    return result


def _ids(values: list[str]) -> list[uuid.UUID]:
    return [uuid.UUID(str(v)) for v in values]


def _mark_undone(entry: LedgerEntry, by: LedgerEntry) -> None:
    LedgerEntry.objects.filter(pk=entry.pk).update(undone_by=by)


def _merge(entry: LedgerEntry, actor: str, reason: str) -> None:
    semantic_id = uuid.UUID(entry.outputs["semantic_id"])
    if entry.outputs.get("created"):
        memory_unmerge(tenant_id=entry.tenant_id, semantic_id=semantic_id, actor=actor, reason=reason)
        return
    before = entry.inputs.get("base_before")
    if not before:
        raise UndoRefused("this merge kept no snapshot of the memory it updated")
    base = Memory.objects.select_for_update().filter(id=semantic_id, state=MemoryState.RAW).first()
    if base is None:
        raise UndoRefused(f"semantic memory {semantic_id} is no longer active")
    members = _ids([m["id"] for m in entry.inputs["members"]])
    merged_content = base.content
    for name, value in before.items():
        setattr(base, name, datetime.fromisoformat(value) if name == "valid_from" and value else value)
    base.content_hash, base.embedding = content_hash(base.content), embed_texts([base.content])[0]
    base.save()
    MemorySource.objects.filter(memory=base, source_memory_id__in=members).delete()
    memory_transition(tenant_id=entry.tenant_id, memory_ids=members, operation="unmerge", actor=actor,
                      reason=reason)
    _mark_undone(entry, ledger_write(
        tenant_id=entry.tenant_id, action="unmerge", actor=actor, user_id=entry.user_id,
        memory_ids=[semantic_id, *members], reason=reason,
        inputs={"semantic_id": str(semantic_id), "content": merged_content},
        outputs={"restored": [str(m) for m in members], "reverted_to": base.content}))
    event_emit(event="memory.unmerged", tenant_id=entry.tenant_id,
               data={"semantic_id": str(semantic_id), "restored_ids": [str(m) for m in members]})


def _supersede(entry: LedgerEntry, actor: str, reason: str) -> None:
    memory_restore(tenant_id=entry.tenant_id, memory_id=uuid.UUID(entry.inputs["older"]["id"]), actor=actor,
                   reason=reason)
    _profile_items_back(entry, actor, reason)


def _profile_items_back(entry: LedgerEntry, actor: str, reason: str) -> None:
    """The profile items a supersede or a retired claim took along, back (unless undone already)."""
    for linked in LedgerEntry.objects.filter(id__in=entry.outputs.get("profile_entries", []),
                                             undone_by__isnull=True):
        _profile(linked, actor, reason)


def _claim_retire(entry: LedgerEntry, actor: str, reason: str) -> None:
    """The memory back whole: its remainder unmerged, its retired claims retracted (history that an undo took
    back is no history)."""
    memory_unmerge(tenant_id=entry.tenant_id, semantic_id=uuid.UUID(entry.outputs["remainder_id"]), actor=actor,
                   reason=reason)
    _profile_items_back(entry, actor, reason)
    claims = _ids(entry.outputs["claim_ids"])
    MemoryRelation.objects.filter(tenant_id=entry.tenant_id, to_memory_id__in=claims,
                                  relation_type=RelationType.SUPERSEDES).delete()
    Memory.objects.filter(tenant_id=entry.tenant_id, id__in=claims, state=MemoryState.ARCHIVED).update(
        archive_reason=UNDONE, superseded_by=None, valid_to=None)
    _mark_undone(entry, ledger_write(tenant_id=entry.tenant_id, action="claim.restore", actor=actor,
                                     user_id=entry.user_id, memory_ids=entry.memory_ids, reason=reason,
                                     outputs={"retracted": [str(c) for c in claims]}))


def _uninformative(entry: LedgerEntry, actor: str, reason: str) -> None:
    ids = _ids(entry.memory_ids)
    memory_transition(tenant_id=entry.tenant_id, memory_ids=ids, operation="restore", actor=actor, reason=reason)
    _mark_undone(entry, ledger_write(tenant_id=entry.tenant_id, action="restore", actor=actor, user_id=entry.user_id,
                                     memory_ids=ids, reason=reason, inputs={"archive_reason": "uninformative"}))
    for memory_id in ids:
        event_emit(event="memory.restored", tenant_id=entry.tenant_id,
                   data={"memory_id": str(memory_id), "previous_archive_reason": "uninformative"})


def _contradiction(entry: LedgerEntry, actor: str, reason: str) -> None:
    older, newer = entry.inputs["older"]["id"], entry.inputs["newer"]["id"]
    MemoryRelation.objects.filter(tenant_id=entry.tenant_id, from_memory_id=newer, to_memory_id=older,
                                  relation_type=RelationType.CONTRADICTS).delete()
    _mark_undone(entry, ledger_write(tenant_id=entry.tenant_id, action="contradiction.withdrawn", actor=actor,
                                     user_id=entry.user_id, memory_ids=[older, newer], reason=reason))


def _reflection(entry: LedgerEntry, actor: str, reason: str) -> None:
    created = _ids(entry.outputs.get("created_ids", []))
    sent = _ids([s["id"] for s in entry.inputs["sent"]])
    later = MemorySource.objects.filter(memory_id__in=created).exclude(source_memory_id__in=sent)
    if later.exists():  # a later call grew a passage this one wrote, or cited its episodes from it
        raise UndoRefused("a later reflection call added to a passage this call wrote; undo that one first")
    types = dict(Memory.objects.filter(id__in=sent).values_list("id", "memory_type"))
    alone = set(_ids(entry.outputs.get("said_alone", [])))  # read but left active: nothing to unmerge
    episodes = [m for m in sent if m in types and types[m] != MemoryType.SEMANTIC and m not in alone]
    memory_transition(tenant_id=entry.tenant_id, memory_ids=created, operation="retract", actor=actor,
                      reason=reason)
    MemorySource.objects.filter(memory_id__in=created).delete()
    for before in entry.outputs.get("corroborated", []):
        MemorySource.objects.filter(memory_id=before["id"], source_memory_id__in=before["added_source_ids"]).delete()
        Memory.objects.filter(id=before["id"]).update(metadata=before["metadata"], confidence=before["confidence"],
                                                      corroboration_count=before["corroboration_count"])
    for before in entry.outputs.get("grown", []):
        passage_shrink(before)
    if episodes:
        memory_transition(tenant_id=entry.tenant_id, memory_ids=episodes, operation="unmerge", actor=actor,
                          reason=reason)
    Memory.objects.filter(id__in=[m for m in sent if types.get(m) == MemoryType.SEMANTIC or m in alone]
                          ).update(reflected_at=None)
    _mark_undone(entry, ledger_write(
        tenant_id=entry.tenant_id, action="unreflect", actor=actor, user_id=entry.user_id,
        memory_ids=[*created, *sent], reason=reason,
        outputs={"retracted": [str(m) for m in created], "restored": [str(m) for m in episodes]}))
    event_emit(event="memory.unmerged", tenant_id=entry.tenant_id,
               data={"semantic_ids": [str(m) for m in created], "restored_ids": [str(m) for m in episodes]})


def _profile(entry: LedgerEntry, actor: str, reason: str) -> None:
    snapshot = entry.inputs.get("previous")
    if snapshot is None:
        raise UndoRefused("this profile update kept no snapshot to restore")
    try:  # rows written before the fingerprint existed restore unconditionally, as they always did
        change = profile_restore(tenant_id=entry.tenant_id, profile_id=entry.inputs["profile_id"],
                                 snapshot=snapshot, expected_state=entry.outputs.get("state"))
    except ProfileChangedSince as exc:
        raise UndoRefused(str(exc)) from exc
    if change is not None:
        _mark_undone(entry, profile_restore_record(change=change, actor=actor, reason=reason))


def _extraction(entry: LedgerEntry, actor: str, reason: str) -> None:
    for change in entry.inputs.get("changes", []):
        memory = Memory.objects.select_for_update().filter(id=change["id"]).first()
        if memory is not None:
            added = set(change["added_entities"])
            Memory.objects.filter(id=memory.id).update(kind=change["kind"][0],
                                                       entities=[e for e in memory.entities if e not in added])
    for relation in entry.outputs.get("relations", []):
        MemoryRelation.objects.filter(tenant_id=entry.tenant_id, from_memory_id=relation["from"],
                                      to_memory_id=relation["to"], relation_type=relation["type"],
                                      metadata__run_id=str(entry.run_id)).delete()
    _mark_undone(entry, ledger_write(tenant_id=entry.tenant_id, action="extraction.revert", actor=actor,
                                     user_id=entry.user_id, memory_ids=entry.memory_ids, reason=reason))


COMPENSATIONS: dict[str, Callable[[LedgerEntry, str, str], Any]] = {
    "merge": _merge, "supersede": _supersede, "claim.retire": _claim_retire, "contradiction.flagged": _contradiction,
    "archive.uninformative": _uninformative,
    "reflection": _reflection,
    "profile.update": _profile, "extraction": _extraction,
}
