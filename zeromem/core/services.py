"""Writes of the core app: ingestion, deferred embedding, API keys, idempotent requests."""

from __future__ import annotations

import functools
import hashlib
import json
import secrets
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from consolidation.domain.contradictions import memory_features
from zeromem.core import keycache
from zeromem.core.adapters.embeddings import Vector, embed_texts
from zeromem.core.adapters.llm import Usage
from zeromem.core.contention import StaleRead, retry_on_contention
from zeromem.core.domain.entities import classify_kind, extract_entities
from zeromem.core.policies import policy_for
from zeromem.language.default import DefaultReader
from zeromem.models import ApiKey, IdempotencyKey, LlmUsage, Memory, MemoryType, Tenant

DEFAULT_IMPORTANCE = 0.5


@dataclass(frozen=True)
class MemoryInput:
    content: str
    user_id: str
    entity_id: str | None = None
    namespace: str = "global"
    session_id: str | None = None
    memory_type: str = MemoryType.EPISODIC
    kind: str | None = None
    role: str = ""
    entities: Sequence[str] | None = None
    tags: Sequence[str] = ()
    window: str | None = None
    importance: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None


@dataclass(frozen=True)
class IngestResult:
    ids: list[uuid.UUID]
    created: int
    deduplicated: int
    embedded: int

    def as_json(self) -> dict[str, Any]:
        return {"ids": [str(i) for i in self.ids], "created": self.created,
                "deduplicated": self.deduplicated, "embedded": self.embedded}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IngestResult:
        return cls(ids=[uuid.UUID(i) for i in data["ids"]], created=data["created"],
                   deduplicated=data["deduplicated"], embedded=data["embedded"])


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def _dedupe_key(item: MemoryInput) -> tuple[str, str | None, str]:
    return (item.user_id, item.session_id, content_hash(item.content))


def _existing_ids(*, tenant_id: int, keys: set[tuple[str, str | None, str]]) -> dict[tuple[str, str | None, str],
                                                                                     uuid.UUID]:
    users = {u for u, _, _ in keys}
    hashes = {h for _, _, h in keys}
    # Keyed memories are left out: their text is the key's until the next keyed write replaces it.
    rows = (Memory.objects.filter(tenant_id=tenant_id, user_id__in=users, content_hash__in=hashes, key__isnull=True)
            .exclude(memory_type=MemoryType.SEMANTIC).values_list("user_id", "session_id", "content_hash", "id"))
    return {(u, s, h): i for u, s, h, i in rows if (u, s, h) in keys}


def window_tag_prefix(tenant_id: int) -> str:
    """The tag prefix that names a memory's window when its `window` field is empty ("window:outage"): the
    tenant's policy's clustering.window_tag_prefix ("" = off)."""
    return policy_for(tenant_id=tenant_id).clustering.window_tag_prefix


def _window_prefix_for(tenant_id: int, items: Sequence[MemoryInput]) -> str:
    """The prefix, looked up only for a batch where a tag could name a window (most batches carry no tags)."""
    return window_tag_prefix(tenant_id) if any(i.tags and not i.window for i in items) else ""


def window_of(item: MemoryInput, prefix: str) -> str | None:
    """The window field, else the first tag carrying the prefix (events usually arrive with it as a tag)."""
    if item.window or not prefix:
        return item.window
    return next((tag[len(prefix):] for tag in item.tags if tag.startswith(prefix) and len(tag) > len(prefix)),
                None)


def _build_memory(*, tenant_id: int, item: MemoryInput, vector: list[float] | None, now: datetime,
                  window_prefix: str = "", key: str | None = None, features: dict[str, Any] | None = None) -> Memory:
    importance = DEFAULT_IMPORTANCE if item.importance is None else item.importance
    return Memory(
        id=uuid.uuid4(), tenant_id=tenant_id, user_id=item.user_id, entity_id=item.entity_id,
        namespace=item.namespace, session_id=item.session_id, key=key, memory_type=item.memory_type,
        kind=item.kind or classify_kind(item.content), role=item.role, content=item.content,
        content_hash=content_hash(item.content), embedding=vector,
        entities=list(item.entities) if item.entities is not None else extract_entities(item.content),
        tags=list(item.tags), window=window_of(item, window_prefix), importance=importance, activation=importance,
        metadata=item.metadata, created_at=item.created_at or now, valid_from=item.created_at or now,
        features=features,
    )


