"""Keyed writes (PUT/GET/DELETE /memories/by-key): the caller names a memory by a key of its own, one memory per
(tenant, user, entity, namespace, key), enforced by the `memory_key_once` unique index.

A put stores the memory when the key holds none, else replaces the holder in place (same id and created_at): new
content is rewritten the way a correction is (`content_rewrite`: re-embedded, BM25 counters moved, what was built from
the old text unwound), the other fields are overwritten, and one ledger row says what changed. A put of what the key
already holds writes nothing. Concurrent puts of one key meet on the unique index and are applied one after the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from consolidation.corrections.erasure import Erasure, content_rewrite, memories_erase
from consolidation.ledger import ledger_write
from zeromem.core.adapters.embeddings import Vector, embed_texts
from zeromem.core.contention import StaleRead, retry_on_contention
from zeromem.core.domain.entities import classify_kind, extract_entities
from zeromem.core.events import event_emit
from zeromem.core.selectors import memory_by_key
from zeromem.core.services import DEFAULT_IMPORTANCE, MemoryInput, memory_keyed_insert, window_of, window_tag_prefix
from zeromem.models import Memory


@dataclass(frozen=True)
class KeyedPut:
    memory: Memory  # as the put left it (a concurrent delete may erase it right after the put commits)
    outcome: str  # "created", "replaced" or "unchanged"


@retry_on_contention
def memory_put_by_key(*, tenant_id: int, key: str, item: MemoryInput, actor: str) -> KeyedPut:
    """Store `item` under `key` in its scope, replacing what the key holds (module docstring).

    1. embed the text and work out the other fields outside any transaction;
    2. in one transaction, insert the keyed row unless the key holds one (a concurrent insert of the key is waited
       for on the unique index);
    3. else lock the holder and replace it, or write nothing when it already says the same;
    4. when the holder was erased between 2 and 3, the put runs again (`retry_on_contention`: then it inserts).
    """
    vector, fields = embed_texts([item.content])[0], _put_fields(tenant_id, item)
    with transaction.atomic():
        created = memory_keyed_insert(tenant_id=tenant_id, key=key, item=item, vector=vector)
        if created is not None:
            return KeyedPut(memory=Memory.objects.get(id=created), outcome="created")
        holder = memory_by_key(tenant_id=tenant_id, user_id=item.user_id, entity_id=item.entity_id,
                               namespace=item.namespace, key=key, lock=True)
        if holder is None:
            raise StaleRead(f"the memory of key {key!r} was erased under the put")
        return KeyedPut(memory=holder, outcome=_replace(holder, item.content, fields, vector, actor))


def _put_fields(tenant_id: int, item: MemoryInput) -> dict[str, Any]:
    """The fields other than the text a put sets. Kind and entities, when the put leaves them out, are what the
    built-in rules read in its text; importance left out is the default, as on a first put. created_at is the first
    put's and stays."""
    return {
        "session_id": item.session_id, "memory_type": item.memory_type, "role": item.role,
        "kind": item.kind or classify_kind(item.content),
        "entities": list(item.entities) if item.entities is not None else extract_entities(item.content),
        "tags": list(item.tags), "window": window_of(item, window_tag_prefix(tenant_id)),
        "importance": DEFAULT_IMPORTANCE if item.importance is None else item.importance,
        "metadata": item.metadata,
    }


def _replace(memory: Memory, content: str, fields: dict[str, Any], vector: Vector | None, actor: str) -> str:
    """Overwrite a locked memory; "unchanged" when it already holds exactly that."""
    if memory.content == content and not _differing(memory, fields):
        return "unchanged"
    old_hash = memory.content_hash
    if memory.content != content:
        content_rewrite(tenant_id=memory.tenant_id, memory=memory, content=content, vector=vector, actor=actor)
    changed = _differing(memory, fields)
    for name, value in changed.items():
        setattr(memory, name, value)
    memory.save()
    ledger_write(tenant_id=memory.tenant_id, action="replace", actor=actor, user_id=memory.user_id,
                 memory_ids=[memory.id], inputs={"content_hash": old_hash, "key": memory.key},
                 outputs={"content_hash": memory.content_hash, "fields": sorted(changed)},
                 reason="replaced by a keyed write")
    event_emit(event="memory.updated", tenant_id=memory.tenant_id, data={"memory_id": str(memory.id)})
    return "replaced"


def _differing(memory: Memory, fields: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if getattr(memory, name) != value}


def memory_delete_by_key(*, tenant_id: int, user_id: str, entity_id: str | None, namespace: str, key: str,
                         actor: str) -> Erasure:
    """Erase the memory a key names (as DELETE /memories/{id} does); nothing when the key holds none."""
    holder = memory_by_key(tenant_id=tenant_id, user_id=user_id, entity_id=entity_id, namespace=namespace, key=key)
    if holder is None:
        return Erasure()
    return memories_erase(tenant_id=tenant_id, memory_ids=[holder.id], actor=actor, reason="erasure request")
