# Generated from _sync.py by clients/python/scripts/gen_async.py: edit _sync.py and re-run it.
"""`AsyncZeromem`, the asyncio client: the same calls as `Zeromem`, sent with httpx.AsyncClient."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
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


class AsyncZeromem:
    """`Zeromem` for asyncio: the same methods, awaited (`list()` and `runs()` are async iterators). Pass
    `http_client` to bring your own httpx.AsyncClient; it is then yours to close."""

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._core = Core(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)
        self._http = http_client if http_client is not None else httpx.AsyncClient()
        self._owns_http = http_client is None
        self._sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    @property
    def base_url(self) -> str:
        return self._core.base_url

    def __repr__(self) -> str:
        return f"AsyncZeromem(base_url={self.base_url!r})"

    async def close(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncZeromem:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # --- memories ------------------------------------------------------------------------------------------------

    async def add(
        self,
        content_or_items: ChatItem | Iterable[ChatItem],
        *,
        user_id: str,
        entity_id: str | None = None,
        namespace: str = "global",
        session_id: str | None = None,
        role: str | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
        tags: builtins.list[str] | None = None,
        created_at: When | None = None,
        idempotency_key: str | None = None,
    ) -> AddResult:
        """Remember one text, a list of texts or memory dicts, or chat messages `[{"role", "content"}]` (the
        keyword arguments fill what an item does not say). Stored all or nothing; retried safely."""
        return await self._send(
            ops.add(
                content_or_items,
                idempotency_key=idempotency_key,
                user_id=user_id,
                entity_id=entity_id,
                namespace=namespace,
                session_id=session_id,
                role=role,
                metadata=metadata,
                importance=importance,
                tags=tags,
                created_at=created_at,
            )
        )

    async def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        entity_id: str | None = None,
        namespace: str | None = None,
        top_k: int = 10,
        memory_types: builtins.list[str] | None = None,
        states: builtins.list[str] | None = None,
        as_of: When | None = None,
        include_history: bool | None = None,
    ) -> builtins.list[SearchResult]:
        return await self._send(
            ops.search(
                query,
                user_id=user_id,
                entity_id=entity_id,
                namespace=namespace,
                top_k=top_k,
                memory_types=memory_types,
                states=states,
                as_of=as_of,
                include_history=include_history,
            )
        )

    async def context(
        self,
        query: str,
        *,
        user_id: str,
        entity_id: str | None = None,
        namespace: str | None = None,
        budget_chars: int = 2000,
        as_of: When | None = None,
        include_history: bool | None = None,
    ) -> Context:
        """What to inject into the prompt before answering `query`: `str(result)` / `result.context`."""
        return await self._send(
            ops.context(
                query,
                user_id=user_id,
                entity_id=entity_id,
                namespace=namespace,
                budget_chars=budget_chars,
                as_of=as_of,
                include_history=include_history,
            )
        )

    async def get(self, memory_id: Id) -> Memory:
        return await self._send(ops.get(memory_id))

    def list(
        self,
        *,
        user_id: str | None = None,
        entity_id: str | None = None,
        namespace: str | None = None,
        memory_type: str | None = None,
        state: str | None = None,
        page_size: int = 50,
    ) -> AsyncIterator[Memory]:
        """Every matching memory, newest first, fetched `page_size` at a time as the iterator is consumed."""
        return self._pages(
            lambda cursor: ops.memories_page(
                cursor=cursor,
                page_size=page_size,
                user_id=user_id,
                entity_id=entity_id,
                namespace=namespace,
                memory_type=memory_type,
                state=state,
            )
        )

    async def put(
        self,
        key: str,
        content: str,
        *,
        user_id: str,
        entity_id: str | None = None,
        namespace: str = "global",
        session_id: str | None = None,
        role: str | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
        tags: builtins.list[str] | None = None,
        kind: str | None = None,
        entities: builtins.list[str] | None = None,
        created_at: When | None = None,
    ) -> KeyedResult:
        """Store `content` as the memory of `key` in its scope (user, entity, namespace), replacing what the key
        holds in place: one memory per key, even under concurrent puts. Every field is set as given (omitted ones
        to their defaults); `created_at` counts for the key's first put only. Retried safely."""
        return await self._send(
            ops.put(
                key,
                content,
                user_id=user_id,
                entity_id=entity_id,
                namespace=namespace,
                session_id=session_id,
                role=role,
                metadata=metadata,
                importance=importance,
                tags=tags,
                kind=kind,
                entities=entities,
                created_at=created_at,
            )
        )

    async def get_by_key(
        self, key: str, *, user_id: str, entity_id: str | None = None, namespace: str = "global"
    ) -> Memory | None:
        """The memory of `key` in its scope, or None when the key holds none."""
        return await self._send(ops.get_by_key(key, user_id=user_id, entity_id=entity_id, namespace=namespace))

    async def delete_by_key(
        self, key: str, *, user_id: str, entity_id: str | None = None, namespace: str = "global"
    ) -> Erasure:
        """Erase the memory of `key` (as `delete`); a key holding none answers `deleted == 0`, not an error."""
        return await self._send(ops.delete_by_key(key, user_id=user_id, entity_id=entity_id, namespace=namespace))

    async def update(self, memory_id: Id, content: str) -> Memory:
        return await self._send(ops.update(memory_id, content))

    async def delete(self, memory_id: Id) -> Erasure:
        return await self._send(ops.delete(memory_id))

    async def forget(self, *, user_id: str | None = None, entity_id: str | None = None) -> Erasure:
        return await self._send(ops.forget(user_id=user_id, entity_id=entity_id))

    async def feedback(self, memory_id: Id, useful: bool) -> Feedback:
        return await self._send(ops.feedback(memory_id, useful))

    async def history(self, memory_id: Id) -> MemoryHistory:
        return await self._send(ops.history(memory_id))

    # --- profiles, reflection, sessions, runs --------------------------------------------------------------------

    async def profile(
        self, *, user_id: str, entity_id: str | None = None, namespace: str = "global", budget_chars: int | None = None
    ) -> Profile | None:
        """None until a reflection has written one. `budget_chars`: `static` and `recent` hold only the summary
        and the strongest items that fit."""
        return await self._send(
            ops.profile(user_id=user_id, entity_id=entity_id, namespace=namespace, budget_chars=budget_chars)
        )

    async def reflect(
        self,
        *,
        entity_id: str | None = None,
        user_id: str | None = None,
        namespace: str = "global",
        force: bool = False,
    ) -> ReflectResult:
        return await self._send(ops.reflect(entity_id=entity_id, user_id=user_id, namespace=namespace, force=force))

    async def end_session(self, session_id: str, *, user_id: str) -> SessionEnd:
        return await self._send(ops.end_session(session_id, user_id=user_id))

    async def run(self, run_id: Id) -> Run:
        return await self._send(ops.run(run_id))

    def runs(
        self,
        *,
        user_id: str | None = None,
        entity_id: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        page_size: int = 50,
    ) -> AsyncIterator[Run]:
        return self._pages(
            lambda cursor: ops.runs_page(
                cursor=cursor, page_size=page_size, user_id=user_id, entity_id=entity_id, kind=kind, status=status
            )
        )

    # --- sending -------------------------------------------------------------------------------------------------

    async def _send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            try:
                return await self._attempt(call)
            except ZeromemError as error:
                delay = self._core.retry_delay(call, attempt, error)
                if delay is None:
                    raise
            await self._sleep(delay)
            attempt += 1

    async def _attempt(self, call: Call[T]) -> T:
        request = self._core.request(call)
        try:
            response = await self._http.request(
                request.method,
                request.url,
                params=request.params,
                content=request.content,
                headers=request.headers,
                timeout=self._core.timeout,
            )
        except httpx.TransportError as exc:
            raise ops.connection_error(exc) from exc
        return self._core.outcome(call, response.status_code, response.headers, response.content)

    async def _pages(self, page: Callable[[str | None], Call[Page[T]]]) -> AsyncIterator[T]:
        cursor = None
        while True:
            result = await self._send(page(cursor))
            for item in result.items:
                yield item
            if not result.next_cursor:
                return
            cursor = result.next_cursor
