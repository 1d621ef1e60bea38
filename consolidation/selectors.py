"""Reads for the jobs: who is eligible, and what a user's clustering run may touch."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.db.models import Q, QuerySet

from consolidation.clustering import Item
from zeromem.models import Memory, Tenant

EPISODIC_TYPES = ("episodic", "working")


def recency_window(tenant: Tenant) -> timedelta:
    hours = tenant.overrides.get("recency_window_hours", settings.ZEROMEMORY_RECENCY_WINDOW_HOURS)
    return timedelta(hours=float(hours))


def current_session_filter(*, tenant_id: int, user_id: str) -> Q | None:
    """Matches the user's current session: the session of their newest memory (a memory without a
    session_id belongs to its UTC day). None when the user has no memories."""
    newest = (Memory.objects.filter(tenant_id=tenant_id, user_id=user_id).exclude(memory_type="semantic")
              .order_by("-created_at").values("session_id", "created_at").first())
    if newest is None:
        return None
    if newest["session_id"]:
        return Q(session_id=newest["session_id"])
    return Q(session_id__isnull=True, created_at__date=newest["created_at"].date())


def clustering_queryset(*, tenant: Tenant, user_id: str, now: datetime, force: bool) -> QuerySet[Memory]:
    """Active memories a clustering run may fold: episodes older than the recency window and outside the
    current session (unless forced), plus the active semantic memories they may join."""
    active = Memory.objects.filter(tenant_id=tenant.id, user_id=user_id, state="raw")
    episodes = active.filter(memory_type__in=EPISODIC_TYPES)
    if not force:
        episodes = episodes.filter(created_at__lt=now - recency_window(tenant))
        current = current_session_filter(tenant_id=tenant.id, user_id=user_id)
        if current is not None:
            episodes = episodes.exclude(current)
    return episodes | active.filter(memory_type="semantic")


def users_with_eligible_memories(*, now: datetime) -> list[tuple[int, str]]:
    """(tenant, user) pairs with active episodes past the shortest recency window (per-tenant windows are
    applied again by each run). Reads the partial index on raw memories."""
    shortest = min([recency_window(t) for t in Tenant.objects.all()] or [timedelta(0)])
    rows = (Memory.objects.filter(state="raw", memory_type__in=EPISODIC_TYPES, created_at__lt=now - shortest)
            .values_list("tenant_id", "user_id").distinct().order_by("tenant_id", "user_id"))
    return list(rows)


@dataclass
class Loaded:
    """A user's clustering input as plain data, in one order shared by every list."""

    ids: list[uuid.UUID]
    rows: list[dict[str, Any]]
    items: list[Item]
    vectors: np.ndarray | None
    has_vector: list[bool]


FIELDS = ("id", "namespace", "entity_id", "window", "entities", "kind", "memory_type", "content", "content_hash",
          "importance", "confidence", "corroboration_count", "reward_score", "created_at", "tags", "embedding")


def clustering_input(queryset: QuerySet[Memory], dimension: int) -> Loaded:
    rows = list(queryset.order_by("created_at", "content_hash", "id").values(*FIELDS))  # reproducible order
    has_vector = [row["embedding"] is not None for row in rows]
    vectors = np.zeros((len(rows), dimension), dtype=np.float32)
    for index, row in enumerate(rows):
        if has_vector[index]:
            vectors[index] = row["embedding"]
        row.pop("embedding")
    items = [Item(scope=(r["namespace"], r["entity_id"], r["window"]), entities=frozenset(r["entities"]),
                  is_fact=r["kind"] == "fact") for r in rows]
    return Loaded(ids=[r["id"] for r in rows], rows=rows, items=items,
                  vectors=vectors if any(has_vector) else None, has_vector=has_vector)
