"""`ZeromemStore`: a LangGraph `BaseStore` on zeromem, so a graph's long-term memory is zeromem's (hybrid search,
consolidation, profiles) through the store API it already uses (`store.put/get/search/delete/list_namespaces`).

**Namespaces.** A LangGraph namespace is a tuple; its first labels name the zeromem scope, so put the user first:

| namespace tuple | zeromem user_id | entity_id | namespace |
|---|---|---|---|
| `(user,)` | user | none (the user's own memories) | `global` |
| `(user, entity)` | user | entity | `global` |
| `(user, entity, a, b, ...)` | user | entity | `"a.b..."` (labels joined with `.`, which no label may contain) |

The full tuple and the key are kept in the memory's metadata too, so `(u, e)` and `(u, e, "global")` stay two
namespaces even though they share a zeromem scope.

**Items.** `put(ns, key, value)` stores one memory with zeromem's keyed put (`PUT /memories/by-key`): the server
keeps one memory per key in a scope, so concurrent puts of one key (parallel branches, `Send` fan-outs) leave one
item, the last put's. The zeromem key is `"<depth>/<key>"` (the namespace's number of labels, then the LangGraph
key: `(u, e)` and `(u, e, "global")` share a zeromem scope), at most 500 characters. The memory's content is
`value["content"]` (or `value["text"]`) when that is a string, else the value as JSON (keys sorted); the rest of the
value, the key and the namespace go to `metadata["langgraph"]`, and the memory is tagged `langgraph`. Each item is a
session of its own (its id derived from namespace and key), so the jobs never read two items as one conversation.
`get` answers the value as stored, except that the content field follows the memory's content (a correction made
through the API shows). Putting a key again replaces its memory in place (`created_at` stays, `updated_at` moves;
a put of the same value writes nothing); `put(..., None)` / `delete` erases it, with what was built from it, and
is a no-op for a key that holds nothing.

**Costs.** `get` is one `GET /memories/by-key`; a put one `PUT`, a delete one `DELETE`. `search` with a query is one
`POST /search` of the prefix's scope (the 100 best hits, in every state and superseded ones included; semantic
memories built by consolidation and memories written outside the store are left out); without a query it lists the
scope newest first (`GET /memories`, 500 per request). `list_namespaces` lists every memory of the scope its prefix
names (the whole tenant without a prefix): keep the user first and pass it.

**Differences from `InMemoryStore`.** Search with a query answers only what zeromem's search finds (memories
sharing a word with the query or close in meaning), best first, with zeromem's score; order without a query is
newest first. Items stay subject to zeromem's lifecycle (an item consolidated into a semantic memory is still found;
one archived by decay too, until it is purged; pass `importance=0.7` or more to keep items from decay). `ttl` and
`index` arguments are not supported (`index` is accepted and ignored: zeromem indexes every memory). `abatch` runs
`batch` in a worker thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from zeromem_client import Zeromem
from zeromem_client.models import Memory

META = "langgraph"
TAG = "langgraph"
CONTENT_FIELDS = ("content", "text")
ALL_STATES = ["raw", "consolidated", "archived"]
MAX_TOP_K = 100
PAGE = 500

Namespace = tuple[str, ...]


@dataclass(frozen=True)
class Scope:
    """The zeromem filters a namespace (or a namespace prefix) fixes; None: not fixed."""

    user_id: str | None = None
    entity_id: str | None = None
    namespace: str | None = None

    @classmethod
    def of(cls, namespace: Namespace) -> Scope:
        """The scope of an item's namespace (at least one label)."""
        return cls(user_id=namespace[0], entity_id=namespace[1] if len(namespace) > 1 else None,
                   namespace=".".join(namespace[2:]) or "global")

    @classmethod
    def of_prefix(cls, prefix: Namespace) -> Scope:
        """What every namespace under `prefix` shares: the user and entity, and the namespace only if it cannot
        go deeper (a prefix `(u, e, a)` also covers `(u, e, a, b)`, stored in namespace `a.b`)."""
        return cls(user_id=prefix[0] if prefix else None, entity_id=prefix[1] if len(prefix) > 1 else None)

    def filters(self) -> dict[str, str | None]:
        return {"user_id": self.user_id, "entity_id": self.entity_id, "namespace": self.namespace}


def zeromem_key(namespace: Namespace, key: str) -> str:
    """The item's key in its zeromem scope: the depth tells `(u, e)` from `(u, e, "global")`, which share it."""
    return f"{len(namespace)}/{key}"


def session_of(namespace: Namespace, key: str) -> str:
    """One session per item: the jobs never read two items as one conversation."""
    digest = hashlib.sha256(json.dumps([list(namespace), key]).encode("utf-8")).hexdigest()
    return f"langgraph-{digest[:32]}"


def content_of(value: Mapping[str, Any]) -> tuple[str, str | None]:
    """The memory's text and the value's field it came from (None: the whole value as JSON)."""
    for name in CONTENT_FIELDS:
        text = value.get(name)
        if isinstance(text, str) and text.strip():
            return text, name
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str), None


def marker(memory: Memory) -> dict[str, Any] | None:
    """The store's metadata on a memory it wrote, else None."""
    data = memory.metadata.get(META)
    if isinstance(data, dict) and isinstance(data.get("namespace"), list) and isinstance(data.get("key"), str):
        return data
    return None


def address(memory: Memory) -> tuple[Namespace, str] | None:
    """The item a memory holds: the store's metadata, confirmed by the memory's zeromem key."""
    data = marker(memory)
    if data is None or memory.key != zeromem_key(tuple(data["namespace"]), data["key"]):
        return None
    return tuple(data["namespace"]), data["key"]


