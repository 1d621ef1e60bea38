"""Reads for the jobs: who is eligible, and what a user's clustering run may touch."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any, Self

import numpy as np
from django.db import connection
from django.db.models import Count, F, Min, OuterRef, Q, QuerySet, Subquery
from django.db.models.expressions import RawSQL
from django.db.models.functions import TruncDate
from django.utils import timezone

from consolidation.domain.clustering import Item
from consolidation.domain.digests import SOURCE_TYPE as DIGEST
from consolidation.models import ConsolidationRun, LedgerEntry
from zeromem.core.domain.policy import DEFAULT_POLICY, ClusteringPolicy, Policy
from zeromem.core.policies import policies_for, policy_of
from zeromem.core.selectors import keyset_page
from zeromem.models import Memory, MemoryKind, MemoryRelation, MemorySource, MemoryState, MemoryType, Tenant

EPISODIC_TYPES = (MemoryType.EPISODIC, MemoryType.WORKING)


def recency_window(policy: ClusteringPolicy) -> timedelta:
    return timedelta(hours=policy.recency_window_hours)


def current_session_filter(*, tenant_id: int, user_id: str) -> Q | None:
    """Matches the user's current session: the session of their newest memory (a memory without a
    session_id belongs to its UTC day). None when the user has no memories."""
    newest = (Memory.objects.filter(tenant_id=tenant_id, user_id=user_id).exclude(memory_type=MemoryType.SEMANTIC)
              .order_by("-created_at", "-insertion_order").values("session_id", "created_at").first())
    if newest is None:
        return None
    if newest["session_id"]:
        return Q(session_id=newest["session_id"])
    return Q(session_id__isnull=True, created_at__date=newest["created_at"].date())


def clustering_queryset(*, tenant: Tenant, user_id: str, now: datetime, force: bool, policy: ClusteringPolicy
                        ) -> QuerySet[Memory]:
    """Active memories a clustering run may fold: episodes older than the policy's recency window and outside the
    current session (unless forced), plus the active semantic memories they may join. A window's digest joins
    no cluster: only the window's next digest folds it (`consolidation/jobs/window_digest.py`)."""
    active = Memory.objects.filter(tenant_id=tenant.id, user_id=user_id, state=MemoryState.RAW)
    episodes = active.filter(memory_type__in=EPISODIC_TYPES)
    if not force:
        episodes = episodes.filter(created_at__lt=now - recency_window(policy))
        current = current_session_filter(tenant_id=tenant.id, user_id=user_id)
        if current is not None:
            episodes = episodes.exclude(current)
    digests = Q(metadata__contains={"source_type": DIGEST})  # `@>`: false, not NULL, without the key
    return episodes | active.filter(memory_type=MemoryType.SEMANTIC).exclude(digests)


@dataclass(frozen=True)
class ClusteringBacklog:
    """A user's active episodes as an unforced clustering run sees them: what it may fold, and what the recency
    window and the current-session rule hold back (a forced run takes those too)."""

    episodes: int
    recent: int  # newer than the recency window
    current_session: int  # older than the window, but in the user's current session
    window_hours: float

    @property
    def eligible(self) -> int:
        return self.episodes - self.recent - self.current_session


def clustering_backlog(*, tenant: Tenant, user_id: str, now: datetime) -> ClusteringBacklog:
    episodes = Memory.objects.filter(tenant_id=tenant.id, user_id=user_id, state=MemoryState.RAW,
                                     memory_type__in=EPISODIC_TYPES)
    window = recency_window(policy_of(tenant).clustering)
    older = episodes.filter(created_at__lt=now - window)
    current = current_session_filter(tenant_id=tenant.id, user_id=user_id)
    total, aged = episodes.count(), older.count()
    return ClusteringBacklog(episodes=total, recent=total - aged,
                             current_session=older.filter(current).count() if current is not None else 0,
                             window_hours=window.total_seconds() / 3600)


