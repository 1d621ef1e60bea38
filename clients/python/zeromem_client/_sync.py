"""`Zeromem`, the blocking client: sends the core's calls with httpx and sleeps between retries."""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import Any, TypeVar

import httpx

from zeromem_client import _core as ops
from zeromem_client._core import Call, ChatItem, Core, Id, When
from zeromem_client.errors import ZeromemError
from zeromem_client.models import (
    AddResult,
    Context,
    Erasure,
    Feedback,
    KeyedResult,
    Memory,
    MemoryHistory,
    Page,
    Profile,
    ReflectResult,
    Run,
    SearchResult,
    SessionEnd,
)

T = TypeVar("T")


class Zeromem:
    """The zeromem API. `api_key` and `base_url` (the server's root, e.g. http://127.0.0.1:8000) default to
    ZEROMEM_API_KEY and ZEROMEM_URL. Every call is tried up to `1 + max_retries` times (429, 5xx, dropped
    connections; see README) with `timeout` seconds per try. Pass `http_client` to bring your own httpx.Client
    (proxies, transports); it is then yours to close."""

    def __init__(self, api_key: str | None = None, base_url: str | None = None, *, timeout: float = 30.0,
                 max_retries: int = 3, http_client: httpx.Client | None = None) -> None:
        self._core = Core(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)
        self._http = http_client if http_client is not None else httpx.Client()
        self._owns_http = http_client is None
        self._sleep: Callable[[float], None] = time.sleep

    @property
    def base_url(self) -> str:
        return self._core.base_url

    def __repr__(self) -> str:
        return f"Zeromem(base_url={self.base_url!r})"

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Zeromem:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- memories ------------------------------------------------------------------------------------------------

    def add(self, content_or_items: ChatItem | Iterable[ChatItem], *, user_id: str, entity_id: str | None = None,
            namespace: str = "global", session_id: str | None = None, role: str | None = None,
            metadata: dict[str, Any] | None = None, importance: float | None = None,
            tags: builtins.list[str] | None = None, created_at: When | None = None,
            idempotency_key: str | None = None) -> AddResult:
        """Remember one text, a list of texts or memory dicts, or chat messages `[{"role", "content"}]` (the
        keyword arguments fill what an item does not say). Stored all or nothing; retried safely."""
        return self._send(ops.add(content_or_items, idempotency_key=idempotency_key, user_id=user_id,
                                  entity_id=entity_id, namespace=namespace, session_id=session_id, role=role,
                                  metadata=metadata, importance=importance, tags=tags, created_at=created_at))

    def search(self, query: str, *, user_id: str | None = None, entity_id: str | None = None,
               namespace: str | None = None, top_k: int = 10, memory_types: builtins.list[str] | None = None,
               states: builtins.list[str] | None = None, as_of: When | None = None,
               include_history: bool | None = None) -> builtins.list[SearchResult]:
        return self._send(ops.search(query, user_id=user_id, entity_id=entity_id, namespace=namespace,
                                     top_k=top_k, memory_types=memory_types, states=states, as_of=as_of,
                                     include_history=include_history))

    def context(self, query: str, *, user_id: str, entity_id: str | None = None, namespace: str | None = None,
                budget_chars: int = 2000, as_of: When | None = None, include_history: bool | None = None) -> Context:
        """What to inject into the prompt before answering `query`: `str(result)` / `result.context`."""
        return self._send(ops.context(query, user_id=user_id, entity_id=entity_id,
                                      namespace=namespace, budget_chars=budget_chars, as_of=as_of,
                                      include_history=include_history))

    def get(self, memory_id: Id) -> Memory:
        return self._send(ops.get(memory_id))

    def list(self, *, user_id: str | None = None, entity_id: str | None = None, namespace: str | None = None,
             memory_type: str | None = None, state: str | None = None, page_size: int = 50) -> Iterator[Memory]:
        """Every matching memory, newest first, fetched `page_size` at a time as the iterator is consumed."""
        return self._pages(lambda cursor: ops.memories_page(
            cursor=cursor, page_size=page_size, user_id=user_id, entity_id=entity_id, namespace=namespace,
            memory_type=memory_type, state=state))

    def put(self, key: str, content: str, *, user_id: str, entity_id: str | None = None,
              namespace: str = "global", session_id: str | None = None, role: str | None = None,
              metadata: dict[str, Any] | None = None, importance: float | None = None,
              tags: builtins.list[str] | None = None, kind: str | None = None,
              entities: builtins.list[str] | None = None, created_at: When | None = None) -> KeyedResult:
        """Store `content` as the memory of `key` in its scope (user, entity, namespace), replacing what the key
        holds in place: one memory per key, even under concurrent puts. Every field is set as given (omitted ones
        to their defaults); `created_at` counts for the key's first put only. Retried safely."""
        return self._send(ops.put(key, content, user_id=user_id, entity_id=entity_id, namespace=namespace,
                                      session_id=session_id, role=role, metadata=metadata, importance=importance,
                                      tags=tags, kind=kind, entities=entities, created_at=created_at))

    def get_by_key(self, key: str, *, user_id: str, entity_id: str | None = None,
                     namespace: str = "global") -> Memory | None:
        """The memory of `key` in its scope, or None when the key holds none."""
        return self._send(ops.get_by_key(key, user_id=user_id, entity_id=entity_id, namespace=namespace))

    def delete_by_key(self, key: str, *, user_id: str, entity_id: str | None = None,
                        namespace: str = "global") -> Erasure:
        """Erase the memory of `key` (as `delete`); a key holding none answers `deleted == 0`, not an error."""
        return self._send(ops.delete_by_key(key, user_id=user_id, entity_id=entity_id, namespace=namespace))

    def update(self, memory_id: Id, content: str) -> Memory:
        return self._send(ops.update(memory_id, content))

    def delete(self, memory_id: Id) -> Erasure:
        return self._send(ops.delete(memory_id))

    def forget(self, *, user_id: str | None = None, entity_id: str | None = None) -> Erasure:
        return self._send(ops.forget(user_id=user_id, entity_id=entity_id))

    def feedback(self, memory_id: Id, useful: bool) -> Feedback:
        return self._send(ops.feedback(memory_id, useful))

    def history(self, memory_id: Id) -> MemoryHistory:
        return self._send(ops.history(memory_id))

    # --- profiles, reflection, sessions, runs --------------------------------------------------------------------

    def profile(self, *, user_id: str, entity_id: str | None = None, namespace: str = "global",
                budget_chars: int | None = None) -> Profile | None:
        """None until a reflection has written one. `budget_chars`: `static` and `recent` hold only the summary
        and the strongest items that fit."""
        return self._send(ops.profile(user_id=user_id, entity_id=entity_id, namespace=namespace,
                                      budget_chars=budget_chars))

    def reflect(self, *, entity_id: str | None = None, user_id: str | None = None, namespace: str = "global",
                force: bool = False) -> ReflectResult:
        return self._send(ops.reflect(entity_id=entity_id, user_id=user_id, namespace=namespace, force=force))

    def end_session(self, session_id: str, *, user_id: str) -> SessionEnd:
        return self._send(ops.end_session(session_id, user_id=user_id))

    def run(self, run_id: Id) -> Run:
        return self._send(ops.run(run_id))

    def runs(self, *, user_id: str | None = None, entity_id: str | None = None, kind: str | None = None,
             status: str | None = None, page_size: int = 50) -> Iterator[Run]:
        return self._pages(lambda cursor: ops.runs_page(cursor=cursor, page_size=page_size, user_id=user_id,
                                                        entity_id=entity_id, kind=kind, status=status))

    # --- sending -------------------------------------------------------------------------------------------------

    def _send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            try:
                return self._attempt(call)
            except ZeromemError as error:
                delay = self._core.retry_delay(call, attempt, error)
                if delay is None:
                    raise
            self._sleep(delay)
            attempt += 1

    def _attempt(self, call: Call[T]) -> T:
        request = self._core.request(call)
        try:
            response = self._http.request(request.method, request.url, params=request.params,
                                          content=request.content, headers=request.headers,
                                          timeout=self._core.timeout)
        except httpx.TransportError as exc:
            raise ops.connection_error(exc) from exc
        return self._core.outcome(call, response.status_code, response.headers, response.content)

    def _pages(self, page: Callable[[str | None], Call[Page[T]]]) -> Iterator[T]:
        cursor = None
        while True:
            result = self._send(page(cursor))
            yield from result.items
            if not result.next_cursor:
                return
            cursor = result.next_cursor
