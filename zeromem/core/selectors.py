"""Reads of the core app: hybrid search, listing with cursors, API-key lookup. Every read is tenant-scoped."""

from __future__ import annotations

import base64
import hmac
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from consolidation.domain.contradictions import newer_first
from zeromem.core.adapters.embeddings import embed_query
from zeromem.core.domain.ranking import Candidate, CorpusStats, Ranked, fuse
from zeromem.core.domain.transitions import SUPERSEDED
from zeromem.core.services import KEY_PREFIX, hash_secret, month_start
from zeromem.models import ApiKey, LlmUsage, Memory, MemorySource, MemoryState, TermStat, UserSearchStats


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


def query_lexemes(query: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT lexeme FROM unnest(to_tsvector(%s::regconfig, %s)) ORDER BY 1",
                       [settings.ZEROMEMORY_SEARCH_CONFIG, query])
        return [row[0] for row in cursor.fetchall()]


def _or_tsquery(lexemes: Sequence[str]) -> str:
    # Lexemes are already normalised by the search configuration; quote them for a plain tsquery.
    return " | ".join("'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'" for lexeme in lexemes)


def _lexical_pool(scope: MemoryFilter, lexemes: Sequence[str], pool: int) -> list[str]:
    # An OR query (plainto_tsquery's AND finds almost nothing for questions); ts_rank only picks the pool.
    where, params = _scope_sql(scope)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT m.id FROM zeromem_memory m
                 WHERE {where} AND m.search_vector @@ %s::tsquery
                 ORDER BY ts_rank(m.search_vector, %s::tsquery) DESC LIMIT %s""",
            [*params, _or_tsquery(lexemes), _or_tsquery(lexemes), pool])
        return [str(row[0]) for row in cursor.fetchall()]


def _vector_pool(scope: MemoryFilter, vector: list[float], pool: int) -> list[str]:
    where, params = _scope_sql(scope)
    with transaction.atomic(), connection.cursor() as cursor:
        # Filtered HNSW scans keep walking the graph until enough rows pass the filter (pgvector 0.8).
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute("SET LOCAL hnsw.ef_search = %s", [max(pool, 40)])
        cursor.execute(
            f"""SELECT m.id FROM zeromem_memory m
                 WHERE {where} AND m.embedding IS NOT NULL
                 ORDER BY m.embedding <=> %s::vector LIMIT %s""",
            [*params, str(vector), pool])
        return [str(row[0]) for row in cursor.fetchall()]


def _candidates(ids: Sequence[str], lexemes: Sequence[str], vector: list[float] | None) -> list[Candidate]:
    assistant = settings.ZEROMEMORY_SEARCH_ASSISTANT_WEIGHT
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT m.id, m.role,
                      CASE WHEN %s::vector IS NULL OR m.embedding IS NULL THEN NULL
                           ELSE 1 - (m.embedding <=> %s::vector) END,
                      length(m.search_vector),
                      (SELECT coalesce(json_object_agg(t.lexeme, coalesce(array_length(t.positions, 1), 1)),
                                       '{}'::json)
                         FROM unnest(m.search_vector) t WHERE t.lexeme = ANY(%s))
                 FROM zeromem_memory m WHERE m.id = ANY(%s::uuid[])""",
            [_vector_param(vector), _vector_param(vector), list(lexemes), list(ids)])
        return [Candidate(id=str(i), cosine=cos, length=length or 0, term_freqs=tfs or {},
                          weight=assistant if role == "assistant" else 1.0)
                for i, role, cos, length, tfs in cursor.fetchall()]


def _vector_param(vector: list[float] | None) -> str | None:
    return None if vector is None else str(vector)