def users_with_eligible_memories(*, now: datetime) -> list[tuple[int, str, int]]:
    """(tenant, user, eligible episodes) for users with active episodes past the shortest recency window
    (per-tenant windows are applied again by each run). Reads the partial index on raw memories."""
    shortest = min([recency_window(p.clustering) for p in policies_for().values()] or [timedelta(0)])
    rows = (Memory.objects.filter(state=MemoryState.RAW, memory_type__in=EPISODIC_TYPES,
                                  created_at__lt=now - shortest)
            .values_list("tenant_id", "user_id").annotate(episodes=Count("id")).order_by("tenant_id", "user_id"))
    return list(rows)


@dataclass(frozen=True)
class MemoryRow:
    """A memory as a job reads it: the columns reflection and the safety net need, typed."""

    id: uuid.UUID
    memory_type: MemoryType
    content: str
    content_hash: str
    created_at: datetime
    insertion_order: int
    importance: float
    window: str | None

    @property
    def is_semantic(self) -> bool:
        return self.memory_type == MemoryType.SEMANTIC

    @property
    def written(self) -> tuple[datetime, int]:
        """Sort key in the order memories were written: by created_at, then by insertion (an import of a chat gives
        every turn of a session the same created_at)."""
        return self.created_at, self.insertion_order

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def of(cls, values: dict[str, Any]) -> Self:
        """From the values() of `columns()`."""
        return cls(**{**values, "memory_type": MemoryType(values["memory_type"])})


@dataclass(frozen=True)
class ClusteringRow(MemoryRow):
    """A memory as clustering reads it: also its scope, entities, kind and the scores a merge combines."""

    namespace: str
    entity_id: str | None
    entities: tuple[str, ...]
    kind: MemoryKind
    confidence: float
    corroboration_count: int
    reward_score: float
    tags: tuple[str, ...]
    valid_from: datetime | None
    role: str
    session_id: str | None
    activation: float
    access_count: int
    features: dict[str, Any] | None  # the language reader's stored parse of its claims (None: not parsed yet)

    @property
    def said_at(self) -> datetime:
        """When the statement was made: its own validity start (its created_at where unset), never a run's time."""
        return self.valid_from or self.created_at

    @property
    def said(self) -> tuple[datetime, int]:
        """Sort key in the order statements were said: by `said_at`, then in the order they were written."""
        return self.said_at, self.insertion_order

    @classmethod
    def of(cls, values: dict[str, Any]) -> Self:
        return super().of({**values, "kind": MemoryKind(values["kind"]), "entities": tuple(values["entities"]),
                           "tags": tuple(values["tags"])})


@dataclass(frozen=True)
class Loaded:
    """A user's clustering input as plain data, in one order shared by every list."""

    ids: list[uuid.UUID]
    rows: list[ClusteringRow]
    items: list[Item]
    vectors: np.ndarray | None
    has_vector: list[bool]


def clustering_input(queryset: QuerySet[Memory], dimension: int) -> Loaded:
    # Vectors in pgvector's binary form (vector_send: a 4-byte header, then big-endian float4s): parsing 10,000
    # of them as text took longer than the query.
    values = list(queryset.order_by("created_at", "insertion_order")  # the order they were said in, reproducibly
                  .annotate(vector_bytes=RawSQL("vector_send(embedding)", []))
                  .values(*ClusteringRow.columns(), "vector_bytes"))
    has_vector = [v["vector_bytes"] is not None for v in values]
    vectors = np.zeros((len(values), dimension), dtype=np.float32)
    for index, value in enumerate(values):
        if has_vector[index]:
            vectors[index] = np.frombuffer(value["vector_bytes"], dtype=">f4", offset=4)
    rows = [ClusteringRow.of({k: v for k, v in value.items() if k != "vector_bytes"}) for value in values]
    items = [Item(scope=(r.namespace, r.entity_id, r.window), entities=frozenset(r.entities),
                  is_fact=r.kind == MemoryKind.FACT) for r in rows]
    return Loaded(ids=[r.id for r in rows], rows=rows, items=items,
                  vectors=vectors if any(has_vector) else None, has_vector=has_vector)


# --- reflection ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReflectionScope:
    tenant_id: int
    user_id: str
    entity_id: str | None  # None: user-wide, over the memories that carry no entity_id
    namespace: str = "global"

    @property
    def subject(self) -> str:
        return self.entity_id or self.user_id


