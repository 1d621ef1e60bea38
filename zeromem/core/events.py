"""Events after commit, never before: a Django signal and the capped Redis stream `zeromem:events`.

Payload: {"event", "id", "tenant", "occurred_at", "data"} (ARCHITECTURE.md, "Jobs"). A failure to publish is logged and
never undoes or blocks the committed change.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone

from zeromem.models import Memory

logger = logging.getLogger(__name__)

EVENT_TYPES = frozenset({
    "memory.semantic.updated", "memory.merged", "memory.superseded", "memory.archived", "memory.unmerged",
    "memory.restored", "memory.deleted", "memory.updated", "profile.updated", "consolidation.run_completed",
})
STREAM = "zeromem:events"
STREAM_MAXLEN = 100_000

# Receivers get `payloads`: the events of one emit (the dicts above), in the order emitted, so a receiver does its
# look-ups once for a chunk of a job's writes. `memory_events_recorded` is sent inside the emitting transaction:
# what a receiver writes commits with the change or not at all (webhook deliveries: an outbox, so a crash right
# after commit loses none). `memory_events` is sent after commit, for what must never see a rolled-back change.
memory_events_recorded = Signal()
memory_events = Signal()


@lru_cache(maxsize=1)
def redis_client() -> Any:
    import redis

    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5)


def event_emit(*, event: str, tenant_id: int, data: dict[str, Any]) -> dict[str, Any]:
    """Queue the event for after the surrounding transaction commits (dropped if it rolls back)."""
    return event_emit_all(tenant_id=tenant_id, events=[(event, data)])[0]


def event_emit_all(*, tenant_id: int, events: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Record (event type, data) pairs in the surrounding transaction (`memory_events_recorded`) and queue them
    for after commit, published together: one stream pipeline, one signal."""
    unknown = {event for event, _ in events} - EVENT_TYPES
    if unknown:
        raise ValueError(f"unknown event type {sorted(unknown)!r}")
    occurred_at = timezone.now().isoformat()
    payloads = [{"event": event, "id": str(uuid.uuid4()), "tenant": tenant_id, "occurred_at": occurred_at,
                 "data": data} for event, data in events]
    if payloads:
        memory_events_recorded.send(sender=None, payloads=payloads)
        transaction.on_commit(lambda: publish(payloads))
    return payloads


def publish(payloads: list[dict[str, Any]]) -> None:
    memory_events.send_robust(sender=None, payloads=payloads)
    try:
        pipeline = redis_client().pipeline(transaction=False)
        for payload in payloads:
            pipeline.xadd(STREAM, {"payload": json.dumps(payload, default=str)}, maxlen=STREAM_MAXLEN,
                          approximate=True)
        pipeline.execute()
    except Exception:
        logger.exception("could not publish %d event(s) to the %s stream", len(payloads), STREAM)


def semantic_event_data(memory: Memory) -> dict[str, Any]:
    """What a consumer filters `memory.semantic.updated` on: the memory's id, scores, tags, window, how many
    memories it stands for (a window digest: the window's events) and its valid dates (docs/API.md, "Events")."""
    return {"id": str(memory.id), "importance": memory.importance, "stability": memory.stability_score,
            "tags": list(memory.tags), "window": memory.window,
            "source_count": int(memory.metadata.get("source_count", 0)),
            "valid_from": memory.valid_from.isoformat() if memory.valid_from else None,
            "valid_to": memory.valid_to.isoformat() if memory.valid_to else None}
