"""Vector and GIN indexes hold active memories only, and vectors stay in the row (issue 21, item 2).

Indexes. Each partial index (`WHERE state = 'raw'`) is built CONCURRENTLY before the full one it replaces is
dropped CONCURRENTLY: writes never wait on a build and search always has an index (hence `atomic = False`; a
failed concurrent build leaves an INVALID index: drop it and migrate again).

Storage. A 384-dimension row is ~2.2 KB with its tsvector, past the ~2 KB at which PostgreSQL starts moving
values out of the row, and pgvector's EXTERNAL storage made the vector the first to go: every scan that reads
vectors made three buffer reads per row instead of one. Now `embedding` is MAIN (it leaves the row only when
nothing else can) and `toast_tuple_target` is 4080, so a row up to half a page stays whole; a longer one has
its content and tsvector compressed, then moved out first. Both are catalog changes without a rewrite (SET
STORAGE holds an ACCESS EXCLUSIVE lock for milliseconds, but queues behind any running query on the table: migrate
when no long query runs), so they apply to rows written from now on. An UPDATE that leaves the vector alone keeps it
where it is; existing rows move inline when re-embedded (`manage.py reembed --all`) or when the table is
rewritten. Operator step on a big table: `pg_repack --table zeromem_memory` (online), or `VACUUM FULL
zeromem_memory` in a maintenance window (it locks the table for its duration); then `ANALYZE zeromem_memory`.
"""

import django.contrib.postgres.indexes
import pgvector.django.indexes
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models

ACTIVE = models.Q(state="raw")

# The tsvector column is generated in SQL (0001), outside the model state, so its index is SQL too.
SEARCH_GIN_FULL = "CREATE INDEX CONCURRENTLY memory_search_vector_gin ON zeromem_memory USING gin (search_vector)"
SEARCH_GIN_ACTIVE = ("CREATE INDEX CONCURRENTLY memory_active_search_gin ON zeromem_memory USING gin (search_vector) "
                     "WHERE state = 'raw'")


class Migration(migrations.Migration):

    atomic = False  # CREATE / DROP INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ('zeromem', '0004_apikey_user'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='memory',
            index=pgvector.django.indexes.HnswIndex(condition=ACTIVE, ef_construction=64, fields=['embedding'], m=16,
                                                    name='memory_active_hnsw', opclasses=['vector_cosine_ops']),
        ),
        RemoveIndexConcurrently(model_name='memory', name='memory_embedding_hnsw'),
        AddIndexConcurrently(
            model_name='memory',
            index=django.contrib.postgres.indexes.GinIndex(condition=ACTIVE, fields=['entities'],
                                                           name='memory_active_entities_gin'),
        ),
        RemoveIndexConcurrently(model_name='memory', name='memory_entities_gin'),
        AddIndexConcurrently(
            model_name='memory',
            index=django.contrib.postgres.indexes.GinIndex(condition=ACTIVE, fields=['tags'],
                                                           name='memory_active_tags_gin'),
        ),
        RemoveIndexConcurrently(model_name='memory', name='memory_tags_gin'),
        migrations.RunSQL(
            [SEARCH_GIN_ACTIVE, "DROP INDEX CONCURRENTLY memory_search_vector_gin"],
            reverse_sql=[SEARCH_GIN_FULL, "DROP INDEX CONCURRENTLY memory_active_search_gin"],
        ),
        migrations.RunSQL(
            ["ALTER TABLE zeromem_memory ALTER COLUMN embedding SET STORAGE MAIN",
             "ALTER TABLE zeromem_memory SET (toast_tuple_target = 4080)"],
            reverse_sql=["ALTER TABLE zeromem_memory ALTER COLUMN embedding SET STORAGE EXTERNAL",
                         "ALTER TABLE zeromem_memory RESET (toast_tuple_target)"],
        ),
    ]