def _unreflected() -> Q:
    # Memories no reflection has read: episodes (one read stays active when no passage could say it), and semantic
    # memories clustering made (reflection's own are tagged "reflection" and never feed it again).
    return Q(memory_type__in=EPISODIC_TYPES, reflected_at__isnull=True) | (
        Q(memory_type=MemoryType.SEMANTIC, reflected_at__isnull=True) & ~Q(tags__contains=["reflection"]))


def reflection_inputs(scope: ReflectionScope) -> QuerySet[Memory]:
    """Every active memory a reflection of this scope would read, whatever its session."""
    active = Memory.objects.filter(tenant_id=scope.tenant_id, user_id=scope.user_id, namespace=scope.namespace,
                                   state=MemoryState.RAW)
    active = active.filter(entity_id=scope.entity_id) if scope.entity_id else active.filter(entity_id__isnull=True)
    return active.filter(_unreflected())


def reflection_candidates(scope: ReflectionScope, *, force: bool, limit: int) -> list[MemoryRow]:
    """The newest `limit` inputs, outside the user's current session unless forced."""
    inputs = reflection_inputs(scope)
    if not force:
        current = current_session_filter(tenant_id=scope.tenant_id, user_id=scope.user_id)
        if current is not None:
            inputs = inputs.exclude(current & Q(memory_type__in=EPISODIC_TYPES))
    values = inputs.order_by("-created_at", "-insertion_order").values(*MemoryRow.columns())[:limit]
    return [MemoryRow.of(value) for value in values]


def reflection_eligible_scopes(*, policies: Mapping[int, Policy], tenant_id: int | None = None,
                               user_id: str | None = None, entity_id: str | None = None,
                               force: bool = False) -> list[ReflectionScope]:
    """Scopes with enough unreflected inputs: entities at the entity threshold, users (memories without an
    entity_id) at the user threshold, each its tenant's policy's (`policies`, by tenant id; the default policy for a
    tenant not in it); with `force`, any scope with an input. One aggregate over the partial index on raw memories."""
    def thresholds(policy: Policy) -> tuple[int, int]:
        return (1, 1) if force else (policy.reflection.entity_threshold, policy.reflection.user_threshold)

    lowest = min(min(thresholds(policy)) for policy in [*policies.values(), DEFAULT_POLICY])
    rows = Memory.objects.filter(_unreflected(), state=MemoryState.RAW)
    for name, value in (("tenant_id", tenant_id), ("user_id", user_id), ("entity_id", entity_id)):
        if value is not None:
            rows = rows.filter(**{name: value})
    if not force:
        rows = _outside_current_session(rows)
    counted = (rows.values("tenant_id", "user_id", "entity_id", "namespace").annotate(n=Count("id"))
               .filter(n__gte=lowest).order_by("tenant_id", "user_id", "entity_id", "namespace"))
    return [ReflectionScope(r["tenant_id"], r["user_id"], r["entity_id"], r["namespace"]) for r in counted
            if r["n"] >= thresholds(policies.get(r["tenant_id"], DEFAULT_POLICY))[0 if r["entity_id"] else 1]]


def _outside_current_session(rows: QuerySet[Memory]) -> QuerySet[Memory]:
    """Drop each user's current-session episodes (as `reflection_candidates` does for one user), set-based: the
    session of the user's newest episode, or its UTC day when it has no session_id, by a correlated subquery."""
    newest = (Memory.objects.filter(tenant_id=OuterRef("tenant_id"), user_id=OuterRef("user_id"))
              .exclude(memory_type=MemoryType.SEMANTIC).order_by("-created_at", "-insertion_order"))
    rows = rows.annotate(current_session=Subquery(newest.values("session_id")[:1]),
                         current_day=Subquery(newest.annotate(day=TruncDate("created_at")).values("day")[:1]))
    in_current = (Q(current_session__isnull=False, session_id=F("current_session"))
                  | Q(current_session__isnull=True, session_id__isnull=True, created_at__date=F("current_day")))
    return rows.exclude(Q(memory_type__in=EPISODIC_TYPES) & in_current)


@dataclass(frozen=True)
class PassageRow:
    id: uuid.UUID
    content: str
    content_hash: str
    vector: np.ndarray | None


