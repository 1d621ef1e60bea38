"""Reads of the core app: hybrid search, listing with cursors, API-key lookup. Every read is tenant-scoped."""

from __future__ import annotations

import base64
import hmac
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import DateTimeField, Q, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from consolidation.domain.contradictions import newer_first
from zeromem.core import keycache
from zeromem.core.adapters.embeddings import embed_query
from zeromem.core.domain.policy import SearchPolicy
from zeromem.core.domain.ranking import K1, Candidate, CorpusStats, Ranked, fuse, idf
from zeromem.core.domain.transitions import SUPERSEDED
from zeromem.core.services import KEY_PREFIX, hash_secret, month_start
from zeromem.language.default import DefaultReader
from zeromem.models import ApiKey, LlmUsage, Memory, MemorySource, MemoryState


@dataclass(frozen=True)
class MemoryFilter:
    """Which memories a read covers. `as_of`: what was true at that time by the statements' own dates —
    valid_from (its created_at where unset) ≤ as_of < valid_to (unset: still valid) — superseded statements
    included. `include_history`: superseded and consolidated memories as well as `states`."""

    tenant_id: int
    user_id: str | None = None
    entity_id: str | None = None
    namespace: str | None = None
    memory_types: Sequence[str] | None = None
    states: Sequence[str] | None = (MemoryState.RAW,)  # active memories only, unless asked
    created_after: datetime | None = None
    created_before: datetime | None = None
    as_of: datetime | None = None
    include_history: bool = False

    @property
    def state_list(self) -> list[str]:
        """The states asked for, plus consolidated with `include_history`; [] = any state."""
        if not self.states:
            return []
        extra = [MemoryState.CONSOLIDATED] if self.include_history else []
        return list(dict.fromkeys([*self.states, *extra]))

    @property
    def with_superseded(self) -> bool:
        """Superseded statements (archived) count too: they were true until their successor's date."""
        return bool(self.states) and (self.as_of is not None or self.include_history)


def _scope_sql(scope: MemoryFilter) -> tuple[str, list[Any]]:
    """WHERE clause (on alias m) for a scope; used by the raw search queries."""
    clauses: list[str] = ["m.tenant_id = %s"]
    params: list[Any] = [scope.tenant_id]
    for column, value in (("user_id", scope.user_id), ("entity_id", scope.entity_id),
                          ("namespace", scope.namespace)):
        if value is not None:
            clauses.append(f"m.{column} = %s")
            params.append(value)
    if scope.state_list:
        superseded = " OR (m.state = %s AND m.archive_reason = %s)" if scope.with_superseded else ""
        clauses.append(f"(m.state = ANY(%s){superseded})")
        params += [scope.state_list] + ([MemoryState.ARCHIVED, SUPERSEDED] if scope.with_superseded else [])
    if scope.as_of is not None:
        clauses.append("coalesce(m.valid_from, m.created_at) <= %s AND (m.valid_to IS NULL OR m.valid_to > %s)")
        params += [scope.as_of, scope.as_of]
    if scope.memory_types:
        clauses.append("m.memory_type = ANY(%s)")
        params.append(list(scope.memory_types))
    if scope.created_after:
        clauses.append("m.created_at >= %s")
        params.append(scope.created_after)
    if scope.created_before:
        clauses.append("m.created_at < %s")
        params.append(scope.created_before)
    return " AND ".join(clauses), params


def memories_filter(scope: MemoryFilter) -> QuerySet[Memory]:
    queryset = Memory.objects.filter(tenant_id=scope.tenant_id)
    for field_name, value in (("user_id", scope.user_id), ("entity_id", scope.entity_id),
                              ("namespace", scope.namespace)):
        if value is not None:
            queryset = queryset.filter(**{field_name: value})
    if scope.state_list:
        states = Q(state__in=scope.state_list)
        if scope.with_superseded:
            states |= Q(state=MemoryState.ARCHIVED, archive_reason=SUPERSEDED)
        queryset = queryset.filter(states)
    if scope.as_of is not None:
        queryset = (queryset.alias(valid_since=Coalesce("valid_from", "created_at"))
                    .filter(Q(valid_since__lte=scope.as_of) & (Q(valid_to__isnull=True) | Q(valid_to__gt=scope.as_of))))
    if scope.memory_types:
        queryset = queryset.filter(memory_type__in=scope.memory_types)
    if scope.created_after:
        queryset = queryset.filter(created_at__gte=scope.created_after)
    if scope.created_before:
        queryset = queryset.filter(created_at__lt=scope.created_before)
    return queryset