def corpus_stats(scope: MemoryFilter, lexemes: Sequence[str]) -> CorpusStats:
    """BM25 statistics from the counters kept at ingestion: index lookups, no document counting."""
    users = UserSearchStats.objects.filter(tenant_id=scope.tenant_id)
    terms = TermStat.objects.filter(tenant_id=scope.tenant_id, term__in=list(lexemes))
    if scope.user_id is not None:
        users = users.filter(user_id=scope.user_id)
        terms = terms.filter(user_id=scope.user_id)
    totals = users.aggregate(docs=Sum("doc_count"), length=Sum("total_length"))
    docs = totals["docs"] or 0
    doc_freqs = {row["term"]: row["df"] for row in terms.values("term").annotate(df=Sum("doc_count"))}
    return CorpusStats(doc_count=docs, avg_length=(totals["length"] or 0) / docs if docs else 1.0,
                       doc_freqs=doc_freqs)


def memories_search(*, scope: MemoryFilter, query: str, top_k: int = 10,
                    min_score: float | None = None) -> list[SearchHit]:
    """Hybrid search: a lexical pool (full-text OR query) and a vector pool (HNSW), re-ranked together by
    BM25 fused with cosine similarity. A memory without an embedding still ranks by its words. `min_score`
    (what agents get: ZEROMEMORY_SEARCH_MIN_SCORE) drops hits scored at or below it; internal measures (canaries,
    evaluate) leave it None, so their figures stay comparable with earlier runs."""
    pool = settings.ZEROMEMORY_SEARCH_POOL
    lexemes = query_lexemes(query)
    vector = embed_query(query)
    ids = list(dict.fromkeys(
        (_lexical_pool(scope, lexemes, pool) if lexemes else [])
        + (_vector_pool(scope, vector, pool // 2) if vector is not None else [])))
    if not ids:
        return []
    ranked = fuse(_candidates(ids, lexemes, vector), corpus_stats(scope, lexemes),
                  vector_weight=settings.ZEROMEMORY_SEARCH_VECTOR_WEIGHT, top_k=top_k,
                  length_norm=settings.ZEROMEMORY_SEARCH_BM25_B)
    return newer_statements_first(_hits([r for r in ranked if min_score is None or r.score > min_score]))


def _hits(ranked: list[Ranked]) -> list[SearchHit]:
    memories = Memory.objects.in_bulk([r.id for r in ranked])
    return [SearchHit(memory=memories[uuid.UUID(r.id)], score=r.score, bm25=r.bm25, cosine=r.cosine)
            for r in ranked if uuid.UUID(r.id) in memories]


def newer_statements_first(hits: list[SearchHit]) -> list[SearchHit]:
    """Where two results state the same attribute with different values, the newer (by the statements' own
    dates) ranks just above the older, which is marked `earlier_than` it; everything else keeps its rank."""
    memories = [h.memory for h in hits]
    ordered = newer_first([m.content for m in memories], [m.valid_from or m.created_at for m in memories],
                          [m.role for m in memories])
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


def memory_sources(*, memory: Memory) -> list[MemorySource]:
    return list(memory.source_links.select_related("source").order_by("created_at"))


# --- API keys ----------------------------------------------------------------------------------------------

def apikey_authenticate(*, secret: str) -> ApiKey | None:
    """The live key for a presented secret: looked up by its prefix, compared in constant time."""
    if not secret.startswith(KEY_PREFIX) or secret.count("_") < 2:
        return None
    prefix = secret[len(KEY_PREFIX):].split("_", 1)[0]
    key = ApiKey.objects.select_related("tenant").filter(prefix=prefix, revoked_at__isnull=True).first()
    if key is None or not hmac.compare_digest(key.secret_hash, hash_secret(secret)):
        return None
    return key


# --- LLM usage ---------------------------------------------------------------------------------------------

def llm_tokens_this_month(*, tenant_id: int, now: datetime | None = None) -> int:
    totals = LlmUsage.objects.filter(tenant_id=tenant_id, month=month_start(now or timezone.now())).aggregate(
        prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"))
    return int((totals["prompt"] or 0) + (totals["completion"] or 0))
