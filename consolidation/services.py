"""Writes shared by every job: the ledger and the one place where a memory's state changes."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from consolidation.models import LedgerEntry, SessionEnd
from zeromem.models import Memory
from zeromem.transitions import (
    ARCHIVED,
    CONSOLIDATED,
    RAW,
    UNRESTORABLE_ARCHIVE_REASONS,
    TransitionRefused,
    check_transition,
    transition_for,
)


def ledger_write(*, tenant_id: int, action: str, actor: str, run_id: uuid.UUID | None = None, user_id: str = "",
                 memory_ids: Sequence[uuid.UUID | str] = (), inputs: dict[str, Any] | None = None,
                 outputs: dict[str, Any] | None = None, reason: str = "", scores: dict[str, Any] | None = None,
                 undoable: bool = False) -> LedgerEntry:
    return LedgerEntry.objects.create(
        tenant_id=tenant_id, run_id=run_id, action=action, actor=actor, user_id=user_id,
        memory_ids=[str(i) for i in memory_ids], inputs=inputs or {}, outputs=outputs or {}, reason=reason,
        scores=scores or {}, undoable=undoable)


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


__all__ = ["RAW", "CONSOLIDATED", "ARCHIVED", "TransitionRefused", "ledger_write", "memory_transition"]


def memory_feedback(*, tenant_id: int, memory_id: uuid.UUID, useful: bool, actor: str, step: float) -> float:
    """Move the memory's reward a `step` share of the way towards +1 (useful) or −1 (not): bounded in [−1, 1],
    big moves early, small ones once it is settled. Consolidation reads it into stability. Returns the new
    reward; raises Memory.DoesNotExist for a memory outside the tenant."""
    target = 1.0 if useful else -1.0
    with transaction.atomic():
        updated = Memory.objects.filter(tenant_id=tenant_id, id=memory_id).update(
            reward_score=F("reward_score") + step * (target - F("reward_score")))
        if not updated:
            raise Memory.DoesNotExist(f"memory {memory_id} does not exist in this tenant")
        memory = Memory.objects.get(id=memory_id)
        ledger_write(tenant_id=tenant_id, action="feedback", actor=actor, user_id=memory.user_id,
                     memory_ids=[memory_id], inputs={"useful": useful},
                     outputs={"reward_score": round(memory.reward_score, 4)}, reason="agent feedback")
    return float(memory.reward_score)


def session_end_record(*, tenant_id: int, user_id: str, session_id: str) -> bool:
    """Record that a session ended; True only the first time (the caller enqueues the pass then)."""
    _, created = SessionEnd.objects.get_or_create(tenant_id=tenant_id, user_id=user_id, session_id=session_id)
    return created
