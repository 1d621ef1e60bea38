"""Profile writes: reflection merges what it found into the entity's (or user's) profile, never overwrites it.

These write the profile only. The ledger row and the `profile.updated` event of a change are written by the
caller, which holds the run and the transaction (`consolidation.ledger.profile_change_record`)."""

from __future__ import annotations

import copy
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from profiles.models import MemoryProfile
from zeromem.core.domain.text import same_statement

MAX_ITEMS_PER_LIST = 200  # beyond this the least confident, oldest items give way
SNAPSHOT_FIELDS = ("preferences", "behaviors", "facts", "summary", "summary_source_ids")
PROFILE_FIELD = {"preference": "preferences", "behavior": "behaviors", "failure_pattern": "behaviors",
                 "domain_fact": "facts", "entity": "facts", "constraint": "facts"}


@dataclass(frozen=True)
class ProfileChange:
    """What a merge or a restore did to a profile: what the caller records in the ledger and the event."""

    profile: MemoryProfile
    previous: dict[str, Any]  # the snapshot an undo writes back
    added: tuple[str, ...] = ()
    folded: tuple[str, ...] = ()
    cited: tuple[str, ...] = ()  # memory ids the new items and summary rest on
    retired: tuple[str, ...] = ()  # items dropped because a newer statement replaced what they said


@dataclass(frozen=True)
class ProfileItem:
    category: str
    subject: str
    statement: str
    confidence: float
    source_ids: tuple[str, ...]  # the episodic/semantic memories that support it
    memory_id: str  # the semantic memory reflection wrote for it

    def as_json(self, now: str) -> dict[str, Any]:
        return {"category": self.category, "subject": self.subject, "statement": self.statement,
                "confidence": round(self.confidence, 3), "source_ids": list(self.source_ids),
                "memory_ids": [self.memory_id], "first_seen": now, "last_seen": now}


def profile_merge(*, tenant_id: int, user_id: str, entity_id: str | None, namespace: str,
                  items: Sequence[ProfileItem], summary: str,
                  summary_source_ids: Sequence[str]) -> ProfileChange | None:
    """Fold items into the profile (a statement already there gains sources and keeps the higher confidence),
    take the new summary, bump the version. Call inside the transaction that writes the items' memories.
    Returns the change, or None when nothing changed."""
    profile, _ = MemoryProfile.objects.select_for_update().get_or_create(
        tenant_id=tenant_id, user_id=user_id, entity_id=entity_id or "", namespace=namespace)
    now = timezone.now().isoformat()
    previous = copy.deepcopy({name: getattr(profile, name) for name in SNAPSHOT_FIELDS})
    added, folded = [], []
    for item in items:
        entries = getattr(profile, PROFILE_FIELD[item.category])
        existing = next((e for e in entries if e["category"] == item.category
                         and same_statement(e["statement"], item.statement)), None)
        if existing is None:
            entries.append(item.as_json(now))
            added.append(item.statement)
        else:
            _fold_into(existing, item, now)
            folded.append(item.statement)
    changed = bool(added or folded) or (bool(summary) and summary != profile.summary)
    if not changed:
        return None
    _trim(profile)
    if summary:
        profile.summary, profile.summary_source_ids = summary, list(summary_source_ids)
    profile.version += 1
    profile.save()
    cited = {s for item in items for s in (*item.source_ids, item.memory_id)} | set(summary_source_ids)
    return ProfileChange(profile=profile, previous=previous, added=tuple(added), folded=tuple(folded),
                         cited=tuple(sorted(cited)))


def _fold_into(existing: dict[str, Any], item: ProfileItem, now: str) -> None:
    existing["confidence"] = round(max(float(existing["confidence"]), item.confidence), 3)
    existing["source_ids"] = list(dict.fromkeys([*existing["source_ids"], *item.source_ids]))
    existing["memory_ids"] = list(dict.fromkeys([*existing.get("memory_ids", []), item.memory_id]))
    existing["last_seen"] = now


def _trim(profile: MemoryProfile) -> None:
    for name in ("preferences", "behaviors", "facts"):
        entries = getattr(profile, name)
        if len(entries) > MAX_ITEMS_PER_LIST:
            entries.sort(key=lambda e: (float(e["confidence"]), e["last_seen"]), reverse=True)
            setattr(profile, name, entries[:MAX_ITEMS_PER_LIST])


def profile_items_retire(*, tenant_id: int, user_id: str, source_id: str,
                         values: Collection[str]) -> list[ProfileChange]:
    """Drop the items of the user's profiles built from `source_id` that state one of `values`: a claim newer
    statements replaced (the caller records each change; the snapshot lets an undo put the items back)."""
    if not values:
        return []
    stated = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(v) for v in sorted(values)) + r")(?!\w)", re.I)
    changes = []
    for profile in MemoryProfile.objects.select_for_update().filter(tenant_id=tenant_id, user_id=user_id):
        previous = copy.deepcopy({name: getattr(profile, name) for name in SNAPSHOT_FIELDS})
        retired: list[str] = []
        for name in ("preferences", "behaviors", "facts"):
            entries = getattr(profile, name)
            gone = [e for e in entries if source_id in e.get("source_ids", []) and stated.search(e["statement"])]
            setattr(profile, name, [e for e in entries if e not in gone])
            retired += [e["statement"] for e in gone]
        if retired:
            profile.version += 1
            profile.save()
            changes.append(ProfileChange(profile=profile, previous=previous, retired=tuple(retired)))
    return changes


def profile_restore(*, tenant_id: int, profile_id: int, snapshot: dict[str, Any]) -> ProfileChange | None:
    """Put a profile back as a ledger snapshot had it (undo of a reflection), as a new version. Missing profile
    (erased since): nothing to restore."""
    profile = MemoryProfile.objects.select_for_update().filter(tenant_id=tenant_id, id=profile_id).first()
    if profile is None:
        return None
    previous = copy.deepcopy({name: getattr(profile, name) for name in SNAPSHOT_FIELDS})
    for name in SNAPSHOT_FIELDS:
        if name in snapshot:
            setattr(profile, name, snapshot[name])
    profile.version += 1
    profile.save()
    return ProfileChange(profile=profile, previous=previous)