# --- search ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SearchHit:
    memory: Memory
    score: float
    bm25: float
    cosine: float | None
    earlier_than: uuid.UUID | None = None  # a newer result that states the same attribute with another value


@dataclass(frozen=True)
class QueryTerms:
    """The query's lexemes (as the search configuration normalises them) and the BM25 statistics of the scope."""

    lexemes: list[str]
    stats: CorpusStats

    def pooled(self, pool: int) -> list[str]:
        """The lexemes that pick the lexical pool: the rarest first, while the memories having them stay within
        POOL_MATCHES pools. Picking the pool ranks every memory that has one of them, so a lexeme common in a big
        user's memories would cost more than the rest of the search; BM25 weighs it low, and it still ranks."""
        budget, chosen = POOL_MATCHES * pool, []
        for lexeme in sorted(self.lexemes, key=lambda found: (self.stats.doc_freqs.get(found, 0), found)):
            budget -= self.stats.doc_freqs.get(lexeme, 0)
            if budget < 0:
                break
            chosen.append(lexeme)
        return chosen


POOL_MATCHES = 20  # pools' worth of memories the lexical pool may read (4,000 at the default pool of 200)
EXACT_VECTOR_POOL = 5_000  # memories in a scope up to which its vector pool is exact (a sort of a few ms)