def condensed_passages_of(scope: ReflectionScope, *, window: str | None, limit: int = 200) -> list[PassageRow]:
    """The scope's active condensed passages (reflection's) of this window, newest first: what a new passage of
    the same topic may grow, or only cite its episodes when it already says what they said."""
    rows = Memory.objects.filter(tenant_id=scope.tenant_id, user_id=scope.user_id, entity_id=scope.entity_id,
                                 namespace=scope.namespace, window=window, memory_type=MemoryType.SEMANTIC,
                                 state=MemoryState.RAW, tags__contains=["condensed"])
    rows = rows.order_by("-created_at")
    return [PassageRow(*values) for values in rows.values_list("id", "content", "content_hash", "embedding")[:limit]]


def cited_episodes(memory_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[tuple[uuid.UUID, str]]]:
    """Memory id → (id, text) of the episodes it cites directly that still exist (one query)."""
    cited: dict[uuid.UUID, list[tuple[uuid.UUID, str]]] = {m: [] for m in memory_ids}
    if not memory_ids:
        return cited
    links = (MemorySource.objects.filter(memory_id__in=list(memory_ids), source__isnull=False)
             .exclude(source__memory_type=MemoryType.SEMANTIC)
             .values_list("memory_id", "source_id", "source__content"))
    for memory_id, source_id, content in links:
        cited[memory_id].append((source_id, content))
    return cited


def memories_near(scope: ReflectionScope, *, vector: Sequence[float], threshold: float, excluding: Sequence[uuid.UUID],
                  limit: int = 5) -> list[tuple[str, str]]:
    """(id, text) of the scope's episodes, active or consolidated, at least `threshold` similar (cosine) to
    `vector`, nearest first."""
    entity = "m.entity_id = %s" if scope.entity_id else "m.entity_id IS NULL"
    return _nearest(where=f"m.tenant_id = %s AND m.user_id = %s AND m.namespace = %s AND {entity} "
                          "AND m.state IN ('raw', 'consolidated') AND m.memory_type <> 'semantic'",
                    params=[scope.tenant_id, scope.user_id, scope.namespace,
                            *([scope.entity_id] if scope.entity_id else [])],
                    vector=vector, threshold=threshold, excluding=excluding, limit=limit)


def _nearest(*, where: str, params: list[Any], vector: Sequence[float] | np.ndarray, threshold: float,
             excluding: Sequence[uuid.UUID], limit: int) -> list[tuple[str, str]]:
    """(id, text) of the memories matching `where` within `threshold` cosine of `vector`, nearest first: one probe
    on the vector index."""
    literal = str(list(map(float, vector)))
    with connection.cursor() as cursor:
        cursor.execute(
            # The nearest first, then the threshold: a filter on the distance inside the index scan would make
            # pgvector's iterative scan (on for every connection) walk the whole graph when nothing is near.
            f"""SELECT id, content FROM (
                    SELECT m.id, m.content, m.embedding <=> %s::vector AS distance FROM zeromem_memory m
                     WHERE {where} AND m.embedding IS NOT NULL AND NOT (m.id = ANY(%s::uuid[]))
                     ORDER BY m.embedding <=> %s::vector LIMIT %s) nearest
                 WHERE distance <= %s ORDER BY distance""",
            [literal, *params, [str(i) for i in excluding], literal, limit, 1 - threshold])
        return [(str(i), text) for i, text in cursor.fetchall()]


def memory_vectors(memory_ids: list[uuid.UUID]) -> dict[uuid.UUID, np.ndarray]:
    """The stored vectors of these memories (a memory without one is absent)."""
    return dict(Memory.objects.filter(id__in=memory_ids, embedding__isnull=False).values_list("id", "embedding"))


def user_entities(*, tenant_id: int, user_id: str, namespace: str) -> list[str]:
    """The entities the user holds memories about in this namespace (reflection files statements about one of
    them under its profile)."""
    return list(Memory.objects.filter(tenant_id=tenant_id, user_id=user_id, namespace=namespace,
                                      entity_id__isnull=False)
                .values_list("entity_id", flat=True).distinct().order_by("entity_id")[:200])


def entity_users(*, tenant_id: int, entity_id: str, namespace: str) -> list[str]:
    """The users under whom this tenant holds memories about the entity."""
    return list(Memory.objects.filter(tenant_id=tenant_id, entity_id=entity_id, namespace=namespace)
                .values_list("user_id", flat=True).distinct().order_by("user_id")[:100])


