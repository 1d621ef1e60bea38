"""The full-text index is led by the memory's scope (issue 33): a user's lexical pool reads that user's entries only.

The tsvector's GIN index alone gave the pool every match in the tenant, which the planner then intersected with the
user's btree: building that bitmap was most of the pool's time for a user in a big tenant. GIN keeps several columns
in one tree and intersects their keys while it scans, so a key for the scope beside the tsvector narrows the scan
itself. GIN has no operator class for a plain integer or text column without the btree_gin extension, which the
embedded PostgreSQL does not ship (and a production one would have to have created), so the scope is an array of one
text element, `'<tenant_id>:<user_id>'` (a tenant id has no colon: one key, one scope), matched with `@>`;
`_SCOPE_KEY` in `zeromem.core.selectors` is the same expression. A search that names no user reads the tsvector
column of this index alone: GIN serves any subset of its columns as well as an index of that subset.

Built CONCURRENTLY before the index it replaces is dropped CONCURRENTLY, as in 0005 (a failed build leaves an
INVALID index: drop it and migrate again).
"""

from django.db import migrations

SEARCH_GIN_SCOPED = ("CREATE INDEX CONCURRENTLY memory_active_scope_search_gin ON zeromem_memory USING gin "
                     "((ARRAY[tenant_id::text || ':' || user_id::text]), search_vector) WHERE state = 'raw'")
SEARCH_GIN_ACTIVE = ("CREATE INDEX CONCURRENTLY memory_active_search_gin ON zeromem_memory USING gin (search_vector) "
                     "WHERE state = 'raw'")


class Migration(migrations.Migration):

    atomic = False  # CREATE / DROP INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ('zeromem', '0011_memory_insertion_order'),
    ]

    operations = [
        migrations.RunSQL(
            [SEARCH_GIN_SCOPED, "DROP INDEX CONCURRENTLY memory_active_search_gin"],
            reverse_sql=[SEARCH_GIN_ACTIVE, "DROP INDEX CONCURRENTLY memory_active_scope_search_gin"],
        ),
    ]