def query_terms(scope: MemoryFilter, query: str) -> QueryTerms:
    """One statement: the query's lexemes and, from the counters kept at ingestion, the scope's document count,
    total length and the document frequency of each lexeme (sums: the counters are deltas, `search_stats_add`)."""
    user = "AND user_id = %(user)s" if scope.user_id is not None else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""WITH lexemes AS (SELECT DISTINCT lexeme FROM unnest(to_tsvector(%(config)s::regconfig, %(query)s)))
                SELECT array(SELECT lexeme FROM lexemes ORDER BY 1),
                       (SELECT coalesce(json_object_agg(term, df), '{{}}'::json)
                          FROM (SELECT term, sum(doc_count) AS df FROM zeromem_termstat
                                 WHERE tenant_id = %(tenant)s {user} AND term IN (SELECT lexeme FROM lexemes)
                                 GROUP BY term HAVING sum(doc_count) > 0) found),
                       totals.docs, totals.length
                  FROM (SELECT coalesce(sum(doc_count), 0) AS docs, coalesce(sum(total_length), 0) AS length
                          FROM zeromem_usersearchstats WHERE tenant_id = %(tenant)s {user}) totals""",
            {"config": settings.ZEROMEMORY_SEARCH_CONFIG, "query": query, "tenant": scope.tenant_id,
             "user": scope.user_id})
        lexemes, doc_freqs, docs, length = cursor.fetchone()
    stats = CorpusStats(doc_count=int(docs), avg_length=int(length) / docs if docs else 1.0,
                        doc_freqs={term: int(df) for term, df in doc_freqs.items()})
    return QueryTerms(list(lexemes), stats)


# The scope key that leads the full-text GIN index (migration 0012: GIN indexes no plain column without btree_gin),
# in the index's own words, so the planner matches it: with it, the index scan reads this user's matches only.
_SCOPE_KEY = "ARRAY[m.tenant_id::text || ':' || m.user_id::text]"


def _scope_key_sql(scope: MemoryFilter) -> tuple[str, list[Any]]:
    """The scope key's condition, beside the scope's own (which stays, so a small user can still be read through
    its btree); none for a search that names no user."""
    if scope.user_id is None:
        return "", []
    return f" AND {_SCOPE_KEY} @> ARRAY[%s]", [f"{scope.tenant_id}:{scope.user_id}"]


def _or_tsquery(lexemes: Sequence[str]) -> str:
    # Lexemes are already normalised by the search configuration; quote them for a plain tsquery.
    return " | ".join("'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'" for lexeme in lexemes)


# Columns a search result carries: every field but the vector (read only to compare, never sent back).
_RESULT_FIELDS = [f for f in Memory._meta.concrete_fields if f.attname != "embedding"]
# What ranking alone needs (internal measures that only count characters): the id, the role and the text.
_RANK_FIELDS = [Memory._meta.get_field(name) for name in ("id", "role", "content")]


def _pooled_rows(scope: MemoryFilter, terms: QueryTerms, vector: list[float] | None, pool: int,
                 fields: Sequence[Any], carry: Carry | None = None) -> list[tuple[Any, ...]]:
    """One statement: the lexical pool (an OR full-text query; ts_rank only picks it, the newest first among matches
    ranked alike, so one store gives one pool whatever order its rows lie in), the vector pool (HNSW,
    settings per connection: zeromem.settings) and, for each memory in either, its `fields` (the id first),
    whether it has a vector, its cosine to the query, its length and the query lexemes' counts in it. Each pool
    is materialised. Django's psycopg cursor binds parameters on the client, so the server plans the tsquery and
    the vector as the literals they arrive as (planned as server-side parameters, the pools were planned
    generically and far slower for big users); as parameters rather than spliced into the text, the statement
    stays short and psycopg reuses its parse of it (a statement with a vector spliced in, ~16 KB, was re-parsed
    at every search). With `carry`, only the candidates it picks carry the `fields` ranking does not need
    (`_carried_rows`), the others None, and each row ends with whether it carries them."""
    where, scope_params = _scope_sql(scope)
    pooled, every = _or_tsquery(terms.pooled(pool)), _or_tsquery(terms.lexemes)
    literal = _vector_text(vector) if vector is not None else None
    pools, params = [], []
    if pooled:
        keyed, key_params = _scope_key_sql(scope)
        pools.append(f"""(SELECT m.id FROM zeromem_memory m WHERE {where}{keyed} AND m.search_vector @@ %s::tsquery
                          ORDER BY ts_rank(m.search_vector, %s::tsquery) DESC, m.created_at DESC,
                                   m.insertion_order DESC LIMIT {int(pool)})""")
        params += [*scope_params, *key_params, pooled, pooled]
    if literal:
        # A scope of a few thousand memories is compared exactly (its rows through the btree on the scope, then
        # sorted): "+ 0" keeps the planner off the HNSW index, whose filtered scan would walk the graph through
        # the rest of the tenant looking for a pool's worth of this small user's rows.
        exact = " + 0" if terms.stats.doc_count <= EXACT_VECTOR_POOL else ""
        pools.append(f"""(SELECT m.id FROM zeromem_memory m WHERE {where} AND m.embedding IS NOT NULL
                          ORDER BY (m.embedding <=> %s::vector){exact} LIMIT {int(pool) // 2})""")
        params += [*scope_params, literal]
    if not pools:
        return []
    if carry is not None:
        return _carried_rows(pools, params, terms, literal, fields, carry)
    columns = ", ".join(_column(f) for f in fields)
    cosine = "1 - (m.embedding <=> %s::vector)" if literal else "NULL"
    # The query lexemes' counts: the vector narrowed to them first (weights set on them, then filtered on), so
    # unnest builds a row for each of them, not for each of the memory's lexemes (that cost ~1.5 ms a search).
    counts = ("""CASE WHEN m.search_vector @@ %s::tsquery THEN
                    (SELECT array_agg(ARRAY[t.lexeme, coalesce(array_length(t.positions, 1), 1)::text])
                       FROM unnest(ts_filter(setweight(setweight(m.search_vector, 'D'), 'A', %s::text[]),
                                             '{a}')) t) END""" if every else "NULL")
    with connection.cursor() as cursor:
        cursor.execute(
            f"""WITH pooled AS MATERIALIZED ({" UNION ".join(pools)})
                SELECT {columns}, m.embedding IS NOT NULL, {cosine}, length(m.search_vector), {counts}
                  FROM zeromem_memory m WHERE m.id IN (SELECT id FROM pooled)""",
            [*params, *([literal] if literal else []), *([every, list(terms.lexemes)] if every else [])])
        return cursor.fetchall()


@dataclass(frozen=True)
class Carry:
    """Which pooled candidates carry every field: the first `rows` by the `policy`'s fused score as PostgreSQL
    works it out, from the `stats`. Python's ranking (`fuse`) stays the ranking; PostgreSQL's order of the same
    floats may differ from it in the last bits, so a search asks for a margin past its top_k (`CARRY_MARGIN`)."""

    rows: int
    policy: SearchPolicy
    stats: CorpusStats


CARRY_MARGIN = 10


def _carried_rows(pools: list[str], params: list[Any], terms: QueryTerms, literal: str | None,
                  fields: Sequence[Any], carry: Carry) -> list[tuple[Any, ...]]:
    """The pools' candidates with what ranking needs (as `_pooled_rows` reads it), their BM25 and fused score
    worked out as `fuse` does, and the other `fields` read only for the first `carry.rows` of them by that score
    (ties by id, as `fuse` breaks them). The rest of a pool's columns — the features' JSON, eight timestamps —
    cost more than the ranking: ~3 ms of CPU a search for a pool of ~250 that gives ten hits."""
    every, lexemes, stats, policy = _or_tsquery(terms.lexemes), list(terms.lexemes), carry.stats, carry.policy
    docs = max(stats.doc_count, 1)
    ranked = {f.attname for f in _RANK_FIELDS}
    columns = ", ".join(_column(f, "c") if f.attname in ranked else _column(f, "h") for f in fields)
    cosine = "1 - (m.embedding <=> %s::vector)" if literal else "NULL::float8"
    # BM25 as `bm25_scores` sums it, term by term in the vector's (sorted) order.
    counted = """LEFT JOIN LATERAL (
                   SELECT array_agg(ARRAY[t.lexeme, n::text]) AS counts,
                          sum((%s::float8[])[array_position(%s::text[], t.lexeme)] * n * %s::float8
                              / (n + %s::float8 * (1 - %s::float8 + %s::float8 * length(m.search_vector) / %s::float8)))
                            AS bm25
                     FROM unnest(ts_filter(setweight(setweight(m.search_vector, 'D'), 'A', %s::text[]), '{a}')) t,
                          coalesce(array_length(t.positions, 1), 1) n) x ON m.search_vector @@ %s::tsquery"""
    counts = "x.counts, x.bm25" if every else "NULL::text[] AS counts, NULL::float8 AS bm25"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""WITH pooled AS MATERIALIZED ({" UNION ".join(pools)}),
                c AS MATERIALIZED (
                  SELECT m.id, m.role, m.content, m.embedding IS NOT NULL AS has_vector, {cosine} AS cosine,
                         length(m.search_vector) AS length, {counts}
                    FROM zeromem_memory m {counted if every else ""} WHERE m.id IN (SELECT id FROM pooled)),
                placed AS (
                  SELECT c.id, row_number() OVER (ORDER BY
                           CASE WHEN c.role = 'assistant' THEN %s::float8 ELSE 1.0 END
                             * ((1 - %s::float8) * coalesce(c.bm25, 0)
                                / (SELECT coalesce(nullif(max(bm25), 0), 1) FROM c)
                                + %s::float8 * greatest(coalesce(c.cosine, 0), 0)) DESC,
                           c.id::text COLLATE "C") AS place
                    FROM c)
                SELECT {columns}, c.has_vector, c.cosine, c.length, c.counts, h.id IS NOT NULL
                  FROM c LEFT JOIN (placed JOIN zeromem_memory h ON h.id = placed.id AND placed.place <= %s)
                         ON placed.id = c.id""",
            [*params, *([literal] if literal else []),
             *([[idf(stats.doc_freqs.get(t, 0), docs) for t in lexemes], lexemes, K1 + 1, K1, policy.bm25_b,
                policy.bm25_b, stats.avg_length or 1.0, lexemes, every] if every else []),
             policy.assistant_weight, policy.vector_weight, policy.vector_weight, carry.rows])
        return cursor.fetchall()


def _column(field: Any, alias: str = "m") -> str:
    """A pooled column; timestamps as text: only the few hits become Memory objects (`_memory` reads them then),
    and Django's timestamp loader is pure Python — the pool's eight timestamps a row cost ~5 ms a search."""
    return f"{alias}.{field.column}::text" if isinstance(field, DateTimeField) else f"{alias}.{field.column}"


def _vector_text(vector: Sequence[float]) -> str:
    """pgvector's text form; 9 significant digits give back the very float4 PostgreSQL stores."""
    return "[" + ",".join(f"{x:.9g}" for x in vector) + "]"


@dataclass(frozen=True)
class RankingPool:
    """What one query is ranked from: its lexemes and vector, the scope's BM25 statistics, the pooled memories as
    ranking candidates with their lengths in characters, and the search policy that ranks them."""

    lexemes: list[str]
    stats: CorpusStats
    vector: list[float] | None
    candidates: list[Candidate]
    chars: dict[str, int]  # candidate id → characters
    policy: SearchPolicy


@dataclass(frozen=True)
class Unwritten:
    """A text not written yet, as search would see it: a key (its own id, or that of the memory whose text it
    would replace), its length in characters, its vector and its lexemes with their counts (`texts_lexemes`)."""

    key: uuid.UUID
    chars: int
    vector: Sequence[float] | None
    lexemes: Mapping[str, int]
    replaced: Mapping[str, int] | None = None  # the lexemes of the text it replaces (None: a memory of its own)


def _pool(scope: MemoryFilter, query: str, fields: Sequence[Any], policy: SearchPolicy, carried: int | None = None
          ) -> tuple[dict[str, tuple[Any, ...]], RankingPool]:
    """Two statements, no ORM hydration: the query's terms, then the pools with everything ranking needs and
    the `fields` of each candidate (with `carried`, of that many: `Carry`); the candidates' rows by id, and the
    pool."""
    terms = query_terms(scope, query)
    vector = embed_query(query)
    carry = Carry(carried, policy, terms.stats) if carried is not None else None
    rows = {str(row[0]): row for row in _pooled_rows(scope, terms, vector, policy.pool, fields, carry)}
    role, content = (list(fields).index(Memory._meta.get_field(name)) for name in ("role", "content"))
    cosine, length, counts = len(fields) + 1, len(fields) + 2, len(fields) + 3  # after whether it has a vector
    assistant = policy.assistant_weight
    candidates = [Candidate(id=id_, cosine=row[cosine], length=row[length] or 0,
                            term_freqs={term: int(n) for term, n in row[counts] or []},
                            weight=assistant if row[role] == "assistant" else 1.0) for id_, row in rows.items()]
    return rows, RankingPool(list(terms.lexemes), terms.stats, vector, candidates,
                             {id_: len(row[content]) for id_, row in rows.items()}, policy)


def _ranked(scope: MemoryFilter, query: str, *, top_k: int, fields: Sequence[Any], policy: SearchPolicy,
            carried: int | None = None) -> tuple[dict[str, tuple[Any, ...]], list[Ranked]]:
    rows, pool = _pool(scope, query, fields, policy, carried)
    return rows, _fuse(pool.candidates, pool.stats, top_k=top_k, policy=policy)


def _fuse(candidates: Sequence[Candidate], stats: CorpusStats, *, top_k: int, policy: SearchPolicy) -> list[Ranked]:
    return fuse(candidates, stats, vector_weight=policy.vector_weight, top_k=top_k, length_norm=policy.bm25_b)


def ranking_pool(*, scope: MemoryFilter, query: str, policy: SearchPolicy) -> RankingPool:
    """The candidates a search for `query` ranks (two statements), to be ranked by `pool_ranked`."""
    return _pool(scope, query, _RANK_FIELDS, policy)[1]


def pool_ranked(pool: RankingPool, *, top_k: int, gone: Collection[uuid.UUID] = (),
                added: Sequence[Unwritten] = ()) -> list[tuple[uuid.UUID, int]]:
    """(id, characters) of the top_k as `memories_ranked` ranks the pool's query — or as it would rank it with
    the memories `gone` out of search and the `added` texts in it (an added key replaces the memory of that id),
    the BM25 statistics counting them. An added text outside the pools is ranked anyway."""
    replaced = {str(i) for i in gone} | {str(u.key) for u in added}
    candidates = [c for c in pool.candidates if c.id not in replaced]
    candidates += [Candidate(id=str(u.key), cosine=_cosine(pool.vector, u.vector), length=len(u.lexemes),
                             term_freqs={term: u.lexemes[term] for term in pool.lexemes if term in u.lexemes})
                   for u in added]
    chars = {**pool.chars, **{str(u.key): u.chars for u in added}}
    return [(uuid.UUID(r.id), chars[r.id])
            for r in _fuse(candidates, _stats_with(pool, added), top_k=top_k, policy=pool.policy)]


def _stats_with(pool: RankingPool, added: Sequence[Unwritten]) -> CorpusStats:
    """The BM25 statistics once the `added` texts are counted in as ingestion counts them (a memory leaving
    search stays counted, as it does in the store)."""
    if not added:
        return pool.stats
    docs, total = pool.stats.doc_count, pool.stats.avg_length * pool.stats.doc_count
    doc_freqs = dict(pool.stats.doc_freqs)
    for text, sign in [(u.lexemes, 1) for u in added] + [(u.replaced, -1) for u in added if u.replaced is not None]:
        docs, total = docs + sign, total + sign * len(text)
        for term in pool.lexemes:
            if term in text:
                doc_freqs[term] = doc_freqs.get(term, 0) + sign
    return CorpusStats(doc_count=docs, avg_length=total / docs if docs else 1.0, doc_freqs=doc_freqs)


def _cosine(a: Sequence[float] | None, b: Sequence[float] | None) -> float | None:
    if a is None or b is None:
        return None
    x, y = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return float(x @ y / max(float(np.linalg.norm(x) * np.linalg.norm(y)), 1e-9))


def texts_lexemes(texts: Sequence[str]) -> list[dict[str, int]]:
    """Each text's lexemes with their counts, as the memories' search vector would hold them (one statement)."""
    if not texts:
        return []
    with connection.cursor() as cursor:
        cursor.execute("""SELECT x.ord, t.lexeme, coalesce(array_length(t.positions, 1), 1)
                            FROM unnest(%s::text[]) WITH ORDINALITY AS x(body, ord),
                                 unnest(to_tsvector(%s::regconfig, coalesce(x.body, ''))) AS t""",
                       [list(texts), settings.ZEROMEMORY_SEARCH_CONFIG])
        found: list[dict[str, int]] = [{} for _ in texts]
        for ordinal, lexeme, count in cursor.fetchall():
            found[ordinal - 1][lexeme] = int(count)
    return found


def memories_search(*, scope: MemoryFilter, query: str, policy: SearchPolicy, top_k: int = 10,
                    min_score: float | None = None, newer_first: bool = True) -> list[SearchHit]:
    """Hybrid search: a lexical pool (full-text OR query) and a vector pool (HNSW), re-ranked together by
    BM25 fused with cosine similarity, as the tenant's search `policy` weighs them. A memory without an embedding
    still ranks by its words. `min_score` (what agents get: the policy's min_score) drops hits scored at or below
    it; internal measures (canaries, evaluate) leave it None, so their figures stay comparable with earlier runs.
    `newer_first`: move the newer of two results stating one attribute above the older (what agents get). Only the
    hits become Memory objects."""
    hits = _hits(scope, query, policy=policy, top_k=top_k, min_score=min_score, carried=top_k + CARRY_MARGIN)
    return newer_statements_first(hits, query=query, recency=policy.answering_recency) if newer_first else hits


def _hits(scope: MemoryFilter, query: str, *, policy: SearchPolicy, top_k: int, min_score: float | None,
          carried: int) -> list[SearchHit]:
    """The ranked hits as Memory objects. The pool statement reads every field of the first `carried` candidates
    by PostgreSQL's reckoning of the ranking (`Carry`); a hit it did not read (their orders parting past the
    margin) is read by id, in one more statement."""
    rows, ranked = _ranked(scope, query, top_k=top_k, fields=_RESULT_FIELDS, policy=policy, carried=carried)
    ranked = [r for r in ranked if min_score is None or r.score > min_score]
    unread = [r.id for r in ranked if not rows[r.id][-1]]
    if unread:
        rows.update(_rows_by_id(unread))
    return [SearchHit(memory=_memory(rows[r.id]), score=r.score, bm25=r.bm25, cosine=r.cosine) for r in ranked]


def _rows_by_id(ids: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """Result rows (every field, then whether it has a vector) by id."""
    with connection.cursor() as cursor:
        cursor.execute(f"""SELECT {", ".join(_column(f) for f in _RESULT_FIELDS)}, m.embedding IS NOT NULL
                             FROM zeromem_memory m WHERE m.id = ANY(%s::uuid[])""", [list(ids)])
        return {str(row[0]): row for row in cursor.fetchall()}


def memories_ranked(*, scope: MemoryFilter, query: str, top_k: int, policy: SearchPolicy
                    ) -> list[tuple[uuid.UUID, int]]:
    """(id, characters) of the top_k hits in the order `memories_search` ranks them without the newer-first
    reordering: what a budget-recall measure needs (the retrieval safety net), read without building a Memory
    per hit — that hydration cost a small user's run more than the searches."""
    return pool_ranked(ranking_pool(scope=scope, query=query, policy=policy), top_k=top_k)


def _memory(row: tuple[Any, ...]) -> Memory:
    """A result row as a Memory without a query: its vector deferred, `has_vector` saying whether it has one."""
    memory = Memory.from_db(connection.alias, _RESULT_NAMES,
                            [value if value is None or load is None else load(value)
                             for load, value in zip(_RESULT_LOADERS, row, strict=False)])
    memory.has_vector = row[len(_RESULT_FIELDS)]
    return memory


def _loader(field: Any) -> Callable[[Any], Any] | None:
    """How a result column's value becomes the field's (None: as it comes); a NULL stays None."""
    if isinstance(field, DateTimeField):  # PostgreSQL's ISO text of a timestamptz (`_column`)
        return datetime.fromisoformat
    if hasattr(field, "from_db_value"):
        return lambda value: field.from_db_value(value, None, connection)
    return None


_RESULT_NAMES = [f.attname for f in _RESULT_FIELDS]
_RESULT_LOADERS = [_loader(f) for f in _RESULT_FIELDS]


_READER = DefaultReader()


def newer_statements_first(hits: list[SearchHit], *, query: str | None = None, recency: float = 0.0
                           ) -> list[SearchHit]:
    """Where two results state the same attribute with different values, the newer (by the statements' own
    dates) ranks just above the older, which is marked `earlier_than` it; where the query asks what holds now, the
    results about what it asks are ranked again with `recency` added for the newest (`newer_first`)."""
    memories = [h.memory for h in hits]
    ordered = newer_first([m.content for m in memories], [m.valid_from or m.created_at for m in memories],
                          [m.role for m in memories], reader=_READER, query=query,
                          features=[m.features for m in memories], scores=[h.score for h in hits], recency=recency)
    return [replace(hits[o.index], earlier_than=None if o.earlier_than is None else memories[o.earlier_than].id)
            for o in ordered]


# --- listing -----------------------------------------------------------------------------------------------

class InvalidCursor(ValueError):
    pass


def encode_cursor(row: Any) -> str:
    """The position after `row` (anything with `created_at` and `id`) in a newest-first keyset page."""
    raw = f"{row.created_at.isoformat()}|{row.id}"
    return base64.urlsafe_b64encode(raw.encode()).decode()


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        created, memory_id = base64.urlsafe_b64decode(cursor.encode()).decode().split("|")
        return datetime.fromisoformat(created), uuid.UUID(memory_id)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidCursor("cursor is not one this API issued") from exc


def memories_page(*, scope: MemoryFilter, cursor: str | None, limit: int) -> tuple[list[Memory], str | None]:
    """Newest first, keyset-paginated on (created_at, id) so pages stay stable while memories arrive."""
    return keyset_page(memories_filter(scope), cursor=cursor, limit=limit)


def keyset_page(queryset: QuerySet[Any], *, cursor: str | None, limit: int) -> tuple[list[Any], str | None]:
    """Newest first on (created_at, id), `limit` rows after the cursor, and the cursor of the next page."""
    queryset = queryset.order_by("-created_at", "-id")
    if cursor:
        created, row_id = decode_cursor(cursor)
        queryset = queryset.filter(created_at__lte=created).exclude(created_at=created, id__gte=row_id)
    page = list(queryset[:limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return page, (encode_cursor(page[-1]) if more and page else None)


def memory_get(*, tenant_id: int, memory_id: uuid.UUID, user_id: str | None = None) -> Memory | None:
    """The memory, when it is in the tenant (and, given `user_id`, that user's)."""
    memories = Memory.objects.filter(tenant_id=tenant_id, id=memory_id)
    return (memories if user_id is None else memories.filter(user_id=user_id)).first()


def memory_by_key(*, tenant_id: int, user_id: str, entity_id: str | None, namespace: str, key: str,
                  lock: bool = False) -> Memory | None:
    """The memory a key names in its scope, if any; `lock`: row-locked for the caller's transaction."""
    memories = Memory.objects.select_for_update() if lock else Memory.objects.all()
    return memories.filter(tenant_id=tenant_id, user_id=user_id, entity_id=entity_id, namespace=namespace,
                           key=key).first()


def memory_sources(*, memory: Memory) -> list[MemorySource]:
    return list(memory.source_links.select_related("source").order_by("created_at"))


# --- API keys ----------------------------------------------------------------------------------------------

def apikey_authenticate(*, secret: str) -> ApiKey | None:
    """The live key for a presented secret: looked up by its prefix, compared in constant time, and kept for
    ZEROMEMORY_KEY_CACHE_SECONDS in this process (so a request usually reads nothing to authenticate; a revoked
    key is refused by every process within that time)."""
    if not secret.startswith(KEY_PREFIX) or secret.count("_") < 2:
        return None
    hashed = hash_secret(secret)
    cached = keycache.get(hashed)
    if cached is not None:
        return cached
    prefix = secret[len(KEY_PREFIX):].split("_", 1)[0]
    key = ApiKey.objects.select_related("tenant").filter(prefix=prefix, revoked_at__isnull=True).first()
    if key is None or not hmac.compare_digest(key.secret_hash, hashed):
        return None
    keycache.put(hashed, key)
    return key


# --- LLM usage ---------------------------------------------------------------------------------------------

def llm_tokens_this_month(*, tenant_id: int, now: datetime | None = None) -> int:
    totals = LlmUsage.objects.filter(tenant_id=tenant_id, month=month_start(now or timezone.now())).aggregate(
        prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"))
    return int((totals["prompt"] or 0) + (totals["completion"] or 0))
