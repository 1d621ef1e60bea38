"""Building a large table fast, for benches: memories written with one binary COPY, their secondary indexes dropped
for the load and built again afterwards from their own definitions (one index build is far cheaper than 100,000
HNSW insertions), and the BM25 counters brought up to date the way ingestion does."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.db.models import NOT_PROVIDED, Field, JSONField
from pgvector.psycopg import register_vector

from zeromem.core import services
from zeromem.models import Memory

STATS_CHUNK = 10_000


def memories_copy(rows: Sequence[Memory]) -> None:
    """Insert unsaved memories with COPY … (FORMAT BINARY). Every column gets what `bulk_create` would send (the
    model's defaults, `auto_now`; a column the database fills, `db_default`, is left to it), so a column added to
    the model needs nothing here; vectors go as binary. The BM25 counters are updated for the new rows
    (`search_stats_add`), as ingestion does."""
    fields = [f for f in Memory._meta.concrete_fields if f.db_default is NOT_PROVIDED]
    connection.ensure_connection()
    raw = connection.connection
    register_vector(raw)
    types = _column_types(Memory._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    with raw.cursor() as cursor, cursor.copy(
            f"COPY {Memory._meta.db_table} ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types([types[f.column] for f in fields])
        for row in rows:
            copy.write_row([_column_value(f, row) for f in fields])
    for start in range(0, len(rows), STATS_CHUNK):
        services.search_stats_add(memory_ids=[r.id for r in rows[start:start + STATS_CHUNK]])


def _column_types(table: str) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT attname, atttypid FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
                       "AND NOT attisdropped", [table])
        return {name: int(oid) for name, oid in cursor.fetchall()}


def _column_value(field: Field[Any, Any], row: Memory) -> Any:
    value = field.pre_save(row, True)
    if field.attname == "embedding" or isinstance(field, JSONField):
        return value  # numpy array → pgvector's binary dumper; JSON as plain data for psycopg's jsonb dumper
    return field.get_db_prep_save(value, connection)


@contextmanager
def indexes_deferred(table: str) -> Iterator[None]:
    """Drop the table's non-unique indexes for the block and create them again from their definitions after it
    (unique ones stay: they are constraints). maintenance_work_mem is raised for the builds: an HNSW graph built in
    memory is many times faster than one spilled to disk."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s AND indexdef NOT LIKE "
                       "'CREATE UNIQUE %%'", [table])
        definitions = cursor.fetchall()
        for name, _ in definitions:
            cursor.execute(f"DROP INDEX {connection.ops.quote_name(name)}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '1GB'")
            for _, definition in definitions:
                cursor.execute(definition)
            cursor.execute("RESET maintenance_work_mem")
