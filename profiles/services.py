"""Profile writes: reflection merges what it found into the entity's (or user's) profile, never overwrites it.

These write the profile only. The ledger row and the `profile.updated` event of a change are written by the
caller, which holds the run and the transaction (`consolidation.ledger.profile_change_record`)."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from consolidation.domain.contradictions import SUPERSEDE, Statement, judge
from consolidation.domain.insights import SUMMARY_CHARS
from profiles.models import MemoryProfile
from profiles.selectors import first_said, item_weight
from zeromem.core.domain.text import same_statement, stems

MAX_ITEMS_PER_LIST = 200  # beyond this the least confident, oldest items give way
CONFIRMED_STEP = 0.1  # an item said again in other memories gains this much confidence, up to CONFIRMED_MAX
CONFIRMED_MAX = 0.95
REPLACED_WEIGHT = 0.5  # an item a newer one replaces keeps this share of its weight (it ranks below, stays visible)
SNAPSHOT_FIELDS = ("preferences", "behaviors", "facts", "summary", "summary_source_ids")
PROFILE_FIELD = {"preference": "preferences", "behavior": "behaviors", "failure_pattern": "behaviors",
                 "domain_fact": "facts", "entity": "facts", "constraint": "facts"}


class ProfileChangedSince(Exception):
    """An undo would overwrite a later change of the profile."""


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
    subject: str  # whom it is about: the entity, or "<entity>'s daughter"
    statement: str  # third person
    confidence: float
    source_ids: tuple[str, ...]  # the episodic/semantic memories that support it
    memory_id: str  # the semantic memory that carries it (a condensed passage or an insight)
    said_from: datetime  # when its first source was said
    said_last: datetime  # when its newest source was said

    def as_json(self, now: str) -> dict[str, Any]:
        """`first_seen`: when the profile learnt it; `valid_from` / `last_seen`: when it was first and last said;
        `weight`: how strongly it counts (its confidence, lowered once a newer item replaces it)."""
        return {"category": self.category, "subject": self.subject, "statement": self.statement,
                "confidence": round(self.confidence, 3), "weight": round(self.confidence, 3),
                "source_ids": list(self.source_ids), "memory_ids": [self.memory_id], "first_seen": now,
                "valid_from": self.said_from.isoformat(), "last_seen": self.said_last.isoformat()}


def profile_merge(*, tenant_id: int, user_id: str, entity_id: str | None, namespace: str,
                  items: Sequence[ProfileItem], summary: str = "",
                  summary_source_ids: Sequence[str] = ()) -> ProfileChange | None:
    """Fold items into the profile, never overwrite it: a statement already there gains the new sources, its
    dates widen and its confidence rises; an item a newer one replaces loses weight. The summary is the model's
    when it wrote one, else composed from the strongest items whenever they change. Bumps the version. Call
    inside the transaction that writes the items' memories. Returns the change, or None when nothing changed."""
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
            _weaken_replaced(entries, item)
            entries.append(item.as_json(now))
            added.append(item.statement)
        else:
            _fold_into(existing, item)
            folded.append(item.statement)
    if not (added or folded or (summary and summary != profile.summary)):
        return None
    _trim(profile)
    profile.summary, profile.summary_source_ids = (summary, list(summary_source_ids)) if summary else \
        summary_of(profile.preferences + profile.behaviors + profile.facts)
    profile.version += 1
    profile.save()
    cited = {s for item in items for s in (*item.source_ids, item.memory_id)} | set(profile.summary_source_ids)
    return ProfileChange(profile=profile, previous=previous, added=tuple(added), folded=tuple(folded),
                         cited=tuple(sorted(cited)))


def _fold_into(existing: dict[str, Any], item: ProfileItem) -> None:
    new_sources = [s for s in item.source_ids if s not in existing["source_ids"]]
    confidence = max(float(existing["confidence"]), item.confidence)
    if new_sources:  # said again elsewhere: surer
        confidence = min(CONFIRMED_MAX, confidence + CONFIRMED_STEP)
    existing["confidence"] = round(confidence, 3)
    existing["weight"] = round(confidence * (REPLACED_WEIGHT if existing.get("replaced_by") else 1.0), 3)
    existing["source_ids"] = [*existing["source_ids"], *new_sources]
    existing["memory_ids"] = list(dict.fromkeys([*existing.get("memory_ids", []), item.memory_id]))
    existing["valid_from"] = min(first_said(existing), item.said_from).isoformat()
    existing["last_seen"] = max(str(existing.get("last_seen", "")), item.said_last.isoformat())


def _weaken_replaced(entries: list[dict[str, Any]], item: ProfileItem) -> None:
    """An older item of the same category whose value the new one changes ("lives in Lisbon" → "moved to
    Porto") keeps REPLACED_WEIGHT of its weight and names its replacement."""
    newer = Statement.parse(item.statement, item.said_from)
    words = stems(item.statement)
    for entry in entries:
        said = first_said(entry)
        if (entry["category"] != item.category or entry.get("replaced_by") or said >= item.said_from
                or len(words & stems(entry["statement"])) < 2):  # parsing every pair would be too slow
            continue
        if judge(Statement.parse(entry["statement"], said), newer).kind == SUPERSEDE:
            entry["replaced_by"] = item.statement
            entry["weight"] = round(float(entry["confidence"]) * REPLACED_WEIGHT, 3)


def summary_of(items: Sequence[dict[str, Any]]) -> tuple[str, list[str]]:
    """The strongest items' statements (not replaced ones), whole, within SUMMARY_CHARS; with their sources."""
    ranked = sorted((i for i in items if not i.get("replaced_by")),
                    key=lambda i: (item_weight(i), str(i.get("last_seen", ""))), reverse=True)
    text, sources = "", list[str]()
    for item in ranked:
        sentence = item["statement"].rstrip(" .") + "."
        if len(text) + len(sentence) + 1 <= SUMMARY_CHARS:
            text, sources = f"{text} {sentence}".strip(), [*sources, *item["source_ids"]]
    return text, list(dict.fromkeys(sources))


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


def profile_state(profile: MemoryProfile) -> str:
    """A fingerprint of what the profile says (items, summary): an undo restores a snapshot only onto the state the
    change it undoes left, never over a later change."""
    state = json.dumps({name: getattr(profile, name) for name in SNAPSHOT_FIELDS}, sort_keys=True, default=str)
    return hashlib.sha256(state.encode()).hexdigest()


def profile_restore(*, tenant_id: int, profile_id: int, snapshot: dict[str, Any],
                    expected_state: str | None = None) -> ProfileChange | None:
    """Put a profile back as a ledger snapshot had it (undo of a reflection), as a new version. Missing profile
    (erased since): nothing to restore."""
    profile = MemoryProfile.objects.select_for_update().filter(tenant_id=tenant_id, id=profile_id).first()
    if profile is None:
        return None
    if expected_state is not None and profile_state(profile) != expected_state:
        raise ProfileChangedSince(f"profile {profile_id} changed after this update; undo the later change first")
    previous = copy.deepcopy({name: getattr(profile, name) for name in SNAPSHOT_FIELDS})
    for name in SNAPSHOT_FIELDS:
        if name in snapshot:
            setattr(profile, name, snapshot[name])
    profile.version += 1
    profile.save()
    return ProfileChange(profile=profile, previous=previous)
