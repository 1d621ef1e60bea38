"""`manage.py bench clustering`: the clustering core at 1,000 / 10,000 / 100,000 memories on planted
clusters, beside the straightforward all-pairs union-find, plus the whole job at 10,000."""

from __future__ import annotations

import gc
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np
from django.utils import timezone

from consolidation.domain import calibration, clustering
from consolidation.domain.clustering import Item, Params
from consolidation.jobs.clustering import clustering_run_now
from zeromem.core import services
from zeromem.core.adapters.embeddings import get_embedder
from zeromem.devtools.bench.costs import measured
from zeromem.devtools.bench.texts import memory_texts
from zeromem.models import Memory

SCOPE = ("global", None, None)
SMALL_USER = 50  # memories of the small user whose whole run is costed (most users of a big tenant look like it)
SMALL_USERS = 5  # such users costed, each its own run


def planted(n: int, *, dim: int = 384, seed: int = 0) -> tuple[list[Item], np.ndarray]:
    """Clusters of 2–20 members with pairwise cosine 0.6–0.95 and two shared entities each (a quarter of the
    memories are singletons), and a hub entity in 30 % of all memories."""
    rng = np.random.default_rng(seed)
    items: list[Item] = []
    vectors = np.empty((n, dim), dtype=np.float32)
    topic = 0
    while len(items) < n:
        size = 1 if rng.random() < 0.25 else int(rng.integers(2, 21))
        centre = _unit(rng.normal(size=dim))
        member_cosine = float(np.sqrt(rng.uniform(0.6, 0.95)))  # members at c to the centre are ~c² apart
        for _ in range(min(size, n - len(items))):
            noise = _unit(rng.normal(size=dim) - centre * 0)  # nearly orthogonal to the centre in 384 dims
            vectors[len(items)] = _unit(member_cosine * centre + np.sqrt(1 - member_cosine ** 2) * noise)
            entities = {f"topic-{topic}-service", f"topic-{topic}-host", f"note-{len(items)}"}
            if rng.random() < 0.3:
                entities.add("hub-user")
            items.append(Item(SCOPE, frozenset(entities)))
        topic += 1
    return items, vectors


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def core_seconds(items: list[Item], vectors: np.ndarray, params: Params) -> tuple[float, int]:
    started = time.perf_counter()
    groups, _ = clustering.cluster(items, vectors, [True] * len(items), params)
    return time.perf_counter() - started, len(groups)


def all_pairs_seconds(items: list[Item], vectors: np.ndarray, params: Params) -> float:
    """The straightforward version: compare every pair in Python, then union-find."""
    started = time.perf_counter()
    hubs = clustering.hub_entities(items, params)
    pairs = []
    for a in range(len(items)):
        for b in range(a + 1, len(items)):
            cosine = float(vectors[a] @ vectors[b])
            shared = len((items[a].entities & items[b].entities) - hubs)
            if cosine >= params.cosine_floor or shared >= params.min_shared_entities:
                pairs.append(clustering.Pair(a, b, cosine, "all_pairs"))
    clustering.capped_union_find(len(items), pairs, params.max_cluster)
    return time.perf_counter() - started


def edge_recall(vectors: np.ndarray, params: Params) -> float:
    """Share of the cosine candidate pairs found by exact search that the nearest-neighbour index finds."""
    exact = {(p.a, p.b) for p in clustering.vector_pairs(vectors, Params(**{**params.__dict__, "exact_limit": 10**9}))}
    index = {(p.a, p.b) for p in clustering.vector_pairs(vectors, Params(**{**params.__dict__, "exact_limit": 0}))}
    return len(exact & index) / len(exact) if exact else 1.0


