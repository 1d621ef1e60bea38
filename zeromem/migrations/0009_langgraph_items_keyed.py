"""Items the LangGraph store (clients/python/zeromem_client/langgraph.py) wrote before keyed writes existed carry their
address in `metadata.langgraph` only; the store now reads them by key ("<namespace depth>/<key>"). Each address's
newest memory gets its key, so upgraded graphs keep their items; older copies of the same address (left by concurrent
puts) stay plain memories."""

from django.db import migrations

KEY_LANGGRAPH_ITEMS = """
UPDATE zeromem_memory m SET key = newest.key
  FROM (SELECT DISTINCT ON (tenant_id, user_id, entity_id, namespace, key) id, key
          FROM (SELECT id, tenant_id, user_id, entity_id, namespace, created_at,
                       jsonb_array_length(metadata->'langgraph'->'namespace') || '/'
                       || (metadata->'langgraph'->>'key') AS key
                  FROM zeromem_memory
                 WHERE key IS NULL AND memory_type <> 'semantic' AND 'langgraph' = ANY(tags)
                   AND jsonb_typeof(metadata->'langgraph'->'namespace') = 'array'
                   AND jsonb_typeof(metadata->'langgraph'->'key') = 'string') items
         ORDER BY tenant_id, user_id, entity_id, namespace, key, created_at DESC, id DESC) newest
 WHERE m.id = newest.id AND length(newest.key) <= 500
"""


class Migration(migrations.Migration):

    dependencies = [
        ("zeromem", "0008_memory_key"),
    ]

    operations = [migrations.RunSQL(KEY_LANGGRAPH_ITEMS, reverse_sql=migrations.RunSQL.noop)]
