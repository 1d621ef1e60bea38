"""What `bench search` searches, all in one tenant and one table: a LoCoMo-sized user (LoCoMo's own turns, embedded
and ingested through the service layer; bench texts when the LoCoMo file is absent), a large user and many small
ones (bench texts on planted vectors, copied in bulk), and the user a clustering run works on meanwhile. Queries are
distinct strings, each used once, so no cache anywhere answers one from an earlier request."""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from zeromem.core import services
from zeromem.devtools.bench.bulk import indexes_deferred, memories_copy
from zeromem.devtools.bench.clustering import planted
from zeromem.devtools.bench.texts import CAUSES, EVENTS, FOLLOWUPS, PEOPLE, SYSTEMS, memory_texts
from zeromem.devtools.evaluation import locomo
from zeromem.models import Memory

THREE_K, LARGE, CLUSTERING = "locomo-3k", "large", "clustering"
COPY_CHUNK = 10_000
QUERY_WORDS = 12  # a LoCoMo turn used as a query is cut to a query's length


@dataclass(frozen=True)
class Sizes:
    memories_3k: int
    large: int
    small_users: int
    small_user_memories: int
    clustering: int


class Queries:
    """Distinct queries, each handed out once."""

    def __init__(self, queries: list[str]) -> None:
        self._left = iter(dict.fromkeys(queries))
        self.size = len(dict.fromkeys(queries))

    def take(self, n: int) -> list[str]:
        taken = list(itertools.islice(self._left, n))
        if len(taken) < n:
            raise RuntimeError(f"out of distinct queries ({self.size} in all): use fewer searches")
        return taken


@dataclass(frozen=True)
class BenchData:
    source: str  # of the 3,000-memory user: "locomo" or "synthetic"
    queries_3k: Queries
    queries_large: Queries


def bench_data(*, tenant_id: int, sizes: Sizes, say: Callable[[str], None]) -> BenchData:
    """1. the planted users copied in bulk with the secondary indexes dropped, which are then built once; 2. the
    LoCoMo-sized user ingested through the service layer (embedded, then parsed as ingestion's worker does);
    3. VACUUM ANALYZE and a checkpoint, so the measures start from a settled database as a deployment's
    autovacuum would leave it."""
    synthetic = synthetic_queries()
    with indexes_deferred(Memory._meta.db_table):
        _copy_planted(tenant_id, sizes.clustering, seed=1, user_of=lambda i: CLUSTERING)
        _copy_planted(tenant_id, sizes.large, seed=2, user_of=lambda i: LARGE)
        _copy_planted(tenant_id, sizes.small_users * sizes.small_user_memories, seed=3,
                      user_of=lambda i: f"small-{i // sizes.small_user_memories:04d}")
        say(f"copied {sizes.clustering + sizes.large + sizes.small_users * sizes.small_user_memories:,} planted "
            "memories; building the indexes")
    items, queries_3k, source = three_k_corpus(sizes.memories_3k, synthetic[::2])
    if source == "synthetic":
        say(f"no LoCoMo file at {locomo.DEFAULT_PATH}: that user is made of the bench texts instead")
    say(f"embedding and ingesting the {len(items):,}-memory user ({source}); parsing it as the worker would")
    imported = services.memories_import(tenant_id=tenant_id,
                                        batches=(items[i:i + 500] for i in range(0, len(items), 500)))
    services.memories_parse_pending(memory_ids=imported.ids)
    with connection.cursor() as cursor:
        for table in ("zeromem_memory", "zeromem_termstat", "zeromem_usersearchstats"):
            cursor.execute(f"VACUUM ANALYZE {table}")
        cursor.execute("CHECKPOINT")
    return BenchData(source=source, queries_3k=Queries(queries_3k), queries_large=Queries(synthetic[1::2]))


def _copy_planted(tenant_id: int, n: int, *, seed: int, user_of: Callable[[int], str]) -> None:
    """Bench texts on planted vectors (clusters with shared entities, as `bench clustering` uses), three days old,
    40 to a session."""
    if not n:
        return
    items, vectors = planted(n, seed=seed)
    texts = memory_texts(n, seed=seed + 100)
    created = timezone.now() - timedelta(days=3)
    for start in range(0, n, COPY_CHUNK):
        memories_copy([
            Memory(id=uuid.uuid4(), tenant_id=tenant_id, user_id=user_of(i), session_id=f"s{i // 40}",
                   content=texts[i], content_hash=services.content_hash(texts[i]), embedding=vectors[i],
                   entities=sorted(items[i].entities), created_at=created + timedelta(seconds=i))
            for i in range(start, min(n, start + COPY_CHUNK))])


def three_k_corpus(n: int, fallback_queries: list[str]) -> tuple[list[services.MemoryInput], list[str], str]:
    """LoCoMo's first n turns (a user of several conversations) with LoCoMo's questions as queries, then the
    unused turns cut to a query's length; the bench texts and their queries when the file is absent."""
    if not locomo.available():
        return ([services.MemoryInput(content=text, user_id=THREE_K, session_id=f"s{i // 20}")
                 for i, text in enumerate(memory_texts(n, seed=11))], fallback_queries, "synthetic")
    conversations = locomo.load()
    turns = [(c.sample_id, t) for c in conversations for t in c.turns]
    items = [services.MemoryInput(content=t.text, user_id=THREE_K, entity_id=t.speaker, role=t.speaker,
                                  session_id=f"{sample}-{t.session}", created_at=t.at) for sample, t in turns[:n]]
    questions = [q.question for c in conversations for q in c.questions]
    unused = [" ".join(t.text.split(": ", 1)[-1].split()[:QUERY_WORDS]) for _, t in turns[n:]]
    return items, questions + unused, "locomo"


def synthetic_queries(*, seed: int = 5) -> list[str]:
    """Questions in the bench texts' vocabulary, every combination of a few templates, in a fixed random order."""
    queries = [*(f"What happened when the {s} {e}?" for s, e in itertools.product(SYSTEMS, EVENTS)),
               *(f"Did {p} say why the {s} {e}?" for p, s, e in itertools.product(PEOPLE, SYSTEMS, EVENTS)),
               *(f"When did the {s} {e} because of {c}?" for s, e, c in itertools.product(SYSTEMS, EVENTS, CAUSES)),
               *(f"Which {s} change had the {f}?" for s, f in itertools.product(SYSTEMS, FOLLOWUPS)),
               *(f"What did {p} note about {c}?" for p, c in itertools.product(PEOPLE, CAUSES)),
               *(f"How long was the {s} down after {c}, {p}?" for s, c, p in itertools.product(SYSTEMS, CAUSES,
                                                                                                  PEOPLE))]
    random.Random(seed).shuffle(queries)
    return queries