class ScopeNotFound(LookupError):
    pass


class ScopeAmbiguous(ValueError):
    pass


def reflection_scope_resolve(*, tenant_id: int, namespace: str, entity_id: str | None,
                             user_id: str | None) -> ReflectionScope:
    """The scope a reflect request names: an entity (its user found when not given), or a user's memories
    without an entity. Unknown in this tenant: ScopeNotFound; an entity under several users needs user_id."""
    if entity_id is None:
        if not Memory.objects.filter(tenant_id=tenant_id, user_id=user_id).exists():
            raise ScopeNotFound(f"no memories for user {user_id!r}")
        return ReflectionScope(tenant_id, str(user_id), None, namespace)
    users = [user_id] if user_id else entity_users(tenant_id=tenant_id, entity_id=entity_id, namespace=namespace)
    if not users or not Memory.objects.filter(tenant_id=tenant_id, user_id=users[0], entity_id=entity_id,
                                              namespace=namespace).exists():
        raise ScopeNotFound(f"no memories about entity {entity_id!r} in namespace {namespace!r}")
    if len(users) > 1:
        raise ScopeAmbiguous(f"entity {entity_id!r} has memories under {len(users)} users; pass user_id")
    return ReflectionScope(tenant_id, users[0], entity_id, namespace)


def provenance(memory_ids: list[uuid.UUID]) -> dict[uuid.UUID, frozenset[uuid.UUID]]:
    """Memory id → itself and every memory it cites, transitively (one recursive query; a deleted source still
    counts by its recorded id)."""
    table = MemorySource._meta.db_table
    closure: dict[uuid.UUID, set[uuid.UUID]] = {m: {m} for m in memory_ids}
    if not memory_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(f"""
            WITH RECURSIVE closure(root, source) AS (
                SELECT memory_id, source_memory_id FROM {table} WHERE memory_id = ANY(%s)
                UNION
                SELECT c.root, s.source_memory_id FROM closure c JOIN {table} s ON s.memory_id = c.source
            ) SELECT root, source FROM closure""", [list(memory_ids)])
        for root, source in cursor.fetchall():
            closure[root].add(source)
    return {m: frozenset(s) for m, s in closure.items()}


def consolidation_lag(tenant_id: int | None = None) -> list[tuple[int, str, float]]:
    """(tenant, user, hours) per user with active episodes: how long the oldest one has been eligible for
    clustering (its age past the tenant's recency window), most behind first."""
    policies = policies_for(tenant_ids=None if tenant_id is None else [tenant_id])
    windows = {t: recency_window(p.clustering).total_seconds() / 3600 for t, p in policies.items()}
    now = timezone.now()
    rows = (Memory.objects.filter(state=MemoryState.RAW, memory_type__in=EPISODIC_TYPES, tenant_id__in=list(windows))
            .values("tenant_id", "user_id").annotate(oldest=Min("created_at")))
    lags = [(row["tenant_id"], row["user_id"],
             round(max(0.0, (now - row["oldest"]).total_seconds() / 3600 - windows[row["tenant_id"]]), 3))
            for row in rows]
    return sorted(lags, key=lambda lag: -lag[2])


# --- runs ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RunFilter:
    tenant_id: int
    user_id: str | None = None
    entity_id: str | None = None
    kind: str | None = None
    status: str | None = None


def runs_page(*, scope: RunFilter, cursor: str | None, limit: int) -> tuple[list[ConsolidationRun], str | None]:
    """A tenant's runs, newest first, keyset-paginated like memories (stable while runs are added)."""
    runs = ConsolidationRun.objects.filter(tenant_id=scope.tenant_id)
    for name in ("user_id", "entity_id", "kind", "status"):
        if getattr(scope, name) is not None:
            runs = runs.filter(**{name: getattr(scope, name)})
    return keyset_page(runs, cursor=cursor, limit=limit)


def run_get(*, tenant_id: int, run_id: uuid.UUID, user_id: str | None = None) -> ConsolidationRun | None:
    """The run, when it is the tenant's (and, given `user_id`, about that user)."""
    runs = ConsolidationRun.objects.filter(tenant_id=tenant_id, id=run_id)
    return (runs if user_id is None else runs.filter(user_id=user_id)).first()