_READER = DefaultReader()


def features_of(items: Sequence[MemoryInput]) -> list[dict[str, Any]]:
    """The language reader's parse of each item's claims, done once at ingestion and stored with the memory."""
    return memory_features([i.content for i in items], [i.role for i in items], _READER)


def memories_features_store(*, ids: Sequence[uuid.UUID], hashes: Sequence[str],
                            features: Sequence[dict[str, Any]]) -> int:
    """Keep the parse of memories that had none, or one of another reader version, in one UPDATE: only where no
    parse of this version was stored meanwhile and the content is still the one parsed (an edit clears the
    features, and its own parse comes later). Returns how many were stored."""
    if not ids:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            """UPDATE zeromem_memory m SET features = v.features::jsonb
                 FROM unnest(%s::uuid[], %s::text[], %s::text[]) AS v(id, content_hash, features)
                WHERE m.id = v.id AND m.content_hash = v.content_hash
                  AND (m.features IS NULL OR m.features -> 'v' IS DISTINCT FROM v.features::jsonb -> 'v')""",
            [[str(i) for i in ids], list(hashes), [json.dumps(f) for f in features]])
        return cursor.rowcount


def memories_parse_pending(*, memory_ids: Sequence[uuid.UUID], batch_size: int = 256) -> int:
    """Parse the claims of memories stored without their features (a worker does it after ingestion commits, so
    a request never waits on the parser) and store them (`memories_features_store`); idempotent. Returns how many
    were stored."""
    return _parse_pages(Memory.objects.filter(_unparsed(), id__in=list(memory_ids)), batch_size)


def memories_reparse(*, batch_size: int = 256, progress: Callable[[int], None] | None = None) -> int:
    """Parse every memory whose stored parse is missing or of another reader version (after an upgrade that
    changed the reader: until then each read parses them afresh), page by page in id order, one UPDATE a page.
    Safe to stop and run again. Returns how many were stored."""
    return _parse_pages(Memory.objects.filter(_unparsed()), batch_size, progress)


def memories_unparsed_count() -> int:
    return Memory.objects.filter(_unparsed()).count()


def _unparsed() -> Q:
    return Q(features__isnull=True) | ~Q(features__contains={"v": _READER.features_version})


def _parse_pages(queryset: Any, batch_size: int, progress: Callable[[int], None] | None = None) -> int:
    stored = 0
    for page in _pages(queryset, batch_size, ("id", "content", "content_hash", "role")):
        features = memory_features([content for _, content, _, _ in page], [role for *_, role in page], _READER)
        stored += memories_features_store(ids=[row[0] for row in page], hashes=[row[2] for row in page],
                                          features=features)
        if progress:
            progress(len(page))
    return stored


@retry_on_contention
def memories_ingest(*, tenant_id: int, items: Sequence[MemoryInput], embed: bool = True,
                    idempotency_key: str | None = None, now: datetime | None = None) -> IngestResult:
    """Store a batch of memories, all or nothing; a memory already stored (same user, session and content)
    is answered with its existing id instead of being stored twice, and a repeated Idempotency-Key is
    answered with the first answer.

    1. replay the answer of a known idempotency key;
    2. drop duplicates (within the batch, and against what is stored) before any expensive work;
    3. embed the new texts outside the transaction (or leave them for `memories_embed_pending`);
    4. in one transaction insert (a race on the dedupe constraint resolves to the winner's row), update the
       BM25 term statistics and record the idempotency key.
    A stored text deleted between 2 and 4 makes the whole call run again (`StaleRead`), and finds it fresh.
    """
    fingerprint = request_fingerprint([item.__dict__ for item in items])
    if idempotency_key:
        previous = IdempotencyKey.objects.filter(tenant_id=tenant_id, key=idempotency_key).first()
        if previous is not None:
            return _replay(previous, fingerprint)
    now = now or timezone.now()
    keys, fresh = _fresh_items(tenant_id, items)
    vectors = embed_texts([i.content for i in fresh]) if embed else [None] * len(fresh)
    prefix = _window_prefix_for(tenant_id, fresh)
    rows = [_build_memory(tenant_id=tenant_id, item=i, vector=v, now=now, window_prefix=prefix)
            for i, v in zip(fresh, vectors, strict=True)]
    try:
        with transaction.atomic():
            result = _store(tenant_id=tenant_id, rows=rows, keys=keys)
            if idempotency_key:
                IdempotencyKey.objects.create(tenant_id=tenant_id, key=idempotency_key,
                                              request_hash=fingerprint, response=result.as_json())
            return result
    except IntegrityError:
        if not idempotency_key:
            raise
        # A concurrent request with the same key won the race: answer what it answered.
        return _replay(IdempotencyKey.objects.get(tenant_id=tenant_id, key=idempotency_key), fingerprint)


