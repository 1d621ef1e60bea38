"""zeromem-client without a server: what it sends (only the parameters the caller set), the retry policy
(Retry-After honoured, jitter, what is never resent), how answers become typed errors and models, and what the
distribution pulls in (never Django). tests/clients/test_client.py runs every call against the real API."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from importlib.metadata import PackageNotFoundError, requires
from typing import Any

import httpx
import pytest
from packaging.requirements import Requirement
from zeromem_client import (
    AuthenticationError,
    ConflictError,
    NotFoundError,
    RateLimitError,
    ServerError,
    ValidationError,
    Zeromem,
    ZeromemError,
)
from zeromem_client._core import backoff
from zeromem_client.errors import error_from_response, retry_after_seconds
from zeromem_client.models import Memory

Handler = Callable[[httpx.Request], httpx.Response]
FORBIDDEN = re.compile(r"^(django.*|celery|kombu|redis|psycopg.*|asyncpg|pymysql|mysqlclient|pgvector|sqlalchemy"
                       r"|dj-database-url)$")


class Recorder:
    """A fake server: answers from a list, records what was sent."""

    def __init__(self, *answers: httpx.Response) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def bodies(self) -> list[Any]:
        return [json.loads(r.content) if r.content else None for r in self.requests]


@pytest.fixture
def sleeps() -> list[float]:
    return []


def client_for(server: Handler, sleeps: list[float], **options: Any) -> Zeromem:
    client = Zeromem("zm_test", "http://zeromem.test", http_client=httpx.Client(transport=httpx.MockTransport(server)),
                     **options)
    client._sleep = sleeps.append
    return client


def error(status: int, code: str, headers: dict[str, str] | None = None, details: list[Any] | None = None
          ) -> httpx.Response:
    return httpx.Response(status, headers=headers, json={"error": {"code": code, "message": code,
                                                                   "details": details or []}})


# --- what is sent --------------------------------------------------------------------------------------------

def test_only_the_parameters_the_caller_set_are_sent(sleeps):
    server = Recorder(httpx.Response(200, json={"results": []}))
    client = client_for(server, sleeps)
    client.search("tea")
    client.search("tea", user_id="u1", as_of=datetime(2025, 3, 1, tzinfo=UTC), include_history=True)
    plain, dated = server.bodies()
    assert plain == {"query": "tea", "top_k": 10}
    assert dated == {"query": "tea", "user_id": "u1", "top_k": 10, "as_of": "2025-03-01T00:00:00+00:00",
                     "include_history": True}
    assert server.requests[0].url == "http://zeromem.test/api/v1/public/memory/v2/search"
    assert server.requests[0].headers["Authorization"] == "Bearer zm_test"


def test_context_sends_as_of_and_include_history_only_when_set(sleeps):
    server = Recorder(httpx.Response(200, json={"context": "", "chars": 0, "budget_chars": 2000, "profile": None,
                                                "memories": []}))
    client = client_for(server, sleeps)
    client.context("q", user_id="u1")
    client.context("q", user_id="u1", as_of="2025-03-01T00:00:00Z", include_history=True)
    assert server.bodies() == [{"query": "q", "user_id": "u1", "budget_chars": 2000},
                               {"query": "q", "user_id": "u1", "budget_chars": 2000,
                                "as_of": "2025-03-01T00:00:00Z", "include_history": True}]


def test_profile_sends_budget_chars_only_when_set_and_reads_an_older_servers_answer(sleeps):
    older = {"user_id": "u1", "entity_id": None, "namespace": "global", "summary": "s", "version": 1,
             "updated_at": "2025-03-01T00:00:00Z", "facts": [{"category": "entity", "statement": "x"}]}
    server = Recorder(httpx.Response(200, json=older))
    client = client_for(server, sleeps)
    profile = client.profile(user_id="u1")
    client.profile(user_id="u1", budget_chars=500)
    assert [dict(r.url.params) for r in server.requests] == [{"user_id": "u1", "namespace": "global"},
                                                             {"user_id": "u1", "namespace": "global",
                                                              "budget_chars": "500"}]
    assert profile is not None and profile.static == [] and profile.recent == [] and profile.budget_chars is None
    assert profile.facts[0].weight is None and profile.facts[0].valid_from is None


def test_list_sends_only_set_filters_and_follows_the_cursor(sleeps):
    memory = {"id": "m1", "user_id": "u1", "memory_type": "episodic", "state": "raw", "content": "x",
              "created_at": "2025-03-01T00:00:00Z"}
    server = Recorder(httpx.Response(200, json={"memories": [memory], "next_cursor": "c2"}),
                      httpx.Response(200, json={"memories": [{**memory, "id": "m2"}], "next_cursor": None}))
    client = client_for(server, sleeps)
    assert [m.id for m in client.list(user_id="u1", page_size=1)] == ["m1", "m2"]
    assert [dict(r.url.params) for r in server.requests] == [{"user_id": "u1", "limit": "1"},
                                                             {"user_id": "u1", "cursor": "c2", "limit": "1"}]


def test_add_fills_items_from_the_keyword_arguments(sleeps):
    server = Recorder(httpx.Response(201, json={"ids": ["a", "b"], "created": 2, "deduplicated": 0,
                                                "embedded": 2}))
    client_for(server, sleeps).add([{"role": "user", "content": "hi", "session_id": "mine"}, "plain"],
                                   user_id="u1", session_id="s1", tags=["t"])
    assert server.bodies() == [{"memories": [
        {"user_id": "u1", "namespace": "global", "session_id": "mine", "tags": ["t"], "role": "user",
         "content": "hi"},
        {"user_id": "u1", "namespace": "global", "session_id": "s1", "tags": ["t"], "content": "plain"}]}]
    with pytest.raises(TypeError):
        client_for(server, sleeps).add([42], user_id="u1")  # type: ignore[list-item]


def test_path_segments_are_quoted(sleeps):
    server = Recorder(httpx.Response(202, json={"session_id": "a/b c", "user_id": "u1", "queued": True,
                                                "run_ids": []}))
    client_for(server, sleeps).end_session("a/b c", user_id="u1")
    assert server.requests[0].url.raw_path == b"/api/v1/public/memory/v2/sessions/a%2Fb%20c/end"


def test_the_api_key_and_url_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("ZEROMEM_API_KEY", "zm_env")
    monkeypatch.setenv("ZEROMEM_URL", "http://example.test:9000/api/v1/public/memory/v2/")
    with Zeromem() as client:
        assert client.base_url == "http://example.test:9000"
    monkeypatch.delenv("ZEROMEM_API_KEY")
    with pytest.raises(ZeromemError, match="no API key"):
        Zeromem()


# --- retries -------------------------------------------------------------------------------------------------

def test_retry_after_is_waited_then_the_call_succeeds(sleeps):
    server = Recorder(error(429, "rate_limited", {"Retry-After": "2"}), httpx.Response(200, json={"results": []}))
    assert client_for(server, sleeps).search("tea") == []
    assert sleeps == [2.0] and len(server.requests) == 2


def test_a_retry_after_too_long_to_wait_is_raised_at_once(sleeps):
    server = Recorder(error(429, "rate_limited", {"Retry-After": "3600"}))
    with pytest.raises(RateLimitError) as raised:
        client_for(server, sleeps).search("tea")
    assert raised.value.retry_after == 3600 and sleeps == [] and len(server.requests) == 1


def test_a_proxy_error_page_is_a_server_error_retried_with_the_same_idempotency_key(sleeps):
    server = Recorder(httpx.Response(502, text="<html>Bad Gateway</html>"),
                      httpx.Response(201, json={"ids": ["a"], "created": 1, "deduplicated": 0, "embedded": 1}))
    assert client_for(server, sleeps).add("x", user_id="u1").created == 1
    first, second = (r.headers["Idempotency-Key"] for r in server.requests)
    assert first == second and len(sleeps) == 1


def test_the_last_error_is_raised_after_max_retries(sleeps):
    server = Recorder(httpx.Response(503, text="unavailable"))
    with pytest.raises(ServerError) as raised:
        client_for(server, sleeps, max_retries=2).get("m1")
    assert raised.value.code == "http_503" and "unavailable" in raised.value.message
    assert len(server.requests) == 3 and len(sleeps) == 2


def test_client_errors_are_never_retried(sleeps):
    server = Recorder(error(404, "not_found"))
    with pytest.raises(NotFoundError):
        client_for(server, sleeps).get("m1")
    assert len(server.requests) == 1 and sleeps == []


def test_backoff_doubles_up_to_a_cap_with_jitter():
    for attempt, full in enumerate([0.5, 1.0, 2.0, 4.0, 8.0, 8.0]):
        delays = {backoff(attempt) for _ in range(20)}
        assert all(0.75 * full <= d <= full for d in delays) and len(delays) > 1


# --- errors and models ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("status", "cls"), [
    (400, ValidationError), (401, AuthenticationError), (404, NotFoundError), (409, ConflictError),
    (413, ValidationError), (422, ValidationError), (429, RateLimitError), (500, ServerError),
    (503, ServerError), (405, ZeromemError)])
def test_each_status_has_its_error_class(status, cls):
    raised = error_from_response(status, {}, json.dumps({"error": {"code": "c", "message": "m",
                                                                   "details": [{"loc": ["body", "x"]}]}}).encode())
    assert type(raised) is cls and (raised.status, raised.code, raised.message) == (status, "c", "m")
    assert raised.details == [{"loc": ["body", "x"]}] and str(raised) == f"{status} c: m"


def test_retry_after_reads_seconds_and_http_dates():
    now = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(format_datetime(now + timedelta(seconds=30), usegmt=True), now=now) == 30.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_fields_a_newer_server_adds_are_kept():
    memory = Memory.model_validate({"id": "m1", "user_id": "u1", "memory_type": "episodic", "state": "raw",
                                    "content": "x", "created_at": "2025-03-01T00:00:00Z", "valid_until": None,
                                    "relations": [{"type": "updates"}]})
    assert memory.model_extra == {"valid_until": None, "relations": [{"type": "updates"}]}


# --- the distribution ----------------------------------------------------------------------------------------

def dependency_closure(name: str, extras: frozenset[str] = frozenset()) -> set[str]:
    """Every distribution `pip install name[extras]` pulls in, as installed here (markers evaluated)."""
    pulled: set[str] = set()
    pending = [(name, extras)]
    visited = set(pending)
    while pending:
        dist, wanted = pending.pop()
        try:
            lines = requires(dist) or []
        except PackageNotFoundError:  # required only on another platform
            continue
        for req in map(Requirement, lines):
            if req.marker and not any(req.marker.evaluate({"extra": e}) for e in wanted or {""}):
                continue
            node = (re.sub(r"[-_.]+", "-", req.name).lower(), frozenset(req.extras))
            pulled.add(node[0])
            if node not in visited:
                visited.add(node)
                pending.append(node)
    return pulled


def test_the_client_depends_on_httpx_and_pydantic_only():
    base = [Requirement(r) for r in requires("zeromem-client") or [] if "extra ==" not in r]
    assert sorted(r.name for r in base) == ["httpx", "pydantic"]
    for extras in (frozenset(), frozenset({"mcp", "langgraph"})):
        pulled = dependency_closure("zeromem-client", extras)
        assert not {d for d in pulled if FORBIDDEN.match(d)}, extras
    assert {"mcp", "langgraph"} <= dependency_closure("zeromem-client", frozenset({"mcp", "langgraph"}))
    assert "django" in dependency_closure("zeromem")  # the walk does see a server's dependencies


def test_importing_the_client_imports_no_django():
    script = "import sys, zeromem_client; print(sorted(m for m in sys.modules if m.split('.')[0] in " \
             "{'django', 'celery', 'psycopg', 'redis', 'zeromem'}))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