# --- a memory's history -------------------------------------------------------------------------------------------

HISTORY_MAX_DEPTH = 20  # citations are a tree a few levels deep; the bound only guards against a corrupted cycle
HISTORY_MAX_ROWS = 500  # sources and ledger rows shown per memory


@dataclass(frozen=True)
class ProvenanceLink:
    """One citation in a memory's provenance: `cited_by` cites `source_memory_id`, `depth` levels below the
    memory asked about (1: cited by it directly). `source` is None once the cited memory was deleted."""

    cited_by: uuid.UUID
    source_memory_id: uuid.UUID
    source_content_hash: str
    depth: int
    source: Memory | None


@dataclass(frozen=True)
class MemoryHistory:
    memory: Memory
    sources: list[ProvenanceLink]  # transitively, shallowest first
    cited_by: list[Memory]  # the memories built from this one (directly)
    relations: list[MemoryRelation]  # either way, from_memory and to_memory loaded
    ledger: list[LedgerEntry]  # oldest first
    runs: list[ConsolidationRun]  # the runs behind those ledger rows, oldest first


def provenance_links(memory_id: uuid.UUID) -> list[ProvenanceLink]:
    """Every citation below a memory, transitively, in one recursive query (a source reached twice keeps its
    shallowest place); deleted sources keep their recorded id and content hash."""
    table = MemorySource._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"""
            WITH RECURSIVE tree(cited_by, source, content_hash, depth) AS (
                SELECT memory_id, source_memory_id, source_content_hash, 1 FROM {table} WHERE memory_id = %s
                UNION
                SELECT s.memory_id, s.source_memory_id, s.source_content_hash, t.depth + 1
                  FROM tree t JOIN {table} s ON s.memory_id = t.source WHERE t.depth < %s
            ) SELECT DISTINCT ON (cited_by, source) cited_by, source, content_hash, depth FROM tree
               ORDER BY cited_by, source, depth""", [memory_id, HISTORY_MAX_DEPTH])
        rows = sorted(cursor.fetchall(), key=lambda row: (row[3], str(row[0]), str(row[1])))[:HISTORY_MAX_ROWS]
    found = Memory.objects.in_bulk([row[1] for row in rows])
    return [ProvenanceLink(cited_by=cited_by, source_memory_id=source, source_content_hash=content_hash,
                           depth=depth, source=found.get(source)) for cited_by, source, content_hash, depth in rows]


def memory_ledger(*, tenant_id: int, memory_id: uuid.UUID) -> list[LedgerEntry]:
    """The ledger rows about a memory, oldest first: those naming it among their memories, and the merges and
    reflections that wrote it."""
    key = str(memory_id)
    about = (Q(memory_ids__contains=[key]) | Q(outputs__semantic_id=key)
             | Q(outputs__semantic_ids__contains=[key]))
    return list(LedgerEntry.objects.filter(about, tenant_id=tenant_id).order_by("created_at", "id")
                [:HISTORY_MAX_ROWS])


def memory_history(*, memory: Memory) -> MemoryHistory:
    """Where a memory came from and what happened to it: its provenance (transitively), the memories built from
    it, the relations either way (what superseded it, what it superseded, flagged contradictions), the ledger
    trail and the runs behind it."""
    ledger = memory_ledger(tenant_id=memory.tenant_id, memory_id=memory.id)
    run_ids = list(dict.fromkeys(entry.run_id for entry in ledger if entry.run_id is not None))
    relations = (MemoryRelation.objects.filter(Q(from_memory=memory) | Q(to_memory=memory), tenant_id=memory.tenant_id)
                 .select_related("from_memory", "to_memory").order_by("created_at", "id"))
    cited_by = (Memory.objects.filter(tenant_id=memory.tenant_id, source_links__source_memory_id=memory.id)
                .order_by("created_at", "id"))
    return MemoryHistory(memory=memory, sources=provenance_links(memory.id), cited_by=list(cited_by),
                         relations=list(relations), ledger=ledger,
                         runs=list(ConsolidationRun.objects.filter(id__in=run_ids).order_by("created_at", "id")))
