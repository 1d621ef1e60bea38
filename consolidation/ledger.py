"""Writes shared by every job: the ledger and the one place where a memory's state changes."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Required, TypedDict, Unpack

from django.db import transaction
from django.utils import timezone

from consolidation.models import LedgerEntry
from profiles.services import ProfileChange, profile_state
from zeromem.core.domain.transitions import (
    ARCHIVED,
    CONSOLIDATED,
    UNRESTORABLE_ARCHIVE_REASONS,
    TransitionRefused,
    check_transition,
    transition_for,
)
from zeromem.core.events import event_emit
from zeromem.models import Memory, MemoryState


class LedgerFields(TypedDict, total=False):
    tenant_id: Required[int]
    action: Required[str]
    actor: Required[str]
    run_id: uuid.UUID | None
    user_id: str
    memory_ids: Sequence[uuid.UUID | str]
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    reason: str
    scores: dict[str, Any]
    undoable: bool


def ledger_row(**fields: Unpack[LedgerFields]) -> LedgerEntry:
    """A ledger row not saved yet (`ledger_write_all` saves many in one statement)."""
    return LedgerEntry(**{**fields, "memory_ids": [str(i) for i in fields.get("memory_ids", ())]})


def ledger_write(**fields: Unpack[LedgerFields]) -> LedgerEntry:
    entry = ledger_row(**fields)
    entry.save()
    return entry


def ledger_write_all(rows: Sequence[LedgerEntry]) -> None:
    """Rows of `ledger_row`, in one INSERT: their ids keep the list's order (an undo walks them newest first)."""
    LedgerEntry.objects.bulk_create(rows, batch_size=500)


def semantic_snapshot(memory: Memory, names: Sequence[str]) -> dict[str, Any]:
    """Fields of a memory as JSON for a ledger row (what an undo writes back); datetimes as ISO strings."""
    values = {name: getattr(memory, name) for name in names if name not in {"embedding", "content_hash"}}
    return {name: value.isoformat() if isinstance(value, datetime) else value for name, value in values.items()}


def _fields_for(operation: str, to_state: str, now: datetime) -> dict[str, Any]:
    if to_state == CONSOLIDATED:
        return {"consolidated_at": now}
    if to_state == ARCHIVED:
        return {"archived_at": now, "archive_reason": operation}
    if operation == "unmerge":
        return {"consolidated_at": None}
    return {"archived_at": None, "archive_reason": "", "valid_to": None, "superseded_by": None}


def memory_transition(*, tenant_id: int, memory_ids: Sequence[uuid.UUID], operation: str, actor: str,
                      run_id: uuid.UUID | None = None, reason: str = "", now: datetime | None = None) -> int:
    """Move memories through one operation of the state table, all or none, with a ledger row.

    A conditional UPDATE (`state = from`) decides: when two workers race, exactly one moves each memory and
    the other gets TransitionRefused. Returns how many memories moved (= len(set(memory_ids))).
    """
    transition = transition_for(operation)
    ids = list(dict.fromkeys(memory_ids))
    now = now or timezone.now()
    with transaction.atomic():
        queryset = Memory.objects.filter(tenant_id=tenant_id, id__in=ids, state=transition.from_state)
        if operation == "restore":
            queryset = queryset.exclude(archive_reason__in=UNRESTORABLE_ARCHIVE_REASONS)
        moved = queryset.update(state=transition.to_state, updated_at=now,
                                **_fields_for(operation, transition.to_state, now))
        if moved != len(ids):
            raise TransitionRefused(_refusal_reason(tenant_id, ids, operation))
        ledger_write(tenant_id=tenant_id, action=f"transition.{operation}", actor=actor, run_id=run_id,
                     memory_ids=ids, reason=reason or transition.description,
                     inputs={"from": transition.from_state}, outputs={"to": transition.to_state},
                     undoable=operation in {"consolidate", "supersede", "decay", "retention"})
    return moved


def memories_lock_active(*, tenant_id: int, memory_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Lock these memories where still active, in id order (two writers locking overlapping sets never deadlock),
    for the rest of the transaction; returns their ids. A chunk of a job's writes leaves out what is not among
    them: another writer moved it first."""
    locked = (Memory.objects.select_for_update().filter(tenant_id=tenant_id, id__in=sorted(set(memory_ids)),
                                                        state=MemoryState.RAW).order_by("id"))
    return set(locked.values_list("id", flat=True))


def _refusal_reason(tenant_id: int, ids: list[uuid.UUID], operation: str) -> str:
    found = {m.id: m for m in Memory.objects.filter(tenant_id=tenant_id, id__in=ids)}
    for memory_id in ids:
        memory = found.get(memory_id)
        if memory is None:
            return f"memory {memory_id} does not exist in this tenant"
        try:
            check_transition(operation=operation, current_state=memory.state,
                             archive_reason=memory.archive_reason)
        except TransitionRefused as exc:
            return f"memory {memory_id}: {exc}"
    return f"another writer changed these memories first; {operation} was not applied"



def profile_change_record(*, change: ProfileChange, run_id: uuid.UUID | None, actor: str,
                          reason: str = "reflection merged new items into the profile") -> LedgerEntry:
    """The ledger row (with the snapshot an undo restores) and `profile.updated` after commit of a merge or of
    items retired."""
    profile = change.profile
    entry = ledger_write(
        tenant_id=profile.tenant_id, action="profile.update", actor=actor, run_id=run_id, user_id=profile.user_id,
        memory_ids=change.cited,
        inputs={"profile_id": profile.id, "entity_id": profile.entity_id or None, "namespace": profile.namespace,
                "previous_summary": change.previous["summary"], "previous": change.previous},
        outputs={"version": profile.version, "added": list(change.added), "folded": list(change.folded),
                 "retired": list(change.retired), "summary": profile.summary, "state": profile_state(profile)},
        reason=reason)
    _profile_event(change)
    return entry


def profile_restore_record(*, change: ProfileChange, actor: str, reason: str) -> LedgerEntry:
    """The ledger row and `profile.updated` after commit of a profile put back by an undo."""
    profile = change.profile
    entry = ledger_write(tenant_id=profile.tenant_id, action="profile.restore", actor=actor, user_id=profile.user_id,
                         inputs={"profile_id": profile.id}, outputs={"version": profile.version}, reason=reason)
    _profile_event(change)
    return entry


def _profile_event(change: ProfileChange) -> None:
    profile = change.profile
    event_emit(event="profile.updated", tenant_id=profile.tenant_id, data={
        "profile_id": profile.id, "user_id": profile.user_id, "entity_id": profile.entity_id or None,
        "namespace": profile.namespace, "version": profile.version, "added": len(change.added),
        "folded": len(change.folded)})
