"""Deletion, erasure and correction (ARCHITECTURE.md, "States": deletion happens only through the purge and an explicit
erasure request).

- `memories_delete` removes rows: BM25 counters decremented, provenance rows keep the source's id and content
  hash (the foreign key goes null), a ledger row with ids and hashes only, `memory.deleted` after commit.
- `memories_erase` makes the text unrecoverable: it also deletes every semantic memory built from the erased
  memories (transitively: merges, insights, digests), sends their other sources back to raw so nothing else is
  lost (the next clustering folds them again), removes profile items and summaries that cite them, and replaces
  the text in ledger rows and run results about them with "[erased]" (ids and hashes stay).
- `memory_correct` rewrites one memory's content (re-embedded, counters updated) and unwinds what was built from
  the old text the same way.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from consolidation.ledger import ledger_write, memory_transition
from consolidation.models import ConsolidationRun, LedgerEntry, RunKind
from profiles.models import MemoryProfile
from zeromem.core.adapters.embeddings import Vector, embed_texts
from zeromem.core.contention import retry_on_contention
from zeromem.core.domain.entities import classify_kind, extract_entities
from zeromem.core.events import event_emit
from zeromem.core.services import content_hash, search_stats_add, search_stats_remove
from zeromem.models import Memory, MemorySource, MemoryState, MemoryType

ERASED = "[erased]"
_KEEP = re.compile(r"^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{64}|"
                   r"\d{4}-\d\d-\d\d(?:[T ][\d:.+\-Z]*)?)$")
CHUNK = 1000


def scrub(value: Any) -> Any:
    """The same structure with every string replaced by ERASED except ids, hashes and timestamps."""
    if isinstance(value, dict):
        return {key: scrub(item) for key, item in value.items()}
    if isinstance(value, list):
        return [scrub(item) for item in value]
    if isinstance(value, str) and not _KEEP.match(value):
        return ERASED
    return value


def memories_delete(*, tenant_id: int, memory_ids: Sequence[uuid.UUID], actor: str, reason: str,
                    run_id: uuid.UUID | None = None) -> int:
    """Delete rows inside the caller's transaction (see the module docstring); returns how many. The rows are
    locked first, in id order (two deletions of overlapping sets queue instead of deadlocking), so their
    counters are taken out as they are now, not as a correction that committed meanwhile left them."""
    rows = list(Memory.objects.select_for_update().filter(tenant_id=tenant_id, id__in=list(memory_ids))
                .order_by("id").values("id", "content_hash", "user_id"))
    if not rows:
        return 0
    ids = [r["id"] for r in rows]
    search_stats_remove(memory_ids=ids)
    Memory.objects.filter(id__in=ids).delete()
    users = {r["user_id"] for r in rows}
    ledger_write(tenant_id=tenant_id, action="delete", actor=actor, run_id=run_id,
                 user_id=users.pop() if len(users) == 1 else "",
                 memory_ids=ids, inputs={"deleted": [{"id": str(r["id"]), "content_hash": r["content_hash"]}
                                                     for r in rows]}, reason=reason)
    event_emit(event="memory.deleted", tenant_id=tenant_id,
               data={"memory_ids": [str(i) for i in ids], "reason": reason})
    return len(ids)


@dataclass
class Erasure:
    deleted: int = 0
    derived_deleted: int = 0
    returned_to_raw: int = 0
    profiles_changed: int = 0
    ledger_rows_scrubbed: int = 0
    ids: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@retry_on_contention
def memories_erase(*, tenant_id: int, memory_ids: Sequence[uuid.UUID], actor: str, reason: str) -> Erasure:
    """Erase memories and every trace of their text (module docstring), all in one transaction."""
    with transaction.atomic():
        # The rows first, in id order, as a correction or a keyed put locks its row before anything else: an
        # erasure and a rewrite of the same memory wait for each other instead of deadlocking on what comes next.
        erased = set(Memory.objects.select_for_update().filter(tenant_id=tenant_id, id__in=list(memory_ids))
                     .order_by("id").values_list("id", flat=True))
        derived = derived_closure(tenant_id, erased)
        result = _unwind(tenant_id, erased | derived, actor, reason)
        result.deleted = memories_delete(tenant_id=tenant_id, memory_ids=sorted(erased | derived, key=str),
                                         actor=actor, reason=reason) - len(derived)
        result.derived_deleted = len(derived)
        result.ids = sorted(str(i) for i in erased)
        return result


def derived_closure(tenant_id: int, ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    """Semantic memories built from these memories, and from those, and so on."""
    found: set[uuid.UUID] = set()
    frontier = set(ids)
    while frontier:
        cited_by = set(MemorySource.objects.filter(memory__tenant_id=tenant_id, source_memory_id__in=list(frontier))
                       .values_list("memory_id", flat=True)) - found - set(ids)
        found |= cited_by
        frontier = cited_by
    return found


def _unwind(tenant_id: int, doomed: set[uuid.UUID], actor: str, reason: str) -> Erasure:
    """Before deleting `doomed`: their surviving sources back to active, profiles and ledger rows cleaned."""
    result = Erasure()
    result.returned_to_raw = _release_sources(tenant_id, doomed, actor)
    result.profiles_changed = _profiles_forget(tenant_id, doomed, actor)
    result.ledger_rows_scrubbed = _ledger_scrub(tenant_id, doomed)
    return result


def _release_sources(tenant_id: int, doomed: set[uuid.UUID], actor: str) -> int:
    """Sources of doomed semantic memories that nothing else cites go back to raw (and get read by reflection
    again): no memory is lost because something built from it was erased."""
    sources = set(MemorySource.objects.filter(memory_id__in=list(doomed), source_id__isnull=False)
                  .values_list("source_id", flat=True)) - doomed
    still_cited = set(MemorySource.objects.filter(source_id__in=list(sources)).exclude(memory_id__in=list(doomed))
                      .values_list("source_id", flat=True))
    orphans = sources - still_cited
    consolidated = list(Memory.objects.filter(id__in=list(orphans), state=MemoryState.CONSOLIDATED)
                        .values_list("id", flat=True))
    if consolidated:
        memory_transition(tenant_id=tenant_id, memory_ids=consolidated, operation="unmerge", actor=actor,
                          reason="what was built from it was erased")
    Memory.objects.filter(id__in=list(orphans), memory_type=MemoryType.SEMANTIC).update(reflected_at=None)
    return len(consolidated)


def _profiles_forget(tenant_id: int, doomed: set[uuid.UUID], actor: str) -> int:
    """Remove profile items (and summaries) that cite a doomed memory; the ledger row carries no text."""
    gone = {str(i) for i in doomed}
    users = set(Memory.objects.filter(id__in=list(doomed)).values_list("user_id", flat=True))
    changed = 0
    for profile in MemoryProfile.objects.select_for_update().filter(tenant_id=tenant_id, user_id__in=users):
        removed = 0
        for name in ("preferences", "behaviors", "facts"):
            kept = [i for i in getattr(profile, name)
                    if not gone & {*i.get("source_ids", []), *i.get("memory_ids", [])}]
            removed += len(getattr(profile, name)) - len(kept)
            setattr(profile, name, kept)
        summary_gone = bool(gone & set(profile.summary_source_ids))
        if summary_gone:
            profile.summary, profile.summary_source_ids = "", []
        if removed or summary_gone:
            profile.version += 1
            profile.save()
            changed += 1
            ledger_write(tenant_id=tenant_id, action="profile.erase", actor=actor, user_id=profile.user_id,
                         inputs={"profile_id": profile.id}, outputs={"items_removed": removed,
                                                                    "summary_cleared": summary_gone},
                         reason="items built from erased memories removed")
    return changed


def _ledger_scrub(tenant_id: int, doomed: set[uuid.UUID]) -> int:
    """Replace the text in ledger rows about doomed memories (and in their runs' results) with ERASED."""
    ids = sorted(str(i) for i in doomed)
    scrubbed, runs = 0, set()
    for start in range(0, len(ids), CHUNK):
        rows = LedgerEntry.objects.filter(tenant_id=tenant_id, memory_ids__has_any_keys=ids[start:start + CHUNK])
        for row in rows.exclude(reason=ERASED):
            row.inputs, row.outputs, row.reason = scrub(row.inputs), scrub(row.outputs), ERASED
            row.save(update_fields=["inputs", "outputs", "reason"])
            scrubbed += 1
            runs.add(row.run_id)
    for run in ConsolidationRun.objects.filter(id__in=[r for r in runs if r], kind=RunKind.REFLECTION):
        run.result = {**run.result, "insights": scrub(run.result.get("insights", [])),
                      "errors": scrub(run.result.get("errors", []))}
        run.save(update_fields=["result"])
    return scrubbed


@retry_on_contention
def scope_erase(*, tenant_id: int, actor: str, user_id: str | None = None, entity_id: str | None = None
                ) -> dict[str, Any]:
    """Forget a user (every memory and profile of theirs) or an entity (every memory about it, and its
    profiles), with everything derived from them."""
    memories = Memory.objects.filter(tenant_id=tenant_id)
    profiles = MemoryProfile.objects.filter(tenant_id=tenant_id)
    if user_id is not None:
        memories, profiles = memories.filter(user_id=user_id), profiles.filter(user_id=user_id)
    if entity_id is not None:
        memories, profiles = memories.filter(entity_id=entity_id), profiles.filter(entity_id=entity_id)
    with transaction.atomic():
        result = memories_erase(tenant_id=tenant_id, memory_ids=list(memories.values_list("id", flat=True)),
                                actor=actor, reason="forget request")
        deleted_profiles, _ = profiles.delete()
    return {**result.as_json(), "profiles_deleted": deleted_profiles}


@retry_on_contention
def memory_correct(*, tenant_id: int, memory_id: uuid.UUID, content: str, actor: str) -> Erasure:
    """New content for one memory: re-embedded, BM25 counters and entities updated, a ledger row with the old and
    new hash (no text), what was built from the old text unwound (module docstring), `memory.updated`."""
    vector = embed_texts([content])[0]
    with transaction.atomic():
        memory = Memory.objects.select_for_update().get(tenant_id=tenant_id, id=memory_id)
        old_hash = memory.content_hash
        result = content_rewrite(tenant_id=tenant_id, memory=memory, content=content, vector=vector, actor=actor)
        ledger_write(tenant_id=tenant_id, action="correct", actor=actor, user_id=memory.user_id,
                     memory_ids=[memory.id], inputs={"content_hash": old_hash},
                     outputs={"content_hash": memory.content_hash}, reason="content corrected")
        event_emit(event="memory.updated", tenant_id=tenant_id, data={"memory_id": str(memory.id)})
    return result


def content_rewrite(*, tenant_id: int, memory: Memory, content: str, vector: Vector | None, actor: str) -> Erasure:
    """Rewrite a row-locked memory's content inside the caller's transaction: what was built from the old text
    unwound and deleted, a consolidated memory active again, BM25 counters moved to the new text, entities and
    kind extracted anew. The caller writes the ledger row and the event."""
    derived = derived_closure(tenant_id, {memory.id})
    result = _unwind(tenant_id, derived | {memory.id}, actor, "corrected")
    memories_delete(tenant_id=tenant_id, memory_ids=sorted(derived, key=str), actor=actor,
                    reason="built from a corrected memory")
    if memory.state == MemoryState.CONSOLIDATED:  # what it was folded into is gone: active again, folded anew later
        memory_transition(tenant_id=tenant_id, memory_ids=[memory.id], operation="unmerge", actor=actor,
                          reason="corrected; what was built from it was removed")
        memory.refresh_from_db()
    memory.reflected_at = None
    search_stats_remove(memory_ids=[memory.id])
    memory.content, memory.content_hash = content, content_hash(content)
    memory.entities, memory.kind = extract_entities(content), classify_kind(content)
    memory.features = None  # the old text's parse: the next clustering run parses the new one
    memory.embedding = vector  # type: ignore[assignment]  # pgvector types the field object, not the row's value
    memory.save()
    search_stats_add(memory_ids=[memory.id])
    result.derived_deleted, result.ids = len(derived), [str(memory.id)]
    return result