DedupeKey = tuple[str, str | None, str]


def _fresh_items(tenant_id: int, items: Sequence[MemoryInput]) -> tuple[list[DedupeKey], list[MemoryInput]]:
    """Every item's dedupe key, and the items not stored yet (first of each duplicate)."""
    keys = [_dedupe_key(item) for item in items]
    existing = _existing_ids(tenant_id=tenant_id, keys=set(keys))
    fresh: dict[DedupeKey, MemoryInput] = {}
    for key, item in zip(keys, items, strict=True):
        if key not in existing:
            fresh.setdefault(key, item)
    return keys, list(fresh.values())


@retry_on_contention
def memories_import(*, tenant_id: int, batches: Iterable[Sequence[MemoryInput]],
                    progress: Callable[[int], None] | None = None) -> IngestResult:
    """Bulk import (demo, evaluation, backfills): each batch is stored all or nothing, and the next batch is
    embedded in a thread while the current one is written (onnxruntime releases the GIL), so the database
    work hides behind the embedder instead of adding to it."""
    results: list[IngestResult] = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        previous: tuple[list[DedupeKey], list[MemoryInput], Future[list[Vector | None]]] | None = None
        for batch in batches:
            keys, fresh = _fresh_items(tenant_id, batch)
            embedding = pool.submit(embed_texts, [i.content for i in fresh])
            if previous:
                results.append(_store_embedded(tenant_id, *previous, progress))
            previous = (keys, fresh, embedding)
        if previous:
            results.append(_store_embedded(tenant_id, *previous, progress))
    return IngestResult(ids=[i for r in results for i in r.ids], created=sum(r.created for r in results),
                        deduplicated=sum(r.deduplicated for r in results), embedded=sum(r.embedded for r in results))


def _store_embedded(tenant_id: int, keys: list[DedupeKey], fresh: list[MemoryInput],
                    embedding: Future[list[Vector | None]], progress: Callable[[int], None] | None) -> IngestResult:
    now, prefix = timezone.now(), _window_prefix_for(tenant_id, fresh)
    rows = [_build_memory(tenant_id=tenant_id, item=i, vector=v, now=now, window_prefix=prefix)
            for i, v in zip(fresh, embedding.result(), strict=True)]
    with transaction.atomic():
        result = _store(tenant_id=tenant_id, rows=rows, keys=keys)
    if progress:
        progress(len(keys))
    return result


def _store(*, tenant_id: int, rows: list[Memory], keys: list[tuple[str, str | None, str]]) -> IngestResult:
    Memory.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    stored = _existing_ids(tenant_id=tenant_id, keys=set(keys))
    if len(stored) < len(set(keys)):
        # A text the duplicate check found stored was deleted since (and was not in `rows`): check again.
        raise StaleRead("a stored memory this batch deduplicated against was deleted meanwhile")
    inserted = [r for r in rows if stored.get(_dedupe_key_of(r)) == r.id]
    search_stats_add(memory_ids=[r.id for r in inserted])
    return IngestResult(ids=[stored[k] for k in keys], created=len(inserted),
                        deduplicated=len(keys) - len(inserted),
                        embedded=sum(1 for r in inserted if r.embedding is not None))