def full_job_seconds(n: int, params: Params, *, user_id: str = "bench-user",
                     seed: int = 1) -> tuple[float, dict[str, Any]]:
    """The whole job for one user: selection, clustering, merged text, re-embedding, writes; with what it cost
    (every SQL statement and transaction of the job, CPU of this process and its PostgreSQL backend)."""
    items, vectors = planted(n, seed=seed)
    tenant = services.tenant_get_or_create(name="bench-clustering")
    texts = memory_texts(n, seed=seed + 2)
    created = timezone.now() - timedelta(days=3)
    # Rows as ingestion stores them: vectors and the language reader's parse were paid for there (`bench ingest`).
    features = services.features_of([services.MemoryInput(content=text, user_id=user_id) for text in texts])
    Memory.objects.bulk_create([
        Memory(id=uuid.uuid4(), tenant=tenant, user_id=user_id, session_id=f"s{i // 40}", content=text,
               content_hash=services.content_hash(text), embedding=vector.tolist(), entities=sorted(item.entities),
               created_at=created + timedelta(seconds=i), features=parsed) for i, (item, vector, text, parsed) in
        enumerate(zip(items, vectors, texts, features, strict=True))], batch_size=1000)
    started = time.perf_counter()
    with measured() as cost:
        run = clustering_run_now(tenant_id=tenant.id, user_id=user_id, trigger="cli", force=True).run
    seconds = time.perf_counter() - started
    return seconds, {"clusters": run.clusters, "merged": run.merged, "superseded": run.superseded,
                     "flagged": run.flagged, "omission_checked": run.omission_checked, "omissions": run.omissions,
                     "omission_s": run.result.get("omissions", {}).get("seconds", 0.0), **cost.as_json(),
                     "statements_per_merge": round(cost.statements / max(run.clusters, 1), 1), **run.timings}


def bench_clustering(*, sizes: list[int], all_pairs_sizes: list[int], full_job_n: int, recall_n: int,
                     params: Params, say: Callable[[str], None]) -> dict[str, Any]:
    # What this process loaded so far lives as long as it: out of the garbage collector's reach, as a worker
    # does at start (zeromem/celery.py).
    gc.freeze()
    rows: list[dict[str, Any]] = []
    for n in sizes:
        items, vectors = planted(n)
        seconds, groups = core_seconds(items, vectors, params)
        rows.append({"method": "zeromem", "n": n, "seconds": round(seconds, 3), "clusters": groups})
        say(f"zeromem core  n={n:>7}: {seconds:7.2f} s, {groups} clusters")
    for n in all_pairs_sizes:
        items, vectors = planted(n)
        seconds = all_pairs_seconds(items, vectors, params)
        rows.append({"method": "all_pairs", "n": n, "seconds": round(seconds, 3)})
        say(f"all pairs     n={n:>7}: {seconds:7.2f} s")
    recall = edge_recall(planted(recall_n)[1], params)
    say(f"edge recall at {recall_n}: {recall:.4f}")
    if full_job_n:
        seconds, detail = full_job_seconds(full_job_n, params)
        rows.append({"method": "full_job", "n": full_job_n, "seconds": round(seconds, 3), **detail})
        say(f"full job      n={full_job_n:>7}: {seconds:7.2f} s {detail}")
    small = small_users(params, say)
    return {"rows": rows, "edge_recall": round(recall, 4), "cosine_floor": params.cosine_floor,
            "small_user_cpu_s": round(statistics.mean(run["cpu_s"] for run in small), 3),
            "small_user": small[0], "small_user_runs_cpu_s": [run["cpu_s"] for run in small]}


def small_users(params: Params, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """SMALL_USERS users' runs, one after the other as a worker's shared task does them: the figure is their mean,
    not one run's (a full garbage collection landing in one 0.4 s run or not moved it by a tenth)."""
    # Models loaded, code paths warm; other texts, so no query of a measured run is cached already.
    full_job_seconds(SMALL_USER, params, user_id="bench-warm-up", seed=11)
    runs = []
    for number in range(SMALL_USERS):
        _, small = full_job_seconds(SMALL_USER, params, user_id=f"bench-small-user-{number}", seed=1 + number)
        say(f"small user {number} n={SMALL_USER:>5}: {small['cpu_s']:.3f} s CPU (worker + its PostgreSQL backend) "
            f"{small}")
        runs.append(small)
    return runs


def calibrate(*, floor: float) -> dict[str, Any]:
    """Cosine scores of the configured embedder on the calibration pairs, and how the floor splits them."""

    embedder = get_embedder()
    result: dict[str, Any] = {"embedder": embedder.name, "floor": floor}
    for name, pairs in (("same_fact", calibration.SAME_FACT), ("related", calibration.RELATED),
                        ("unrelated", calibration.UNRELATED)):
        left = embedder.embed_batch([a for a, _ in pairs])
        right = embedder.embed_batch([b for _, b in pairs])
        scores = np.sort((left * right).sum(axis=1))
        result[name] = {"min": round(float(scores[0]), 3), "median": round(float(np.median(scores)), 3),
                        "max": round(float(scores[-1]), 3), "above_floor": int((scores >= floor).sum()),
                        "pairs": len(pairs)}
    return result
