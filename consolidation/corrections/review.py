"""The review queue (issue 9): what automated consolidation changed, for an operator to approve, reject or
resolve. Every decision is a ledger row naming the acting admin user, linked from the change it decides.

- a merge: approve, or reject = unmerge (a merge into an existing semantic memory puts its earlier text back);
- a supersede: approve, or reject = restore the retired statement;
- a retired claim: approve, or reject = the memory back whole (its remainder unmerged, the claim retracted);
- small talk archived: approve, or reject = the memories back to active;
- a flagged contradiction: resolve = both statements stay true (the flag is cleared).

A run the omission check held (`ConsolidationRun.held`) is decided as a whole: rejecting it undoes every change of
the run through its ledger (`run_revert`), approving it approves its changes; either releases it, with a ledger row
naming the operator. Once each of its changes is decided one by one, it is released too.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from consolidation.corrections.revert import COMPENSATIONS, run_revert
from consolidation.corrections.undo import UndoRefused
from consolidation.domain.sentence_diff import SentenceChange, sentence_diff
from consolidation.ledger import ledger_write
from consolidation.models import ConsolidationRun, LedgerEntry
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.models import Memory, MemoryRelation, RelationType

SAME_SENTENCE = 0.8  # similarity from which two sentences are one statement reworded (e.g. a date anchored)
REVIEWABLE = ("merge", "supersede", "claim.retire", "archive.uninformative", "contradiction.flagged")
DECISIONS = {"merge": ("approve", "reject"), "supersede": ("approve", "reject"), "claim.retire": ("approve", "reject"),
             "archive.uninformative": ("approve", "reject"), "contradiction.flagged": ("resolve",)}
TITLES = {"merge": ("Sources", "Semantic memory"), "supersede": ("Retired statement", "Newer statement"),
          "claim.retire": ("The memory and its retired claims", "Newer statements, and what the memory still says"),
          "archive.uninformative": ("Archived as small talk", "Nothing replaces them"),
          "contradiction.flagged": ("Older statement", "Newer statement")}


class ReviewRefused(UndoRefused):
    """The decision cannot be applied (already decided, not offered for this change, or the undo is refused)."""


@dataclass(frozen=True)
class ReviewFilter:
    """Which undecided changes to show; None = any. Dates are UTC days, both ends included."""

    tenant_id: int | None = None
    user_id: str | None = None
    action: str | None = None
    run_id: uuid.UUID | None = None
    since: date | None = None
    until: date | None = None
    held: bool = False  # only the changes of runs the omission check holds


def review_queue(*, scope: ReviewFilter = ReviewFilter(), days: int = 30) -> QuerySet[LedgerEntry]:
    """Changes nobody has decided or undone yet, newest first: from `scope.since` (else the last `days`)."""
    since = scope.since or (timezone.now() - timedelta(days=days)).date()
    entries = LedgerEntry.objects.filter(action__in=[scope.action] if scope.action else REVIEWABLE,
                                         undone_by__isnull=True, reviewed_by__isnull=True, created_at__date__gte=since)
    wanted = {"tenant_id": scope.tenant_id, "user_id": scope.user_id, "run_id": scope.run_id,
              "created_at__date__lte": scope.until}
    entries = entries.filter(**{name: value for name, value in wanted.items() if value is not None})
    if scope.held:
        entries = entries.filter(run__held=True)
    return entries.select_related("tenant", "run").order_by("-created_at")


def review_states(*, run_id: uuid.UUID) -> dict[str, int]:
    """The run's reviewable changes by where they stand: 'pending', 'undone' (by a revert or the safety net) or
    the decision recorded ('review.approve', 'review.reject', 'review.resolve')."""
    states: dict[str, int] = {}
    for decision, undone in LedgerEntry.objects.filter(run_id=run_id, action__in=REVIEWABLE).values_list(
            "reviewed_by__action", "undone_by_id"):
        state = decision or ("undone" if undone else "pending")
        states[state] = states.get(state, 0) + 1
    return states


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
    diff: list[SentenceChange]  # empty for a flagged contradiction: it changed nothing

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
                                Side(titles[1], [_shown(i, found) for i in right]), DECISIONS[entry.action],
                                sentence_diff(*_texts(entry, found), similar=SAME_SENTENCE)))
    return items


def _texts(entry: LedgerEntry, found: dict[str, dict[str, Any]]) -> tuple[list[str], list[str], list[str]]:
    """(what the change read, what it wrote, what it retired) as texts, for the sentence diff."""
    inputs, outputs = entry.inputs, entry.outputs
    if entry.action == "merge":
        members = [_shown(m["id"], found)["content"] for m in inputs.get("members", [])]
        return [*([inputs["base_content"]] if inputs.get("base_content") else []), *members], [outputs["content"]], []
    if entry.action == "supersede":
        return [inputs["older"]["content"]], [inputs["newer"]["content"]], [inputs["older"]["content"]]
    if entry.action == "claim.retire":
        return [inputs["older"]["content"]], [outputs["remainder"]], [c["sentence"] for c in inputs["claims"]]
    if entry.action == "archive.uninformative":
        return [m["content"] for m in inputs.get("memories", [])], [], []
    return [], [], []


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
        if entry.run_id and not review_queue(scope=ReviewFilter(run_id=entry.run_id, since=date.min)).exists():
            held_run_release(run_id=entry.run_id, actor=actor, note=note or "each of its changes decided")
    return record


@dataclass(frozen=True)
class Decided:
    applied: int
    refused: list[str]  # "#<entry id> <action>: <why>" for each change the decision could not be applied to


def review_decide_many(*, entries: Sequence[LedgerEntry], decision: str, actor: str, note: str = "") -> Decided:
    """The same decision for each change, each in its own transaction (one refused change leaves the others
    decided). Changes that do not offer the decision (a flagged contradiction has no approve) are refused."""
    applied, refused = 0, []
    for entry in entries:
        try:
            review_decide(entry_id=entry.id, decision=decision, actor=actor, note=note)
            applied += 1
        except TransitionRefused as exc:  # undo refusals included
            refused.append(f"#{entry.id} {entry.action}: {exc}")
    return Decided(applied, refused)


def review_decide_runs(*, run_ids: Sequence[uuid.UUID], decision: str, actor: str, note: str = "") -> Decided:
    """The decision for every undecided change of the runs that offers it, newest first: a reject undoes later
    changes before the earlier ones they may build on. A held run is rejected whole (`held_run_reject`)."""
    held = set(ConsolidationRun.objects.filter(id__in=run_ids, held=True).values_list("id", flat=True))
    decided = [held_run_reject(run_id=run_id, actor=actor, note=note) for run_id in run_ids
               if decision == "reject" and run_id in held]
    entries = [entry for run_id in run_ids if not (decision == "reject" and run_id in held)
               for entry in review_queue(scope=ReviewFilter(run_id=run_id, since=date.min))
               if decision in DECISIONS[entry.action]]
    decided.append(review_decide_many(entries=entries, decision=decision, actor=actor, note=note))
    for run_id in held if decision == "approve" else ():  # released even when it left nothing to approve
        held_run_release(run_id=run_id, actor=actor, note=note or "approved in review")
    return Decided(sum(d.applied for d in decided), [r for d in decided for r in d.refused])


def held_run_reject(*, run_id: uuid.UUID, actor: str, note: str = "") -> Decided:
    """Undo every change of a held run through its ledger (newest first, each in its own transaction) and release
    it; a change a later one builds on is refused and keeps the run held, so the refusal stays in sight."""
    undone = run_revert(run_id=run_id, actor=actor, reason=note or "held run rejected in review")
    if not undone.refused:
        held_run_release(run_id=run_id, actor=actor, note=note or "rejected: every change undone", rejected=True)
    return Decided(undone.undone, undone.refused)


def held_run_release(*, run_id: uuid.UUID, actor: str, note: str = "", rejected: bool = False) -> bool:
    """Release a held run (conditional UPDATE: released once) with a ledger row naming who decided."""
    with transaction.atomic():
        if not ConsolidationRun.objects.filter(pk=run_id, held=True).update(held=False):
            return False
        run = ConsolidationRun.objects.get(pk=run_id)
        ledger_write(tenant_id=run.tenant_id, action="run.reject" if rejected else "run.release", actor=actor,
                     run_id=run.id, user_id=run.user_id, reason=note,
                     inputs={"omissions": run.omissions, "omission_checked": run.omission_checked})
    return True


def _resolve_contradiction(entry: LedgerEntry, note: str) -> None:
    older, newer = entry.inputs["older"]["id"], entry.inputs["newer"]["id"]
    for relation in MemoryRelation.objects.filter(tenant_id=entry.tenant_id, from_memory_id=newer,
                                                  to_memory_id=older, relation_type=RelationType.CONTRADICTS):
        relation.flagged = False
        relation.metadata = {**relation.metadata, "resolution": note or "both stay true"}
        relation.save(update_fields=["flagged", "metadata"])