def memory_keyed_insert(*, tenant_id: int, key: str, item: MemoryInput, vector: Vector | None,
                        now: datetime | None = None) -> uuid.UUID | None:
    """Store a keyed memory unless its key already holds one (then None), inside the caller's transaction.

    ON CONFLICT DO NOTHING on the key's unique index: a concurrent insert of the same key makes this one wait until
    it commits (then nothing is inserted) or rolls back (then this one is)."""
    row = _build_memory(tenant_id=tenant_id, item=item, vector=vector, now=now or timezone.now(),
                        window_prefix=window_tag_prefix(tenant_id), key=key)
    Memory.objects.bulk_create([row], ignore_conflicts=True)
    if not Memory.objects.filter(id=row.id).exists():
        return None
    search_stats_add(memory_ids=[row.id])
    return row.id


def _dedupe_key_of(memory: Memory) -> tuple[str, str | None, str]:
    return (memory.user_id, memory.session_id, memory.content_hash)


# --- BM25 statistics -------------------------------------------------------------------------------------------
#
# Deadlock-free by construction: a write only APPENDS delta rows (+n when memories are stored, -n when they are
# deleted or rewritten) to zeromem_termstat and zeromem_usersearchstats, which have no unique index, so it never
# waits on another transaction's row or index entry; search sums a term's rows (it already summed across users).
# The only statements that delete or update these rows are the folds, and a fold first takes the scope's
# advisory lock in a transaction of its own, after the write committed, holding no other lock: folds of one scope
# queue on that lock, nobody holding it waits on anything but rows only its holder touches, so no cycle of waits
# can form. A fold deletes the rows its snapshot sees and inserts their sum in the same statement; rows appended
# meanwhile are not in its snapshot and stay, so every total is unchanged by folding and no delta is lost.

def search_stats_add(*, memory_ids: Sequence[uuid.UUID]) -> None:
    """Count new memories into their users' BM25 statistics (document frequencies, lengths)."""
    _search_stats_change(memory_ids, sign=1)


def search_stats_remove(*, memory_ids: Sequence[uuid.UUID]) -> None:
    """Take memories about to be deleted or rewritten out of the BM25 statistics (the mirror of
    `search_stats_add`); terms no memory uses any more disappear at the next fold."""
    _search_stats_change(memory_ids, sign=-1)


def _search_stats_change(memory_ids: Sequence[uuid.UUID], *, sign: int) -> None:
    """Append the memories' counts times `sign`, and fold the terms they touched once the caller commits."""
    if not memory_ids:
        return
    ids = [str(i) for i in memory_ids]
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO zeromem_termstat (tenant_id, user_id, term, doc_count)
            SELECT m.tenant_id, m.user_id, t.lexeme, %s * count(*)
              FROM zeromem_memory m, unnest(m.search_vector) AS t
             WHERE m.id = ANY(%s::uuid[]) AND length(t.lexeme) <= 200
             GROUP BY 1, 2, 3
            RETURNING tenant_id, user_id, term
            """, [sign, ids])
        touched: dict[tuple[int, str], list[str]] = {}
        for tenant_id, user_id, term in cursor.fetchall():
            touched.setdefault((tenant_id, user_id), []).append(term)
        cursor.execute(
            """
            INSERT INTO zeromem_usersearchstats (tenant_id, user_id, doc_count, total_length)
            SELECT m.tenant_id, m.user_id, %s * count(*), %s * coalesce(sum(length(m.search_vector)), 0)
              FROM zeromem_memory m WHERE m.id = ANY(%s::uuid[])
             GROUP BY 1, 2
            RETURNING tenant_id, user_id
            """, [sign, sign, ids])
        for tenant_id, user_id in cursor.fetchall():
            touched.setdefault((tenant_id, user_id), [])
    for (tenant_id, user_id), terms in touched.items():
        transaction.on_commit(functools.partial(search_stats_fold, tenant_id=tenant_id, user_id=user_id,
                                                terms=terms), robust=True)


def search_stats_fold(*, tenant_id: int, user_id: str, terms: Sequence[str]) -> None:
    """Sum the scope's rows of these terms (and its document totals) back into one row each, dropping what sums
    to zero; see the section comment for why this cannot deadlock or lose a delta. Search gives the same answer
    before and after: this only keeps the rows it sums few."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended('zeromem.search_stats:' || %s || ':' || %s, 0))",
                       [tenant_id, user_id])
        cursor.execute(
            """
            WITH repeated AS (SELECT term FROM zeromem_termstat
                               WHERE tenant_id = %(tenant)s AND user_id = %(user)s AND term = ANY(%(terms)s)
                               GROUP BY term HAVING count(*) > 1),
                 folded AS (DELETE FROM zeromem_termstat
                             WHERE tenant_id = %(tenant)s AND user_id = %(user)s AND term IN (SELECT term FROM repeated)
                            RETURNING term, doc_count)
            INSERT INTO zeromem_termstat (tenant_id, user_id, term, doc_count)
            SELECT %(tenant)s, %(user)s, term, sum(doc_count) FROM folded GROUP BY term HAVING sum(doc_count) <> 0
            """, {"tenant": tenant_id, "user": user_id, "terms": list(terms)})
        cursor.execute(
            """
            WITH folded AS (DELETE FROM zeromem_usersearchstats
                             WHERE tenant_id = %(tenant)s AND user_id = %(user)s
                               AND (SELECT count(*) FROM zeromem_usersearchstats
                                     WHERE tenant_id = %(tenant)s AND user_id = %(user)s) > 1
                            RETURNING doc_count, total_length)
            INSERT INTO zeromem_usersearchstats (tenant_id, user_id, doc_count, total_length)
            SELECT %(tenant)s, %(user)s, sum(doc_count), sum(total_length) FROM folded
            HAVING sum(doc_count) <> 0 OR sum(total_length) <> 0
            """, {"tenant": tenant_id, "user": user_id})


