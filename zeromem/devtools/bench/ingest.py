"""`manage.py bench ingest`: memories/s through the service layer with the configured embedder, into an
indexed table that already holds rows, beside the bare embedder's rate on the same texts."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
from django.utils import timezone

from zeromem.core import services
from zeromem.core.adapters.embeddings import get_embedder
from zeromem.devtools.bench.costs import measured
from zeromem.devtools.bench.texts import memory_texts
from zeromem.models import Memory


def prefill(*, tenant_id: int, rows: int, dimension: int, batch: int = 1000) -> None:
    """Rows with random unit vectors, inserted into the HNSW-indexed table like any other memory."""
    rng = np.random.default_rng(1)
    now = timezone.now()
    for start in range(0, rows, batch):
        vectors = rng.normal(size=(min(batch, rows - start), dimension)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        Memory.objects.bulk_create([
            Memory(id=uuid.uuid4(), tenant_id=tenant_id, user_id="prefill", content=f"prefill memory {start + i}",
                   content_hash=services.content_hash(f"prefill {start + i}"), embedding=v.tolist(), created_at=now)
            for i, v in enumerate(vectors)])


def bench_ingest(*, n: int, prefill_rows: int, batch: int, progress: Callable[[str, int], None]) -> dict[str, Any]:
    tenant = services.tenant_get_or_create(name="bench")
    embedder = get_embedder()
    texts = memory_texts(n)
    progress("prefill", 0)
    prefill(tenant_id=tenant.id, rows=prefill_rows, dimension=embedder.dimension)
    embedder.embed_batch(texts[:16])  # load the model outside both timings
    started = time.perf_counter()
    for start in range(0, n, batch):
        embedder.embed_batch(texts[start:start + batch])
        progress("embedder", len(texts[start:start + batch]))
    embedder_seconds = time.perf_counter() - started
    started = time.perf_counter()
    with measured() as cost:
        services.memories_import(tenant_id=tenant.id, progress=lambda done: progress("ingest", done), batches=(
            [services.MemoryInput(content=t, user_id=f"user-{i % 20}", session_id=f"s-{i // 50}")
             for i, t in enumerate(texts[start:start + batch], start)] for start in range(0, n, batch)))
    seconds = time.perf_counter() - started
    stored = Memory.objects.filter(tenant=tenant, embedding__isnull=False).exclude(user_id="prefill").count()
    return {"n": n, "stored_with_vector": stored, "prefilled_rows": prefill_rows, "batch": batch,
            "embedder": embedder.name, "seconds": round(seconds, 3), "per_second": round(n / seconds, 1),
            "embedder_seconds": round(embedder_seconds, 3),
            "embedder_per_second": round(n / embedder_seconds, 1),
            "ratio": round(embedder_seconds / seconds, 3),
            # Embedding and writes: this process (its embedder threads included) and its PostgreSQL backend.
            "cpu_ms_per_memory": round(1000 * cost.cpu_s / n, 2), **cost.as_json()}
