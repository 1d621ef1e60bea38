"""The clustering core: candidate pairs and capped union-find. numpy only, no Django import.

Candidates (ARCHITECTURE.md, "Jobs"), always inside one scope (namespace, entity_id, window):
- two memories sharing >= 2 entities;
- two facts whose entity sets have Jaccard >= `fact_jaccard`;
- two memories whose cosine similarity is >= `cosine_floor`, found with a nearest-neighbour index (exact
  blocked matrix products for small scopes, an inverted-file index beyond `exact_limit`), never all pairs
  in Python. (usearch's HNSW was measured too: 7.8 s at 10,000 planted-cluster vectors with the settings
  that keep recall >= 0.99, and recall 0.90–0.94 at 100,000; the inverted-file index does 0.7 s / ~10 s.)
Hub entities (in more than `hub_share` of the user's memories and more than `hub_min_count`, or in more
than `max_posting` of them) are ignored: "the user" or "prod" links everything and so says nothing.
Clusters are built strongest pair first and never grow past `max_cluster`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

Scope = tuple[Hashable, ...]


@dataclass(frozen=True)
class Params:
    cosine_floor: float = 0.62
    fact_jaccard: float = 0.5
    min_shared_entities: int = 2
    hub_share: float = 0.2
    hub_min_count: int = 10  # in a handful of memories nothing is a hub
    max_posting: int = 200
    max_cluster: int = 20
    bucket: int = 256  # inverted-file index: vectors per bucket
    exact_limit: int = 4000


@dataclass(frozen=True)
class Item:
    scope: Scope
    entities: frozenset[str]
    is_fact: bool = False


@dataclass(frozen=True)
class Pair:
    a: int
    b: int
    strength: float  # cosine, or an entity score in [0, 1] where there is no vector
    reason: str  # "cosine" | "entities" | "fact_entities"


def hub_entities(items: Sequence[Item], params: Params) -> frozenset[str]:
    counts = Counter(e for item in items for e in item.entities)
    share_limit = max(params.hub_share * len(items), params.hub_min_count)
    return frozenset(e for e, n in counts.items() if n > share_limit or n > params.max_posting)


def entity_pairs(items: Sequence[Item], params: Params, hubs: frozenset[str]) -> list[Pair]:
    """Pairs linked by shared entities, via an inverted index: work grows with posting sizes (capped by the
    hub rule), not with the square of the number of memories."""
    postings: dict[tuple[Scope, str], list[int]] = defaultdict(list)
    for index, item in enumerate(items):
        for entity in item.entities - hubs:
            postings[(item.scope, entity)].append(index)
    shared: Counter[tuple[int, int]] = Counter()
    for members in postings.values():
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                shared[(a, b)] += 1
    pairs = []
    for (a, b), count in shared.items():
        pair = _entity_pair(items, a, b, count, params, hubs)
        if pair:
            pairs.append(pair)
    return pairs


def _entity_pair(items: Sequence[Item], a: int, b: int, count: int, params: Params,
                 hubs: frozenset[str]) -> Pair | None:
    union = len((items[a].entities | items[b].entities) - hubs)
    jaccard = count / union if union else 0.0
    if count >= params.min_shared_entities:
        return Pair(a, b, jaccard, "entities")
    if items[a].is_fact and items[b].is_fact and jaccard >= params.fact_jaccard:
        return Pair(a, b, jaccard, "fact_entities")
    return None


Edges = tuple[np.ndarray, np.ndarray, np.ndarray]  # a (< b), b, cosine


def _exact_neighbours(vectors: np.ndarray, floor: float, block: int = 1024) -> Edges:
    parts_a, parts_b, parts_s = [], [], []
    for start in range(0, len(vectors), block):
        sims = vectors[start:start + block] @ vectors.T
        rows, cols = np.nonzero(sims >= floor)
        keep = cols > rows + start
        parts_a.append(rows[keep] + start)
        parts_b.append(cols[keep])
        parts_s.append(sims[rows[keep], cols[keep]])
    return np.concatenate(parts_a), np.concatenate(parts_b), np.concatenate(parts_s)


def _centroids(vectors: np.ndarray, count: int, *, iterations: int = 5, seed: int = 0) -> np.ndarray:
    """Spherical k-means on a sample: the coarse quantiser of the inverted-file index."""
    rng = np.random.default_rng(seed)
    centroids = vectors[rng.choice(len(vectors), count, replace=False)].copy()
    sample = vectors[rng.choice(len(vectors), min(len(vectors), 50 * count), replace=False)]
    for _ in range(iterations):
        assign = np.argmax(sample @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, sample)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        centroids = np.where(norms > 0, sums / np.maximum(norms, 1e-12), centroids)
    return centroids


def _nearest_centroids(vectors: np.ndarray, centroids: np.ndarray, probes: int) -> np.ndarray:
    """Each vector's `probes` nearest centroids, nearest first (computed in blocks: bounded memory)."""
    out = np.empty((len(vectors), probes), dtype=np.int64)
    for start in range(0, len(vectors), 8192):
        sims = vectors[start:start + 8192] @ centroids.T
        top = np.argpartition(-sims, probes - 1, axis=1)[:, :probes]
        order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1)
        out[start:start + 8192] = np.take_along_axis(top, order, axis=1)
    return out