def memories_embed_pending(*, memory_ids: Sequence[uuid.UUID] | None = None, batch_size: int = 256,
                           progress: Callable[[int], None] | None = None) -> int:
    """Embed memories that have no vector yet (given ids, or all of them); idempotent. Returns how many
    vectors were stored."""
    queryset = Memory.objects.filter(embedding__isnull=True)
    if memory_ids is not None:
        queryset = queryset.filter(id__in=list(memory_ids))
    stored = 0
    for page in _pages(queryset, batch_size):
        stored += _write_vectors(page, embed_texts([content for _, content, _ in page]), only_missing=True)
        if progress:
            progress(len(page))
    return stored


class ReembedStopped(Exception):
    """The embedder failed on a page: nothing of it was written; `after` is where a new run should resume."""

    def __init__(self, after: uuid.UUID | None) -> None:
        super().__init__(f"the embedder failed; resume after {after}")
        self.after = after


def memories_reembed(*, after: uuid.UUID | None = None, batch_size: int = 256,
                     progress: Callable[[int, uuid.UUID], None] | None = None) -> int:
    """Recompute every memory's vector with the configured embedder (after a model change), in place, page by page
    in id order, one UPDATE a page. Searches keep using the old vectors until their page is replaced, and a
    stopped run resumes with `after` = the last id it reported. Returns how many vectors were replaced.

    1. read a page of (id, content, content_hash) past `after`;
    2. embed it outside any transaction; a text the embedder failed on stops the run (ReembedStopped) rather than
       leave a memory without a vector (a blank one never had one);
    3. write the page's vectors where the content is still the one embedded (a concurrent edit re-embeds itself).
    """
    queryset = Memory.objects.filter(id__gt=after) if after else Memory.objects.all()
    replaced = 0
    for page in _pages(queryset, batch_size):
        vectors = embed_texts([content for _, content, _ in page])
        if any(vector is None and content.strip() for (_, content, _), vector in zip(page, vectors, strict=True)):
            raise ReembedStopped(after)
        replaced += _write_vectors(page, vectors, only_missing=False)
        after = page[-1][0]
        if progress:
            progress(len(page), after)
    return replaced


def _pages(queryset: Any, size: int, columns: Sequence[str] = ("id", "content", "content_hash")
           ) -> Iterable[list[tuple[Any, ...]]]:
    """Rows of `columns` (the id first) in id order, a page at a time (keyset: no OFFSET scans)."""
    last: uuid.UUID | None = None
    while True:
        page = list((queryset.filter(id__gt=last) if last else queryset).order_by("id")
                    .values_list(*columns)[:size])
        if not page:
            return
        yield page
        last = page[-1][0]


