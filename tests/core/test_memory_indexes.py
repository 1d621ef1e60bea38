"""The memory table's layout (ARCHITECTURE.md, "Data model"): vector and GIN indexes hold active memories only, and
the queries that need them can use them; a vector stays in its row."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.factories import ingest, ingest_one
from zeromem.core import selectors
from zeromem.core.domain.policy import SearchPolicy
from zeromem.core.selectors import MemoryFilter, memories_search
from zeromem.models import Memory

pytestmark = pytest.mark.usefixtures("hash_embedder")


def _statements_of(call: Callable[[], Any], marker: str) -> list[tuple[str, Any]]:
    """The SQL statements (with their parameters) containing `marker` that `call` runs."""
    seen: list[tuple[str, Any]] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if marker in sql:
            seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        call()
    return seen


# The indexes the plans are about, and the primary key: every other index is dropped while a plan is made.
_UNDER_TEST = ("zeromem_memory_pkey", "memory_active_hnsw", "memory_active_scope_search_gin")


def _plan_with_indexes_under_test(sql: str, params: Any, *, bitmap_only: bool = False, analyze: bool = False) -> str:
    """The plan of `sql` when a sequential scan is the only other way: every index but those under test is dropped
    (the test's transaction puts them back) and sequential scans are disabled, so a partial index appears in the
    plan exactly when the planner can prove the query's WHERE implies its predicate. The other partial GIN indexes
    go too: a full scan of one (tags, entities) satisfies the same predicate, and looks cheaper than the text index
    whenever what earlier tests left in its pending list makes it so. `bitmap_only`: plain index scans are off too,
    so the primary key (which stays) is no way either: a full scan of it in id order can look cheaper than the text
    index to a planner whose statistics an earlier test left small. `analyze`: the plan as run, with its rows."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'zeromem_memory' "
                       "AND NOT indexname = ANY(%s)", [list(_UNDER_TEST)])
        for (name,) in cursor.fetchall():
            cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute("SET LOCAL enable_seqscan = off")
        if bitmap_only:
            cursor.execute("SET LOCAL enable_indexscan = off")
            cursor.execute("SET LOCAL enable_indexonlyscan = off")
        cursor.execute(("EXPLAIN ANALYZE " if analyze else "EXPLAIN ") + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_a_search_of_active_memories_can_use_the_partial_vector_and_text_indexes(tenant, monkeypatch):
    monkeypatch.setattr(selectors, "EXACT_VECTOR_POOL", 0)  # a big user: the vector pool goes through the index
    ingest(tenant, ["The billing-api timed out after a schema change.", "Alice paints lighthouses."], session="s1")
    search = partial(memories_search, scope=MemoryFilter(tenant_id=tenant.id, user_id="u1"), query="billing timeout",
                     policy=SearchPolicy())
    (vector_pool,) = _statements_of(search, "ORDER BY (m.embedding <=>")
    (lexical_pool,) = _statements_of(search, "@@")
    assert "memory_active_hnsw" in _plan_with_indexes_under_test(*vector_pool)
    assert "memory_active_scope_search_gin" in _plan_with_indexes_under_test(*lexical_pool, bitmap_only=True)


def _text_index_rows(plan: str) -> float:
    """The row pointers the lexical pool's scan of the full-text index handed on: the first scan of it in the plan
    (the pools' CTE is shown first, and the lexical pool first in it)."""
    scans = re.findall(r"Bitmap Index Scan on memory_active_scope_search_gin .*actual time=\S+ rows=([\d.]+)", plan)
    return float(scans[0])


def test_a_users_lexical_pool_reads_only_that_users_entries_of_the_text_index(tenant, other_tenant):
    ingest(tenant, "The billing-api timed out.", user="u1", session="s1")
    ingest(tenant, [f"Billing export {n} timed out." for n in range(3)], user="u2", session="s1")
    ingest(other_tenant, "The billing-api timed out.", user="u1", session="s1")
    search = partial(memories_search, scope=MemoryFilter(tenant_id=tenant.id, user_id="u1"), query="billing timeout",
                     policy=SearchPolicy())
    (lexical_pool,) = _statements_of(search, "@@")
    plan = _plan_with_indexes_under_test(*lexical_pool, bitmap_only=True, analyze=True)
    assert _text_index_rows(plan) == 1  # not the other user's three, nor the other tenant's one


def test_memories_tied_at_the_edge_of_the_lexical_pool_enter_it_newest_first_whatever_order_they_lie_in(tenant):
    """The full-text pool takes the best `pool` matches; among matches ranked alike, the newest (by date, then by the
    order they were written in), so the same store gives the same results whatever order its rows lie in
    (PostgreSQL returns ties in scan order, and an update moves a row). Without vectors stored, a search's
    candidates are the lexical pool alone."""
    codes = [f"{letter}{letter}x" for letter in "abcdefghijklmn"]  # one word each, the same length: ranked alike
    ids = ingest(tenant, [f"Billing export {code} timed out." for code in codes], embed=False, user="u1")
    search = partial(memories_search, scope=MemoryFilter(tenant_id=tenant.id, user_id="u1"), query="billing timeout",
                     top_k=50, policy=SearchPolicy(pool=10))
    assert {h.memory.id for h in search()} == set(ids[-10:])
    Memory.objects.filter(id__in=ids[:7]).update(importance=0.9)  # the oldest rows move to the end of the table
    assert {h.memory.id for h in search()} == set(ids[-10:])


def test_a_search_naming_no_user_can_still_use_the_text_index(tenant):
    ingest(tenant, "The billing-api timed out.", user="u1", session="s1")
    search = partial(memories_search, scope=MemoryFilter(tenant_id=tenant.id), query="billing timeout",
                     policy=SearchPolicy())
    (lexical_pool,) = _statements_of(search, "@@")
    assert "memory_active_scope_search_gin" in _plan_with_indexes_under_test(*lexical_pool, bitmap_only=True)


def _text_indexes() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'zeromem_memory' "
                       "AND indexdef LIKE '%%search_vector%%'")
        return {name for (name,) in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_the_scoped_text_index_migrates_back_to_the_text_only_one_and_forward_again():
    executor = MigrationExecutor(connection)
    executor.migrate([("zeromem", "0011_memory_insertion_order")])
    try:
        assert _text_indexes() == {"memory_active_search_gin"}
    finally:
        latest = MigrationExecutor(connection)
        latest.migrate(latest.loader.graph.leaf_nodes())  # the tests after this one need the current schema
    assert _text_indexes() == {"memory_active_scope_search_gin"}


def test_a_small_users_vector_pool_is_exact_and_never_walks_the_tenants_index(tenant):
    ingest(tenant, ["The billing-api timed out after a schema change."], session="s1")
    search = partial(memories_search, scope=MemoryFilter(tenant_id=tenant.id, user_id="u1"), query="billing timeout",
                     policy=SearchPolicy())
    (statement,) = _statements_of(search, "ORDER BY (m.embedding <=>")
    assert "memory_active_hnsw" not in _plan_with_indexes_under_test(*statement)


def _toasted(memory_id: Any, column: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_column_toast_chunk_id({column}) IS NOT NULL FROM zeromem_memory WHERE id = %s",
                       [memory_id])
        return bool(cursor.fetchone()[0])


def test_a_vector_stays_in_its_row_past_the_toast_threshold(tenant):
    # ~600 characters with their tsvector take the row past the ~2 KB at which PostgreSQL moves values out.
    memory_id = ingest_one(tenant, " ".join(f"Alice noted item {i} of the migration plan." for i in range(14)),
                           session="s1")
    assert not _toasted(memory_id, "embedding") and not _toasted(memory_id, "content")


def test_a_long_memory_moves_its_text_out_and_keeps_its_vector(tenant):
    words = [f"w{i * 7919 % 100003}" for i in range(4000)]  # ~25 KB that compresses poorly
    memory_id = ingest_one(tenant, " ".join(words), session="s1")
    assert _toasted(memory_id, "content") and not _toasted(memory_id, "embedding")
