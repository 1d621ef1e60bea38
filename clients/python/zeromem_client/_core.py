"""The transport-agnostic core both clients share: each operation as a `Call` (method, path, query, body, how to read
the answer, whether it is safe to send again), the request it becomes, the typed result or error an answer becomes,
and the retry policy. The sync and async clients only send requests and sleep.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from zeromem_client import __version__
from zeromem_client.errors import (
    APIConnectionError,
    APITimeoutError,
    RateLimitError,
    ServerError,
    ZeromemError,
    error_from_response,
)
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
M = TypeVar("M", bound=BaseModel)

API_PREFIX = "/api/v1/public/memory/v2"
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
API_KEY_ENV = "ZEROMEM_API_KEY"
BASE_URL_ENV = "ZEROMEM_URL"

# Backoff before retry n (0-based): INITIAL * 2**n seconds, at most MAX, less up to JITTER of it at random so that
# clients refused together do not come back together.
INITIAL_BACKOFF = 0.5
MAX_BACKOFF = 8.0
JITTER = 0.25
# A Retry-After longer than this is not waited out: the error is raised at once (with `retry_after`) so the caller
# decides, instead of a call that silently blocks for the rest of a rate-limit window.
MAX_RETRY_AFTER = 60.0

Id = str | uuid.UUID
When = datetime | str
ChatItem = str | Mapping[str, Any]


@dataclass(frozen=True)
class Call(Generic[T]):
    """One API operation. `idempotent`: sending it again after the server may have acted on it does no harm (the
    answer to a dropped connection or a 5xx is to resend). `retry_server_errors`: a 5xx is worth resending.
    `absent_ok`: a 404 is an answer (`parse(None)`), not an error."""

    method: str
    path: str
    parse: Callable[[Any], T]
    params: Mapping[str, Any] | None = None
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    idempotent: bool = True
    retry_server_errors: bool = True
    absent_ok: bool = False


@dataclass(frozen=True)
class HttpRequest:
    method: str
    url: str
    params: dict[str, Any]
    headers: dict[str, str]
    content: bytes | None


class Core:
    """Configuration, requests, answers and the retry policy; no I/O."""

    def __init__(self, *, api_key: str | None, base_url: str | None, timeout: float, max_retries: int) -> None:
        api_key = api_key or os.environ.get(API_KEY_ENV)
        if not api_key:
            raise ZeromemError(f"no API key: pass api_key=... or set {API_KEY_ENV}", code="missing_api_key")
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.api_key = api_key
        self.base_url = server_root(base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL)
        self.timeout = timeout
        self.max_retries = max_retries

    def request(self, call: Call[Any]) -> HttpRequest:
        headers = {"Authorization": f"Bearer {self.api_key}", "Accept": "application/json",
                   "User-Agent": f"zeromem-client/{__version__}", **call.headers}
        content = None
        if call.body is not None:
            content = json.dumps(call.body, default=jsonable).encode("utf-8")
            headers["Content-Type"] = "application/json"
        return HttpRequest(method=call.method, url=self.base_url + API_PREFIX + call.path,
                           params=compact(call.params or {}), headers=headers, content=content)

    def outcome(self, call: Call[T], status: int, headers: Mapping[str, str], content: bytes) -> T:
        """The typed result of an answer, or its typed error raised."""
        if 200 <= status < 300:
            return call.parse(json.loads(content) if content else None)
        if status == 404 and call.absent_ok:
            return call.parse(None)
        raise error_from_response(status, headers, content)

    def retry_delay(self, call: Call[Any], attempt: int, error: ZeromemError) -> float | None:
        """Seconds to wait before sending `call` again after `error` on retry `attempt` (0-based), or None to raise.
        A 429, and a request that never left, are always worth another try; a dropped connection or a 5xx only
        when the call is idempotent."""
        if attempt >= self.max_retries or not retryable(call, error):
            return None
        if error.retry_after is not None:
            return error.retry_after if error.retry_after <= MAX_RETRY_AFTER else None
        return backoff(attempt)


def retryable(call: Call[Any], error: ZeromemError) -> bool:
    if isinstance(error, RateLimitError):
        return True  # refused before the server did anything
    if isinstance(error, APIConnectionError):
        return call.idempotent or not error.request_sent
    if isinstance(error, ServerError):
        return call.idempotent and call.retry_server_errors
    return False


def backoff(attempt: int) -> float:
    delay: float = min(MAX_BACKOFF, INITIAL_BACKOFF * 2**attempt)
    return delay * (1 - JITTER * random.random())


def connection_error(exc: httpx.TransportError) -> APIConnectionError:
    """The client's error for a request that got no answer; `request_sent` is False when it never left (the
    connection was refused or not made in time), so the server cannot have acted on it."""
    sent = not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"no answer in time: {exc!r}", request_sent=sent)
    return APIConnectionError(f"the connection failed: {exc!r}", request_sent=sent)


def server_root(url: str) -> str:
    """The server's root without a trailing slash; a URL that already ends in the API prefix is taken too."""
    url = url.rstrip("/")
    return url[: -len(API_PREFIX)] if url.endswith(API_PREFIX) else url


def compact(values: Mapping[str, Any]) -> dict[str, Any]:
    """Only what the caller set: a server that does not know an optional parameter yet never sees it."""
    return {k: v for k, v in values.items() if v is not None}


