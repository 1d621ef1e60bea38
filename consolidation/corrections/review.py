"""The review queue (issue 9): what automated consolidation changed, for an operator to approve, reject or
resolve. Every decision is a ledger row naming the acting admin user, linked from the change it decides.

- a merge: approve, or reject = unmerge (a merge into an existing semantic memory puts its earlier text back);
- a supersede: approve, or reject = restore the retired statement;
- a retired claim: approve, or reject = the memory back whole (its remainder unmerged, the claim retracted);
- small talk archived: approve, or reject = the memories back to active;
- a flagged contradiction: resolve = both statements stay true (the flag is cleared).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from consolidation.corrections.revert import COMPENSATIONS
from consolidation.corrections.undo import UndoRefused
from consolidation.ledger import ledger_write
from consolidation.models import LedgerEntry
from zeromem.models import Memory, MemoryRelation, RelationType

REVIEWABLE = ("merge", "supersede", "claim.retire", "archive.uninformative", "contradiction.flagged")
DECISIONS = {"merge": ("approve", "reject"), "supersede": ("approve", "reject"), "claim.retire": ("approve", "reject"),
             "archive.uninformative": ("approve", "reject"), "contradiction.flagged": ("resolve",)}
TITLES = {"merge": ("Sources", "Semantic memory"), "supersede": ("Retired statement", "Newer statement"),
          "claim.retire": ("The memory and its retired claims", "Newer statements, and what the memory still says"),
          "archive.uninformative": ("Archived as small talk", "Nothing replaces them"),
          "contradiction.flagged": ("Older statement", "Newer statement")}


class ReviewRefused(UndoRefused):
    """The decision cannot be applied (already decided, not offered for this change, or the undo is refused)."""


def review_queue(*, tenant_id: int | None = None, action: str | None = None, days: int = 30) -> QuerySet[LedgerEntry]:
    """Changes of the last `days` nobody has decided or undone yet, newest first."""
    entries = LedgerEntry.objects.filter(action__in=[action] if action else REVIEWABLE, undone_by__isnull=True,
                                         reviewed_by__isnull=True,
                                         created_at__gte=timezone.now() - timedelta(days=days))
    if tenant_id is not None:
        entries = entries.filter(tenant_id=tenant_id)
    return entries.select_related("tenant", "run").order_by("-created_at")


@dataclass(frozen=True)
class Side:
    title: str
    memories: list[dict[str, Any]]  # id, content, state, created_at


@dataclass(frozen=True)
class ReviewItem:
    entry: LedgerEntry
    sources: Side
    result: Side
    decisions: tuple[str, ...]

    @property
    def scores(self) -> dict[str, Any]:
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in self.entry.scores.items()}


def review_items(entries: Sequence[LedgerEntry]) -> list[ReviewItem]:
    """Each change with its sources beside what replaced them (one query for every memory on the page)."""
    wanted = {i for e in entries for i in _sides(e)[0] + _sides(e)[1]}
    found = {str(m["id"]): m for m in Memory.objects.filter(id__in=wanted)
             .values("id", "content", "state", "created_at", "memory_type")}
    items = []
    for entry in entries:
        left, right = _sides(entry)
        titles = TITLES[entry.action]
        items.append(ReviewItem(entry, Side(titles[0], [_shown(i, found) for i in left]),
                                Side(titles[1], [_shown(i, found) for i in right]), DECISIONS[entry.action]))
    return items


def _sides(entry: LedgerEntry) -> tuple[list[str], list[str]]:
    if entry.action == "merge":
        return [m["id"] for m in entry.inputs.get("members", [])], [entry.outputs["semantic_id"]]
    if entry.action == "archive.uninformative":
        return list(entry.memory_ids), []
    if entry.action == "claim.retire":
        newer = list(dict.fromkeys(c["newer"]["id"] for c in entry.inputs["claims"]))
        return [entry.inputs["older"]["id"], *entry.outputs["claim_ids"]], [*newer, entry.outputs["remainder_id"]]
    return [entry.inputs["older"]["id"]], [entry.inputs["newer"]["id"]]


def _shown(memory_id: str, found: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return found.get(memory_id) or {"id": memory_id, "content": "(deleted)", "state": "deleted"}


def review_decide(*, entry_id: int, decision: str, actor: str, note: str = "",
                  tenant_id: int | None = None) -> LedgerEntry:
    """Apply and record one decision; refused with the reason when it cannot be applied."""
    with transaction.atomic():
        entries = LedgerEntry.objects.select_for_update().filter(pk=entry_id)
        entry = (entries if tenant_id is None else entries.filter(tenant_id=tenant_id)).first()
        if entry is None or entry.action not in DECISIONS:
            raise ReviewRefused(f"ledger entry {entry_id} is not a change to review")
        if decision not in DECISIONS[entry.action]:
            raise ReviewRefused(f"{decision!r} is not offered for a {entry.action}; "
                                f"choose {' or '.join(DECISIONS[entry.action])}")
        if entry.reviewed_by_id or entry.undone_by_id:
            raise ReviewRefused(f"this {entry.action} was already {'decided' if entry.reviewed_by_id else 'undone'}")
        if decision == "reject":
            COMPENSATIONS[entry.action](entry, actor, note or "rejected in review")
        elif decision == "resolve":
            _resolve_contradiction(entry, note)
        record = ledger_write(tenant_id=entry.tenant_id, action=f"review.{decision}", actor=actor,
                              user_id=entry.user_id, memory_ids=entry.memory_ids, reason=note,
                              inputs={"entry_id": entry.id, "action": entry.action})
        LedgerEntry.objects.filter(pk=entry.pk).update(reviewed_by=record)
    return record


def _resolve_contradiction(entry: LedgerEntry, note: str) -> None:
    older, newer = entry.inputs["older"]["id"], entry.inputs["newer"]["id"]
    for relation in MemoryRelation.objects.filter(tenant_id=entry.tenant_id, from_memory_id=newer,
                                                  to_memory_id=older, relation_type=RelationType.CONTRADICTS):
        relation.flagged = False
        relation.metadata = {**relation.metadata, "resolution": note or "both stay true"}
        relation.save(update_fields=["flagged", "metadata"])
