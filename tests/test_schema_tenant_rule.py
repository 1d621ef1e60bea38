"""The schema can be distributed by tenant (ARCHITECTURE.md, "Scaling"): on a table that carries tenant_id, every
unique index and every btree index leads with tenant_id.

Why: a distributed PostgreSQL (Citus) shards these tables by tenant_id and accepts a unique constraint only when it
contains the distribution column; an index led by the tenant is what a query naming its tenant (every request
does) reads on the one shard that holds it. Exempt by kind, not by name:
- the primary key: uuids and sequences are unique by construction; at distribution it becomes (tenant_id, id)
  (the "Scaling" section lists that step);
- GIN and HNSW indexes: they index one column's contents, each shard builds its own over its tenants, and the
  queries that use them also filter by tenant.
Anything else is an exception below, with its reason."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db

# (table, columns) -> why it may lead with something else than tenant_id.
ALLOWED = {
    ("zeromem_apikey", ("prefix",)):
        "authentication finds a key by its prefix before the tenant is known: api keys become a reference table "
        "(small, copied to every node), where any unique constraint is allowed",
    ("zeromem_memory", ("superseded_by_id",)):
        "foreign-key index: deleting a memory clears superseded_by by this id alone (Django's delete collector); "
        "not on a request's path, and a per-shard index is legal",
    ("zeromem_memoryrelation", ("from_memory_id",)):
        "foreign-key index: deleting a memory cascades to its relations by this id alone; history reads by one "
        "memory also name the tenant",
    ("zeromem_memoryrelation", ("to_memory_id",)):
        "foreign-key index: as from_memory_id; an unmerge looks up what superseded a memory by it",
    ("consolidation_ledgerentry", ("run_id",)):
        "foreign-key index: a run's rows (revert, run detail) are found by the run's id; runs and their ledger "
        "rows live on the same tenant's shard",
    ("consolidation_ledgerentry", ("undone_by_id",)):
        "foreign-key index: deleting a ledger row clears undone_by by this id alone",
    ("consolidation_ledgerentry", ("reviewed_by_id",)):
        "foreign-key index to the operators' user table (a reference table): deleting a user clears it",
}

# Tables that hang off a tenant's rows without a tenant_id of their own: before distribution each gains tenant_id
# (filled from its parent) so it can be co-located with it.
WITHOUT_TENANT = {
    "zeromem_memorysource": "a semantic memory's sources; reached through zeromem_memory",
    "consolidation_webhookdelivery": "an endpoint's deliveries; reached through consolidation_webhookendpoint",
}


@dataclass(frozen=True)
class Index:
    table: str
    name: str
    method: str  # btree, gin, hnsw, ...
    unique: bool
    primary: bool
    columns: tuple[str, ...]  # key columns in order; "" for an expression


def breaks_tenant_rule(index: Index) -> bool:
    """A unique index (other than the primary key) or a btree index whose first column is not tenant_id."""
    if index.primary or not (index.unique or index.method == "btree"):
        return False
    return index.columns[:1] != ("tenant_id",)


def tenant_owned_indexes() -> list[Index]:
    """Every index of every table in the schema that has a tenant_id column."""
    with connection.cursor() as cursor:
        cursor.execute("""
            SELECT t.relname, i.relname, am.amname, x.indisunique, x.indisprimary,
                   array(SELECT coalesce(a.attname, '')  -- int2vector counts from 0: the key columns, in order
                           FROM unnest(x.indkey[:x.indnkeyatts - 1]) WITH ORDINALITY k(n, o)
                           LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.n ORDER BY k.o)
              FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
              JOIN pg_am am ON am.oid = i.relam
             WHERE t.relnamespace = current_schema()::regnamespace
               AND EXISTS (SELECT 1 FROM pg_attribute c WHERE c.attrelid = t.oid AND c.attname = 'tenant_id'
                                                         AND NOT c.attisdropped)
             ORDER BY 1, 2""")
        return [Index(table, name, method, unique, primary, tuple(columns))
                for table, name, method, unique, primary, columns in cursor.fetchall()]


def tables_without_tenant_below_tenant_tables() -> set[str]:
    """Tables with a foreign key to a tenant-owned table (other than the tenant table) but no tenant_id column."""
    with connection.cursor() as cursor:
        cursor.execute("""
            SELECT DISTINCT child.relname
              FROM pg_constraint f JOIN pg_class child ON child.oid = f.conrelid
             WHERE f.contype = 'f' AND child.relnamespace = current_schema()::regnamespace
               AND EXISTS (SELECT 1 FROM pg_attribute p WHERE p.attrelid = f.confrelid AND p.attname = 'tenant_id')
               AND NOT EXISTS (SELECT 1 FROM pg_attribute c
                                WHERE c.attrelid = child.oid AND c.attname = 'tenant_id')""")
        return {row[0] for row in cursor.fetchall()}


def violations() -> list[Index]:
    return [i for i in tenant_owned_indexes() if breaks_tenant_rule(i) and (i.table, i.columns) not in ALLOWED]


def test_every_unique_and_btree_index_of_a_tenants_rows_leads_with_tenant_id():
    assert violations() == []


def test_every_exception_still_exists_and_still_breaks_the_rule():
    breaking = {(i.table, i.columns) for i in tenant_owned_indexes() if breaks_tenant_rule(i)}
    assert set(ALLOWED) <= breaking


def test_an_index_not_led_by_the_tenant_is_caught():
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute("CREATE UNIQUE INDEX term_per_user ON zeromem_termstat (user_id, term)")
        cursor.execute("CREATE INDEX memory_by_session ON zeromem_memory (session_id, tenant_id)")
    assert {i.name for i in violations()} == {"term_per_user", "memory_by_session"}


@pytest.mark.parametrize(("index", "breaks"), [
    (Index("t", "pk", "btree", True, True, ("id",)), False),
    (Index("t", "scope", "btree", False, False, ("tenant_id", "user_id")), False),
    (Index("t", "once", "btree", True, False, ("user_id", "tenant_id")), True),
    (Index("t", "fk", "btree", False, False, ("run_id",)), True),
    (Index("t", "expr", "btree", False, False, ("",)), True),
    (Index("t", "vectors", "hnsw", False, False, ("embedding",)), False),
    (Index("t", "words", "gin", False, False, ("search_vector",)), False),
])
def test_the_rule_on_sample_indexes(index, breaks):
    assert breaks_tenant_rule(index) is breaks


def test_every_table_below_a_tenants_rows_carries_tenant_id_or_is_listed():
    assert tables_without_tenant_below_tenant_tables() == set(WITHOUT_TENANT)