def jsonable(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def segment(value: Id) -> str:
    return quote(str(value), safe="")


def model(cls: type[M]) -> Callable[[Any], M]:
    return cls.model_validate


def page_of(cls: type[M], key: str) -> Callable[[Any], Page[M]]:
    def parse(body: Any) -> Page[M]:
        return Page(items=[cls.model_validate(item) for item in body[key]], next_cursor=body.get("next_cursor"))

    return parse


# --- operations ----------------------------------------------------------------------------------------------

def memory_items(content_or_items: ChatItem | Iterable[ChatItem], defaults: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The batch: each string becomes `{"content": ...}`, each mapping (a chat message `{"role", "content"}`, or
    any memory's fields) is taken as is; the call's keyword arguments fill what an item does not say."""
    raw: Sequence[ChatItem] = ([content_or_items] if isinstance(content_or_items, str | Mapping)
                               else list(content_or_items))
    batch = []
    for item in raw:
        if isinstance(item, str):
            item = {"content": item}
        elif not isinstance(item, Mapping):
            raise TypeError(f"a memory is a string or a mapping with 'content', not {type(item).__name__}")
        batch.append(compact({**defaults, **compact(item)}))
    return batch


def add(content_or_items: ChatItem | Iterable[ChatItem], *, idempotency_key: str | None,
        **defaults: Any) -> Call[AddResult]:
    """One Idempotency-Key per call, sent again with every retry: the server replays its first answer, so a
    retried batch is never stored twice."""
    return Call("POST", "/memories", model(AddResult), body={"memories": memory_items(content_or_items, defaults)},
                headers={"Idempotency-Key": idempotency_key or uuid.uuid4().hex})


def search(query: str, **filters: Any) -> Call[list[SearchResult]]:
    return Call("POST", "/search", lambda body: [SearchResult.model_validate(hit) for hit in body["results"]],
                body=compact({"query": query, **filters}))


def context(query: str, **fields: Any) -> Call[Context]:
    return Call("POST", "/context", model(Context), body=compact({"query": query, **fields}))


def get(memory_id: Id) -> Call[Memory]:
    return Call("GET", f"/memories/{segment(memory_id)}", model(Memory))


def memories_page(*, cursor: str | None, page_size: int, **filters: Any) -> Call[Page[Memory]]:
    return Call("GET", "/memories", page_of(Memory, "memories"),
                params={**filters, "cursor": cursor, "limit": page_size})


def put(key: str, content: str, **fields: Any) -> Call[KeyedResult]:
    """Idempotent by its key: a resent put finds the key holding what it sent and writes nothing."""
    return Call("PUT", "/memories/by-key", model(KeyedResult), body=compact({"key": key, "content": content,
                                                                              **fields}))


def get_by_key(key: str, **scope: Any) -> Call[Memory | None]:
    parse = model(Memory)
    return Call("GET", "/memories/by-key", lambda body: None if body is None else parse(body),
                params={**scope, "key": key}, absent_ok=True)


def delete_by_key(key: str, **scope: Any) -> Call[Erasure]:
    return Call("DELETE", "/memories/by-key", model(Erasure), params={**scope, "key": key})


def update(memory_id: Id, content: str) -> Call[Memory]:
    return Call("PATCH", f"/memories/{segment(memory_id)}", model(Memory), body={"content": content})


def delete(memory_id: Id) -> Call[Erasure]:
    return Call("DELETE", f"/memories/{segment(memory_id)}", model(Erasure))


def forget(*, user_id: str | None, entity_id: str | None) -> Call[Erasure]:
    if user_id is None and entity_id is None:
        raise ValueError("forget() needs user_id (a user) or entity_id (an entity, optionally of one user)")
    return Call("POST", "/forget", model(Erasure), body=compact({"user_id": user_id, "entity_id": entity_id}))


def feedback(memory_id: Id, useful: bool) -> Call[Feedback]:
    # Not idempotent: each request moves the reward once more, so a dropped answer is not resent.
    return Call("POST", f"/memories/{segment(memory_id)}/feedback", model(Feedback), body={"useful": useful},
                idempotent=False)


def profile(**params: Any) -> Call[Profile | None]:
    parse = model(Profile)
    return Call("GET", "/profile", lambda body: None if body is None else parse(body), params=params,
                absent_ok=True)


def reflect(**fields: Any) -> Call[ReflectResult]:
    # A resent request joins the run already going, so a dropped answer is resent; a 503 is the run's own
    # failure after the server's LLM retries, and sending it again would only start another run.
    return Call("POST", "/reflect", model(ReflectResult), body=compact(fields), retry_server_errors=False)


def end_session(session_id: str, *, user_id: str) -> Call[SessionEnd]:
    return Call("POST", f"/sessions/{segment(session_id)}/end", model(SessionEnd), body={"user_id": user_id})


def run(run_id: Id) -> Call[Run]:
    return Call("GET", f"/runs/{segment(run_id)}", model(Run))


def runs_page(*, cursor: str | None, page_size: int, **filters: Any) -> Call[Page[Run]]:
    return Call("GET", "/runs", page_of(Run, "runs"), params={**filters, "cursor": cursor, "limit": page_size})


def history(memory_id: Id) -> Call[MemoryHistory]:
    return Call("GET", f"/memories/{segment(memory_id)}/history", model(MemoryHistory))