def _write_vectors(page: list[tuple[uuid.UUID, str, str]], vectors: Sequence[Vector | None], *,
                   only_missing: bool) -> int:
    """One UPDATE for a page. Only where the content is still what was embedded (an edit stores its own vector);
    with `only_missing`, only where no vector arrived meanwhile (a concurrent writer's is as good as ours)."""
    rows = [(str(i), content_hash, str(v)) for (i, _, content_hash), v in zip(page, vectors, strict=True)
            if v is not None]
    if not rows:
        return 0
    ids, hashes, texts = (list(column) for column in zip(*rows, strict=True))
    with connection.cursor() as cursor:
        cursor.execute(
            f"""UPDATE zeromem_memory m SET embedding = v.embedding::vector
                  FROM unnest(%s::uuid[], %s::text[], %s::text[]) AS v(id, content_hash, embedding)
                 WHERE m.id = v.id AND m.content_hash = v.content_hash
                   {"AND m.embedding IS NULL" if only_missing else ""}""", [ids, hashes, texts])
        return cursor.rowcount


# --- API keys ----------------------------------------------------------------------------------------------

KEY_PREFIX = "zm_"


def hash_secret(secret: str) -> str:
    # The secret has 256 bits of entropy, so a fast hash is enough; what matters is a constant-time compare.
    return hashlib.sha256(secret.encode()).hexdigest()


def apikey_create(*, tenant: Tenant, name: str = "", user_id: str | None = None) -> tuple[ApiKey, str]:
    """A new key; the full secret is returned once and never stored. With `user_id`, the key sees and writes only
    that user of the tenant (the API answers 404 for any other)."""
    key = ApiKey(tenant=tenant, name=name, user_id=user_id or None)
    return key, apikey_issue(key=key)


def apikey_issue(*, key: ApiKey) -> str:
    """Give an unsaved key its prefix and hashed secret, save it, and return the secret (shown once)."""
    key.prefix = secrets.token_hex(6)
    secret = f"{KEY_PREFIX}{key.prefix}_{secrets.token_urlsafe(32)}"
    key.secret_hash = hash_secret(secret)
    key.save()
    return secret


def apikey_touch(*, key: ApiKey) -> None:
    """Record use at most once a minute per key: no write on every request (the key object, which the process
    may hold a few seconds, remembers when it was written)."""
    now = timezone.now()
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now


def apikey_revoke(*, key: ApiKey) -> None:
    """Revoke a key: refused at once by this process, by the others within ZEROMEMORY_KEY_CACHE_SECONDS."""
    ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    keycache.clear()  # before commit is harmless: a rolled-back revocation only costs one lookup


def tenant_get_or_create(*, name: str) -> Tenant:
    tenant, _ = Tenant.objects.get_or_create(name=name)
    return tenant


# --- idempotent requests -----------------------------------------------------------------------------------

class IdempotencyConflict(Exception):
    """The key was used before with a different request body."""


def request_fingerprint(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def _replay(previous: IdempotencyKey, fingerprint: str) -> IngestResult:
    if previous.request_hash != fingerprint:
        raise IdempotencyConflict("this Idempotency-Key was already used with a different request")
    return IngestResult.from_json(previous.response)


# --- LLM usage ---------------------------------------------------------------------------------------------

def month_start(now: datetime) -> date:
    return now.date().replace(day=1)


def llm_usage_add(*, tenant_id: int, purpose: str, usage: Usage, now: datetime | None = None) -> None:
    """Charge calls, tokens and cost to the tenant's month (a row per tenant, month and purpose)."""
    if not usage.calls:
        return
    month = month_start(now or timezone.now())
    LlmUsage.objects.get_or_create(tenant_id=tenant_id, month=month, purpose=purpose)
    LlmUsage.objects.filter(tenant_id=tenant_id, month=month, purpose=purpose).update(
        calls=F("calls") + usage.calls, prompt_tokens=F("prompt_tokens") + usage.prompt_tokens,
        completion_tokens=F("completion_tokens") + usage.completion_tokens,
        cost_usd=F("cost_usd") + Decimal(str(round(usage.cost_usd, 6))))