def item_of(memory: Memory, score: float | None = None, *, search: bool = False) -> Item:
    data = marker(memory)
    assert data is not None
    value = dict(data.get("value") or {})
    if data.get("content_field"):
        value[data["content_field"]] = memory.content
    fields = {"namespace": tuple(data["namespace"]), "key": data["key"], "value": value,
              "created_at": memory.created_at, "updated_at": memory.updated_at or memory.created_at}
    return SearchItem(**fields, score=score) if search else Item(**fields)


def matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: exact match, nested dicts, and `$eq/$ne/$gt/$gte/$lt/$lte`."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(compare(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, dict) and all(matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (isinstance(value, list | tuple) and len(value) == len(wanted)
                and all(matches(v, w) for v, w in zip(value, wanted, strict=True)))
    return bool(value == wanted)


def compare(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    if value is None:
        return False
    if op == "$gt":
        return float(value) > float(operand)
    if op == "$gte":
        return float(value) >= float(operand)
    if op == "$lt":
        return float(value) < float(operand)
    if op == "$lte":
        return float(value) <= float(operand)
    raise ValueError(f"unsupported filter operator: {op}")


def namespace_matches(namespace: Namespace, condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    side = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, side, strict=True))


class ZeromemStore(BaseStore):
    """A LangGraph store on zeromem (see the module's docstring for the mapping and the costs).

    `client`: a `Zeromem` (default: one configured from ZEROMEM_URL / ZEROMEM_API_KEY). `importance`: given to every
    memory the store writes (default: the server's 0.5; 0.7 or more keeps items from decay)."""

    def __init__(self, client: Zeromem | None = None, *, importance: float | None = None) -> None:
        self.client = client if client is not None else Zeromem()
        self.importance = importance

    # --- BaseStore ------------------------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Reads first, in order, then the writes (the last put of a key wins), as `InMemoryStore` does."""
        ops = list(ops)
        results: list[Result] = []
        puts: dict[tuple[Namespace, str], PutOp] = {}
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
            else:
                results.append(self._read(op))
        for op in puts.values():
            self._write(op)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # --- reads --------------------------------------------------------------------------------------------------------

    def _read(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            memory = self._find(tuple(op.namespace), op.key)
            return item_of(memory) if memory is not None else None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        raise ValueError(f"unknown operation: {type(op).__name__}")

    def _find(self, namespace: Namespace, key: str) -> Memory | None:
        scope = Scope.of(namespace)
        memory = self.client.get_by_key(zeromem_key(namespace, key), user_id=scope.user_id or "",
                                        entity_id=scope.entity_id, namespace=scope.namespace or "global")
        return memory if memory is not None and address(memory) == (namespace, key) else None

    def _scan(self, scope: Scope) -> Iterator[Memory]:
        """The store's memories in a scope, newest first."""
        for memory in self.client.list(**scope.filters(), page_size=PAGE):
            if address(memory) is not None:
                yield memory

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        scope = Scope.of_prefix(prefix)
        if op.query:
            hits = self.client.search(op.query, user_id=scope.user_id, entity_id=scope.entity_id, top_k=MAX_TOP_K,
                                      states=ALL_STATES, include_history=True)
            candidates: Iterable[tuple[Memory, float | None]] = ((hit.memory, hit.score) for hit in hits)
        else:
            candidates = ((memory, None) for memory in self._scan(scope))
        found: list[SearchItem] = []
        for memory, score in candidates:
            item = item_of(memory, score, search=True) if address(memory) is not None else None
            if item is None or item.namespace[: len(prefix)] != prefix:
                continue
            if op.filter and not all(matches(item.value.get(k), v) for k, v in op.filter.items()):
                continue
            found.append(item)  # type: ignore[arg-type]
            if len(found) >= op.offset + op.limit:
                break
        return found[op.offset: op.offset + op.limit]

    def _namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        conditions = op.match_conditions or ()
        prefix = next((c.path for c in conditions if c.match_type == "prefix"), ())
        fixed = tuple(label for label in _until_wildcard(prefix))
        seen = {ns for ns, _ in filter(None, map(address, self._scan(Scope.of_prefix(fixed))))}
        kept = [ns for ns in seen if all(namespace_matches(ns, c) for c in conditions)]
        if op.max_depth is not None:
            kept = list({ns[: op.max_depth] for ns in kept})
        return sorted(kept)[op.offset: op.offset + op.limit]

    # --- writes -------------------------------------------------------------------------------------------------------

    def _write(self, op: PutOp) -> None:
        """One keyed put (or delete) on the server: atomic there, whatever else writes the key meanwhile."""
        namespace = tuple(op.namespace)
        scope = Scope.of(namespace)
        key, user_id, entity_id = zeromem_key(namespace, op.key), scope.user_id or "", scope.entity_id
        if op.value is None:
            self.client.delete_by_key(key, user_id=user_id, entity_id=entity_id, namespace=scope.namespace or "global")
            return
        value = dict(op.value)
        text, field = content_of(value)
        # The content field is not kept twice: reading puts the memory's content back in it.
        kept = {k: v for k, v in value.items() if k != field}
        meta = {"namespace": list(namespace), "key": op.key, "value": kept, "content_field": field}
        self.client.put(key, text, user_id=user_id, entity_id=entity_id, namespace=scope.namespace or "global",
                        session_id=session_of(namespace, op.key), metadata={META: meta}, importance=self.importance,
                        tags=[TAG])


def _until_wildcard(path: Iterable[str]) -> Iterator[str]:
    for label in path:
        if label == "*":
            return
        yield label
