"""Access recording without waiting on locks (ARCHITECTURE.md, "Jobs"): reads add memory ids to a Redis hash (one round
trip, no database write on the read path); a task flushes the hash every minute in batched UPDATEs that skip
rows a consolidation run holds locked (those counts go back into the hash for the next flush). Internal reads
(evaluation, canaries, jobs) call nothing here, so they record nothing.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction

from zeromem.core.events import redis_client
from zeromem.models import Memory

logger = logging.getLogger(__name__)
COUNTS = "zeromem:access:counts"
LAST = "zeromem:access:last"
BATCH = 1000


def access_record(memory_ids: Iterable[uuid.UUID], *, at: datetime | None = None) -> None:
    """Buffer one access for each memory; a broker problem is logged, never failing the read."""
    stamp = (at or datetime.now(UTC)).timestamp()
    _buffer([(str(i), 1, stamp) for i in memory_ids])


def _buffer(entries: list[tuple[str, int, float]]) -> None:
    if not entries:
        return
    try:
        pipe = redis_client().pipeline(transaction=True)
        for memory_id, count, _ in entries:
            pipe.hincrby(COUNTS, memory_id, count)
        pipe.hset(LAST, mapping={memory_id: stamp for memory_id, _, stamp in entries})  # one command, not one each
        pipe.execute()
    except Exception:
        logger.exception("could not buffer access to %d memories", len(entries))


def access_flush() -> int:
    """Move buffered accesses into access_count / last_accessed_at; returns how many memories were updated."""
    counts, last = _take_buffer()
    rows = [(memory_id, int(n), datetime.fromtimestamp(float(last.get(memory_id, 0)), UTC))
            for memory_id, n in counts.items()]
    updated = 0
    for start in range(0, len(rows), BATCH):
        updated += _apply(rows[start:start + BATCH])
    return updated


def _take_buffer() -> tuple[dict[str, Any], dict[str, Any]]:
    """Atomically take what is buffered (rename, read, delete), so accesses recorded meanwhile land in a new hash."""
    client = redis_client()
    token = uuid.uuid4().hex
    taken_counts, taken_last = f"{COUNTS}:{token}", f"{LAST}:{token}"
    if not client.exists(COUNTS):
        return {}, {}
    pipe = client.pipeline(transaction=True)
    pipe.rename(COUNTS, taken_counts)
    pipe.renamenx(LAST, taken_last)
    pipe.execute()
    counts = {k.decode(): v for k, v in client.hgetall(taken_counts).items()}
    last = {k.decode(): v for k, v in client.hgetall(taken_last).items()}
    client.delete(taken_counts, taken_last)
    return counts, last


def _apply(rows: list[tuple[str, int, datetime]]) -> int:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """WITH v(id, n, at) AS (SELECT * FROM unnest(%s::uuid[], %s::int[], %s::timestamptz[])),
                    locked AS (SELECT m.id FROM zeromem_memory m JOIN v ON v.id = m.id
                                FOR UPDATE OF m SKIP LOCKED)
               UPDATE zeromem_memory m SET access_count = m.access_count + v.n,
                      last_accessed_at = greatest(coalesce(m.last_accessed_at, v.at), v.at)
                 FROM v WHERE m.id = v.id AND m.id IN (SELECT id FROM locked)
               RETURNING m.id""",
            [[r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]])
        done = {str(row[0]) for row in cursor.fetchall()}
    missed = [r for r in rows if r[0] not in done]
    existing = {str(i) for i in Memory.objects.filter(id__in=[r[0] for r in missed]).values_list("id", flat=True)}
    # Rows a consolidation run holds right now go back into the buffer for the next flush (deleted ones do not).
    _buffer([(memory_id, n, at.timestamp()) for memory_id, n, at in missed if memory_id in existing])
    return len(done)