def _index_neighbours(vectors: np.ndarray, floor: float, bucket: int) -> Edges:
    """An inverted-file index: every vector lives in its nearest centroid's bucket and is compared, with
    exact dot products, against the buckets of its `probes` nearest centroids. Work is about
    N x probes x bucket instead of N^2; probes grow with the number of buckets to keep recall (measured by
    `bench clustering`: edge_recall against exact search)."""
    n = len(vectors)
    count = max(1, n // bucket)
    probes = min(count, max(12, count // 16))
    centroids = _centroids(vectors, count)
    nearest = _nearest_centroids(vectors, centroids, probes)
    home_order = np.argsort(nearest[:, 0], kind="stable")
    home_bounds = np.searchsorted(nearest[home_order, 0], np.arange(count + 1))
    probe_order = np.argsort(nearest.ravel(), kind="stable")
    probe_owner = np.repeat(np.arange(n), probes)[probe_order]
    probe_bounds = np.searchsorted(nearest.ravel()[probe_order], np.arange(count + 1))
    parts_a, parts_b, parts_s = [], [], []
    for c in range(count):
        members = home_order[home_bounds[c]:home_bounds[c + 1]]
        queries = probe_owner[probe_bounds[c]:probe_bounds[c + 1]]
        if len(members) and len(queries):
            sims = vectors[queries] @ vectors[members].T
            rows, cols = np.nonzero(sims >= floor)
            keep = queries[rows] != members[cols]
            parts_a.append(queries[rows][keep])
            parts_b.append(members[cols][keep])
            parts_s.append(sims[rows, cols][keep])
    a, b, sims = np.concatenate(parts_a), np.concatenate(parts_b), np.concatenate(parts_s)
    low, high = np.minimum(a, b), np.maximum(a, b)
    _, first = np.unique(low * n + high, return_index=True)  # each pair once, though both ends found it
    return low[first], high[first], sims[first]


def vector_pairs(vectors: np.ndarray, params: Params) -> list[Pair]:
    """Pairs at cosine >= floor among unit vectors (one scope), each pair once."""
    if len(vectors) < 2:
        return []
    a, b, sims = (_exact_neighbours(vectors, params.cosine_floor) if len(vectors) <= params.exact_limit
                  else _index_neighbours(vectors, params.cosine_floor, params.bucket))
    return [Pair(x, y, s, "cosine") for x, y, s in zip(a.tolist(), b.tolist(), sims.tolist(), strict=True)]


def candidate_pairs(items: Sequence[Item], vectors: np.ndarray | None, has_vector: Sequence[bool],
                    params: Params) -> list[Pair]:
    """All candidate pairs, each within one scope. `vectors[i]` is item i's unit vector where has_vector[i]."""
    pairs = entity_pairs(items, params, hub_entities(items, params))
    if vectors is None:
        return pairs
    by_scope: dict[Scope, list[int]] = defaultdict(list)
    for index, item in enumerate(items):
        if has_vector[index]:
            by_scope[item.scope].append(index)
    for members in by_scope.values():
        local = np.ascontiguousarray(vectors[members], dtype=np.float32)
        pairs += [Pair(members[p.a], members[p.b], p.strength, p.reason) for p in vector_pairs(local, params)]
    return pairs


def session_pairs(items: Sequence[Item], vectors: np.ndarray, sessions: Sequence[str | None], left: Sequence[int],
                  floor: float, clustered: Sequence[int] = ()) -> list[Pair]:
    """The second level: pairs of one scope and one session at cosine >= `floor` with at least one side in `left`
    (memories with a vector that the first level clustered with nothing), the other in `left` or `clustered` (the
    first level's members). Turns of one conversation about one thing are often worded too differently for the
    first level's floor; said together, they read as one account."""
    by_session: dict[tuple[Scope, str], list[int]] = defaultdict(list)
    for index in [*left, *clustered]:
        session = sessions[index]
        if session is not None:
            by_session[(items[index].scope, session)].append(index)
    alone = set(left)
    pairs = []
    for members in by_session.values():
        local = np.ascontiguousarray(vectors[members], dtype=np.float32)
        sims = local @ local.T
        a, b = np.nonzero(np.triu(sims >= floor, 1))
        pairs += [Pair(members[x], members[y], float(sims[x, y]), "session")
                  for x, y in zip(a.tolist(), b.tolist(), strict=True) if members[x] in alone or members[y] in alone]
    return pairs


def capped_union_find(n: int, pairs: Sequence[Pair], max_cluster: int, *, times: Sequence[float] | None = None,
                      max_span: float | None = None) -> list[list[int]]:
    """Clusters of >= 2 members, strongest links first, never larger than max_cluster and, given the members'
    `times`, never spanning more than `max_span` (a merged memory is dated by its newest member: it must not
    carry statements much older than that date)."""
    parent = list(range(n))
    size = [1] * n
    first = list(times) if times is not None else [0.0] * n
    last = list(first)
    span = float("inf") if max_span is None else max_span

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pair in sorted(pairs, key=lambda p: (-p.strength, p.a, p.b)):
        ra, rb = root(pair.a), root(pair.b)
        if ra != rb and size[ra] + size[rb] <= max_cluster and max(last[ra], last[rb]) - min(first[ra],
                                                                                             first[rb]) <= span:
            if size[ra] < size[rb]:
                ra, rb = rb, ra
            parent[rb] = ra
            size[ra] += size[rb]
            first[ra], last[ra] = min(first[ra], first[rb]), max(last[ra], last[rb])
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(n):
        groups[root(i)].append(i)
    return sorted((g for g in groups.values() if len(g) >= 2), key=lambda g: g[0])


def cluster(items: Sequence[Item], vectors: np.ndarray | None, has_vector: Sequence[bool],
            params: Params) -> tuple[list[list[int]], list[Pair]]:
    """Clusters (lists of item indexes) and the candidate pairs that formed them."""
    pairs = candidate_pairs(items, vectors, has_vector, params)
    return capped_union_find(len(items), pairs, params.max_cluster), pairs
