"""zeromem-client against the real API over HTTP: pytest-django's `live_server` (a threaded HTTP server on the test
database) answers every call, so what is tested is what an agent gets, status codes, headers and bodies included.

Time is never slept on: each client's `_sleep` records the delays it was asked to wait instead of waiting them."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import zeromem_client
from zeromem_client import (
    APIConnectionError,
    APITimeoutError,
    AsyncZeromem,
    AuthenticationError,
    ConflictError,
    MemoryHistory,
    NotFoundError,
    RateLimitError,
    ServerError,
    ValidationError,
    Zeromem,
    ZeromemError,
)

from profiles.models import MemoryProfile
from tests.factories import ALICE
from zeromem.api.routes import api as ninja_api
from zeromem.core import services
from zeromem.models import Memory, Tenant

pytestmark = [pytest.mark.usefixtures("hash_embedder"), pytest.mark.django_db(transaction=True)]

EXAMPLE = Path(__file__).resolve().parents[2] / "clients" / "python" / "examples" / "agent_loop.py"


@pytest.fixture
def secret(tenant: Tenant) -> str:
    return services.apikey_create(tenant=tenant)[1]


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(live_server: Any, secret: str, sleeps: list[float]) -> Iterator[Zeromem]:
    with Zeromem(secret, live_server.url) as zeromem:
        zeromem._sleep = sleeps.append
        yield zeromem


def days_ago(n: int) -> datetime:
    return datetime.now(UTC) - timedelta(days=n)


def remember_alice(client: Zeromem, n: int = 12) -> list[str]:
    """n memories about alice, one past session each, then a current session without her: what reflection takes."""
    turns = [{"content": ALICE[i], "session_id": f"alice-s{i}", "created_at": days_ago(n + 5 - i)} for i in range(n)]
    ids = client.add(turns, user_id="u1", entity_id="alice").ids
    client.add("Current chat: hello again", user_id="u1", session_id="now")
    return ids


# --- memories ------------------------------------------------------------------------------------------------

def test_add_takes_one_string_and_answers_its_id(client, tenant):
    result = client.add("I prefer green tea over coffee.", user_id="u1", session_id="s1", tags=["drinks"],
                        importance=0.8, metadata={"source": "chat"})
    assert (result.created, result.deduplicated, result.embedded) == (1, 0, 1) and len(result.ids) == 1
    stored = Memory.objects.get(id=result.ids[0], tenant=tenant)
    assert stored.tags == ["drinks"] and stored.importance == 0.8 and stored.metadata == {"source": "chat"}


def test_add_keeps_the_role_of_chat_messages(client):
    result = client.add([{"role": "user", "content": "Book me a table for two."},
                         {"role": "assistant", "content": "Booked for 8 pm at Nonna's."}],
                        user_id="u1", session_id="s1", entity_id="alice")
    first, second = (client.get(i) for i in result.ids)
    assert (first.role, second.role) == ("user", "assistant")
    assert first.entity_id == second.entity_id == "alice" and first.session_id == "s1"


def test_add_takes_a_list_of_strings_and_dicts_whose_fields_win(client):
    when = days_ago(3)
    result = client.add(["plain text", {"content": "dated", "created_at": when, "session_id": "old"}],
                        user_id="u1", session_id="s1")
    plain, dated = (client.get(i) for i in result.ids)
    assert plain.session_id == "s1" and dated.session_id == "old"
    assert abs((dated.created_at - when).total_seconds()) < 1


def test_get_answers_the_memory_with_its_sources(client):
    memory_id = client.add("Alice runs 10 km on Sundays.", user_id="u1").ids[0]
    memory = client.get(memory_id)
    assert isinstance(memory, zeromem_client.Memory) and memory.id == memory_id and memory.sources == []
    assert memory.content == "Alice runs 10 km on Sundays." and memory.state == "raw" and memory.has_embedding


def test_search_answers_typed_results_best_first(client):
    client.add(["I prefer green tea over coffee.", "The deploy broke on Friday."], user_id="u1")
    results = client.search("green tea", user_id="u1", top_k=5)
    assert results and results[0].memory.content == "I prefer green tea over coffee."
    assert results[0].score > 0 and results[0].bm25 > 0
    assert client.search("green tea", user_id="someone-else") == []


def test_list_follows_every_cursor_page(client):
    client.add([f"note number {i}" for i in range(5)], user_id="u1", session_id="s1")
    client.add("another user's note", user_id="u2")
    listed = list(client.list(user_id="u1", page_size=2))  # three pages
    assert len(listed) == 5 and {m.content for m in listed} == {f"note number {i}" for i in range(5)}
    assert len(list(client.list(page_size=500))) == 6


def test_update_corrects_the_content(client):
    memory_id = client.add("Alice prefers green tea.", user_id="u1").ids[0]
    updated = client.update(memory_id, "Alice prefers jasmine tea.")
    assert updated.id == memory_id and updated.content == "Alice prefers jasmine tea."
    assert client.get(memory_id).content == "Alice prefers jasmine tea."


def test_delete_erases_the_memory(client):
    memory_id = client.add("to be erased", user_id="u1").ids[0]
    erased = client.delete(memory_id)
    assert erased.deleted == 1 and erased.ids == [memory_id]
    with pytest.raises(NotFoundError):
        client.get(memory_id)


def test_put_stores_then_replaces_the_memory_of_a_key_and_delete_by_key_is_idempotent(client):
    created = client.put("editor", "Uses Helix.", user_id="u1", namespace="agent", metadata={"v": 1})
    assert created.outcome == "created" and created.memory.key == "editor"
    replaced = client.put("editor", "Uses Zed.", user_id="u1", namespace="agent", metadata={"v": 2})
    assert replaced.outcome == "replaced" and replaced.memory.id == created.memory.id
    assert client.put("editor", "Uses Zed.", user_id="u1", namespace="agent", metadata={"v": 2}).outcome == "unchanged"
    found = client.get_by_key("editor", user_id="u1", namespace="agent")
    assert found is not None and (found.content, found.metadata) == ("Uses Zed.", {"v": 2})
    assert client.get_by_key("editor", user_id="u1") is None  # another namespace
    assert client.delete_by_key("editor", user_id="u1", namespace="agent").deleted == 1
    assert client.delete_by_key("editor", user_id="u1", namespace="agent").deleted == 0
    assert client.get_by_key("editor", user_id="u1", namespace="agent") is None


def test_forget_erases_a_user_or_an_entity(client):
    client.add(["about alice", "more about alice"], user_id="u1", entity_id="alice")
    client.add("about me", user_id="u2")
    assert client.forget(entity_id="alice").deleted == 2
    assert client.forget(user_id="u2").deleted == 1
    assert list(client.list()) == []
    with pytest.raises(ValueError):
        client.forget()


def test_feedback_moves_the_reward(client):
    memory_id = client.add("useful fact", user_id="u1").ids[0]
    assert client.feedback(memory_id, True).reward_score == pytest.approx(0.2)
    assert client.feedback(memory_id, False).reward_score < 0.2


def server_has(path: str, field: str | None = None) -> bool:
    """Whether this checkout's server has an operation (and a body field of it): the client is tested against
    whichever it is, and a feature the server lacks must fail the way an old server fails."""
    schema = ninja_api.get_openapi_schema()
    operation = schema["paths"].get(f"/api/v1/public/memory/v2{path}")
    if operation is None or field is None:
        return operation is not None
    ref = operation["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
    return field in schema["components"]["schemas"][ref]["properties"]


def test_history_is_read_where_the_server_has_it(client):
    memory_id = client.add("a memory with a past", user_id="u1").ids[0]
    client.update(memory_id, "a memory with a corrected past")
    if not server_has("/memories/{memory_id}/history"):  # an older server: a typed 404 like any unknown path
        with pytest.raises(NotFoundError):
            client.history(memory_id)
        return
    history = client.history(memory_id)
    assert isinstance(history, MemoryHistory) and history.memory is not None and history.memory.id == memory_id
    assert "correct" in [entry["action"] for entry in history.ledger]


def test_search_and_context_as_of_where_the_server_has_it(client):
    client.add("I prefer green tea over coffee.", user_id="u1")
    if not server_has("/search", "as_of"):  # an older server refuses the unknown field; unset, it is not sent
        with pytest.raises(ValidationError):
            client.search("green tea", user_id="u1", as_of=days_ago(10))
        return
    assert client.search("green tea", user_id="u1", as_of=days_ago(10)) == []
    now = client.search("green tea", user_id="u1", as_of=datetime.now(UTC), include_history=True)
    assert [r.memory.content for r in now] == ["I prefer green tea over coffee."] and now[0].valid_to is None
    assert client.context("green tea?", user_id="u1", as_of=days_ago(10)).memories == []


# --- context, reflection, profiles, sessions, runs -----------------------------------------------------------

def test_context_answers_the_text_to_inject_within_the_budget(client):
    client.add("Alice is allergic to peanuts.", user_id="u1", entity_id="alice")
    context = client.context("Is Alice allergic to peanuts?", user_id="u1", entity_id="alice", budget_chars=300)
    assert "allergic to peanuts" in str(context) and context.chars == len(context.context) <= 300
    assert context.budget_chars == 300 and context.profile is None
    assert context.memories[0].content == "Alice is allergic to peanuts."


def test_reflect_then_profile_and_context_use_it(client, eager):
    remember_alice(client)
    assert client.profile(user_id="u1", entity_id="alice") is None
    reflected = client.reflect(entity_id="alice")
    assert reflected.finished and reflected.status == "succeeded" and reflected.memories_reviewed == 12
    assert reflected.profile_updated and reflected.insights
    assert reflected.usage is None or reflected.usage.llm_calls >= 0  # reported by newer servers
    profile = client.profile(user_id="u1", entity_id="alice")
    assert profile is not None and profile.version == 1 and profile.entity_id == "alice"
    items = profile.preferences + profile.behaviors + profile.facts
    assert items and all(item.statement and item.source_ids for item in items)
    context = client.context("What does Alice drink?", user_id="u1", entity_id="alice")
    assert context.profile is not None and context.profile.version == 1


def test_profile_with_a_budget_answers_the_strongest_items_that_fit_split_into_static_and_recent(client, tenant):
    def item(statement: str, confidence: float, first_seen: datetime, **newer: Any) -> dict[str, Any]:
        return {"category": "domain_fact", "statement": statement, "confidence": confidence, "source_ids": [],
                "memory_ids": [], "first_seen": first_seen.isoformat(), "last_seen": days_ago(1).isoformat(), **newer}

    moved = days_ago(400)
    MemoryProfile.objects.create(tenant=tenant, user_id="u1", entity_id="alice", summary="A data engineer.", facts=[
        item("Alice moved to Lisbon in 2021.", 0.6, days_ago(1), weight=0.95, valid_from=moved.isoformat()),
        item("Alice's daughter Mia started violin lessons.", 0.8, days_ago(3)),
        item("Alice enjoys painting watercolours of old lighthouses on quiet weekends.", 0.7, days_ago(60))])

    profile = client.profile(user_id="u1", entity_id="alice", budget_chars=100)

    assert profile is not None and profile.budget_chars == 100 and profile.summary == "A data engineer."
    assert [i.statement for i in profile.static] == ["Alice moved to Lisbon in 2021."]
    assert [i.statement for i in profile.recent] == ["Alice's daughter Mia started violin lessons."]
    assert profile.static[0].weight == 0.95 and profile.static[0].valid_from == moved
    everything = client.profile(user_id="u1", entity_id="alice")
    assert everything is not None and everything.budget_chars is None
    assert len(everything.static) == 2 and len(everything.recent) == 1 and len(everything.facts) == 3
    with pytest.raises(ValidationError):
        client.profile(user_id="u1", entity_id="alice", budget_chars=99)


def test_reflect_answers_the_pending_run_when_no_worker_takes_it(client, settings):
    remember_alice(client)
    reflected = client.reflect(entity_id="alice")
    assert reflected.status == "pending" and not reflected.finished and reflected.run_id
    assert client.run(reflected.run_id).status == "pending"


def test_end_session_queues_one_pass_and_runs_lists_it(client, eager):
    client.add(["Alice: the billing-api times out again", "Alice: Redis hit 512 MB"], user_id="u1", session_id="s9")
    ended = client.end_session("s9", user_id="u1")
    assert ended.queued and len(ended.run_ids) == 1 and ended.session_id == "s9"
    again = client.end_session("s9", user_id="u1")
    assert not again.queued and again.run_ids == []
    run = client.run(ended.run_ids[0])
    assert run.kind == "clustering" and run.finished and run.user_id == "u1"
    runs = list(client.runs(user_id="u1", page_size=1))
    assert ended.run_ids[0] in [r.run_id for r in runs]
    assert [r.run_id for r in client.runs(kind="clustering", status=run.status)] == [run.run_id]


# --- errors --------------------------------------------------------------------------------------------------

def test_a_wrong_key_is_an_authentication_error(live_server, tenant):
    with Zeromem("zm_not-a-key", live_server.url) as client, pytest.raises(AuthenticationError) as raised:
        client.search("anything")
    assert raised.value.status == 401 and raised.value.code == "unauthorized"
    assert isinstance(raised.value, ZeromemError) and "Bearer" in raised.value.message


def test_an_unknown_id_is_not_found(client):
    with pytest.raises(NotFoundError) as raised:
        client.get("00000000-0000-0000-0000-000000000000")
    assert raised.value.status == 404 and raised.value.message == "no such memory"
    with pytest.raises(NotFoundError):
        client.run("00000000-0000-0000-0000-000000000000")


def test_a_refused_request_is_a_validation_error_with_the_field_details(client):
    with pytest.raises(ValidationError) as raised:
        client.search("green tea", top_k=0)
    error = raised.value
    assert error.status == 422 and error.code == "invalid_input" and error.details
    assert error.details[0]["loc"][-1] == "top_k" and "top_k" in error.field_errors
    with pytest.raises(ValidationError):
        client.reflect()  # neither entity_id nor user_id
    with pytest.raises(ValidationError):
        client.add([], user_id="u1")


def test_an_idempotency_key_reused_with_another_body_is_a_conflict(client):
    client.add("first", user_id="u1", idempotency_key="turn-1")
    assert client.add("first", user_id="u1", idempotency_key="turn-1").created == 1  # replayed
    with pytest.raises(ConflictError) as raised:
        client.add("second", user_id="u1", idempotency_key="turn-1")
    assert raised.value.status == 409 and raised.value.code == "idempotency_conflict"


def test_past_the_rate_limit_is_a_rate_limit_error_with_retry_after(live_server, secret, settings):
    settings.ZEROMEMORY_RATE_LIMIT_REQUESTS = 2
    settings.ZEROMEMORY_RATE_LIMIT_WINDOW_SECONDS = 3600
    with Zeromem(secret, live_server.url, max_retries=0) as client:
        client.search("a")
        client.search("b")
        with pytest.raises(RateLimitError) as raised:
            client.search("c")
    assert raised.value.status == 429 and raised.value.code == "rate_limited"
    assert raised.value.retry_after is not None and 1 <= raised.value.retry_after <= 3600


def test_a_rate_limited_call_waits_retry_after_then_succeeds(client, settings, sleeps):
    settings.ZEROMEMORY_RATE_LIMIT_REQUESTS = 1
    settings.ZEROMEMORY_RATE_LIMIT_WINDOW_SECONDS = 60

    def wait(seconds: float) -> None:  # the window "ends" while the client waits
        sleeps.append(seconds)
        settings.ZEROMEMORY_RATE_LIMIT_REQUESTS = 0

    client._sleep = wait
    for _ in range(3):  # the second call is refused, unless the first one was the last of its window
        assert client.search("anything") == []
        if sleeps:
            break
    assert len(sleeps) == 1 and 1 <= sleeps[0] <= 60 and sleeps[0] == int(sleeps[0])  # the header's seconds


def test_a_server_error_is_retried_with_backoff_then_raised(client, monkeypatch, sleeps):
    calls = []

    def crash(**kwargs: Any) -> None:
        calls.append(kwargs)
        raise RuntimeError("the search index is on fire")

    monkeypatch.setattr("zeromem.api.routes.selectors.memories_search", crash)
    with pytest.raises(ServerError) as raised:
        client.search("anything")
    assert raised.value.status == 500 and raised.value.code == "internal_error"
    assert len(calls) == 4 and len(sleeps) == 3  # 1 + max_retries
    assert sleeps[0] < sleeps[1] < sleeps[2] <= 8


def test_a_failed_reflection_is_not_sent_again(client, monkeypatch, sleeps):
    calls = []

    def crash(**kwargs: Any) -> None:
        calls.append(kwargs)
        raise RuntimeError("the LLM is down")

    monkeypatch.setattr("zeromem.api.routes.reflection_request", crash)
    remember_alice(client, n=2)
    with pytest.raises(ServerError):
        client.reflect(entity_id="alice")
    assert len(calls) == 1 and sleeps == []


def test_no_server_is_a_connection_error_retried_then_raised(secret, sleeps):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with Zeromem(secret, f"http://127.0.0.1:{port}", max_retries=2) as client:
        client._sleep = sleeps.append
        with pytest.raises(APIConnectionError) as raised:
            client.feedback("00000000-0000-0000-0000-000000000000", True)  # never sent: safe to retry
    assert raised.value.request_sent is False and raised.value.status is None and len(sleeps) == 2


def test_a_server_that_does_not_answer_is_a_timeout(secret):
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # connections are accepted by the kernel, never answered
        with Zeromem(secret, f"http://127.0.0.1:{silent.getsockname()[1]}", timeout=0.3, max_retries=0) as client, \
                pytest.raises(APITimeoutError) as raised:
            client.get("00000000-0000-0000-0000-000000000000")
    assert isinstance(raised.value, APIConnectionError) and raised.value.code == "timeout"


# --- idempotent retries --------------------------------------------------------------------------------------

class DropsTheFirstAnswer(httpx.BaseTransport):
    """Forwards every request to the real server, but loses the first answer: the server has done the work, and
    the client sees a dropped connection."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.idempotency_keys: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.idempotency_keys.append(request.headers.get("Idempotency-Key"))
        response = self.inner.handle_request(request)
        if len(self.idempotency_keys) == 1:
            response.read()
            response.close()
            raise httpx.ReadError("connection reset after the server answered", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


def test_a_batch_whose_answer_was_lost_is_stored_once_when_retried(live_server, secret, tenant, sleeps):
    transport = DropsTheFirstAnswer()
    with httpx.Client(transport=transport) as http, Zeromem(secret, live_server.url, http_client=http) as client:
        client._sleep = sleeps.append
        result = client.add(["turn one", "turn two"], user_id="u1", session_id="s1")
    first, retried = transport.idempotency_keys
    assert first and first == retried and len(sleeps) == 1
    # The server replayed its first answer (a plain resend would say created 0, deduplicated 2).
    assert (result.created, result.deduplicated) == (2, 0)
    assert Memory.objects.filter(tenant=tenant, user_id="u1").count() == 2


def test_each_add_call_has_its_own_idempotency_key(live_server, secret):
    keys: list[str] = []
    with httpx.Client(event_hooks={"request": [lambda r: keys.append(r.headers["Idempotency-Key"])]}) as http, \
            Zeromem(secret, live_server.url, http_client=http) as client:
        client.add("one", user_id="u1")
        client.add("two", user_id="u1")
    assert len(set(keys)) == 2


def test_feedback_whose_answer_was_lost_is_not_sent_again(live_server, secret, tenant):
    memory_id = services.memories_ingest(tenant_id=tenant.id, items=[
        services.MemoryInput(content="a fact", user_id="u1")]).ids[0]
    transport = DropsTheFirstAnswer()
    with httpx.Client(transport=transport) as http, Zeromem(secret, live_server.url, http_client=http) as client, \
            pytest.raises(APIConnectionError) as raised:
        client.feedback(memory_id, True)
    assert raised.value.request_sent and len(transport.idempotency_keys) == 1
    assert Memory.objects.get(id=memory_id).reward_score == pytest.approx(0.2)  # moved once


# --- the async client ----------------------------------------------------------------------------------------

def test_the_async_client_has_the_same_calls(live_server, secret, eager):
    async def scenario() -> None:
        async with AsyncZeromem(secret, live_server.url) as client:
            client._sleep = no_wait
            added = await client.add([{"role": "user", "content": "I prefer green tea over coffee."}],
                                     user_id="u1", session_id="s1")
            memory_id = added.ids[0]
            assert (await client.get(memory_id)).role == "user"
            assert (await client.search("green tea", user_id="u1"))[0].memory.id == memory_id
            assert "green tea" in (await client.context("green tea?", user_id="u1")).context
            assert [m.id async for m in client.list(user_id="u1", page_size=1)] == [memory_id]
            assert (await client.update(memory_id, "I prefer jasmine tea.")).content == "I prefer jasmine tea."
            assert (await client.feedback(memory_id, True)).reward_score == pytest.approx(0.2)
            assert await client.profile(user_id="u1", budget_chars=500) is None
            ended = await client.end_session("s1", user_id="u1")
            assert ended.queued and (await client.run(ended.run_ids[0])).kind == "clustering"
            assert [r.run_id async for r in client.runs(user_id="u1")] == ended.run_ids
            reflected = await client.reflect(user_id="u1", force=True)
            assert reflected.finished and reflected.user_id == "u1"
            with pytest.raises(NotFoundError):
                await client.history("00000000-0000-0000-0000-000000000000")
            assert (await client.delete(memory_id)).deleted == 1
            with pytest.raises(NotFoundError):
                await client.get(memory_id)
            assert (await client.put("editor", "Uses Helix.", user_id="u1", entity_id="bob")).outcome == "created"
            assert (await client.get_by_key("editor", user_id="u1", entity_id="bob")).content == "Uses Helix."
            assert (await client.delete_by_key("editor", user_id="u1", entity_id="bob")).deleted == 1
            assert await client.get_by_key("editor", user_id="u1", entity_id="bob") is None
            await client.add("about bob", user_id="u1", entity_id="bob")
            assert (await client.forget(user_id="u1")).deleted >= 1

    asyncio.run(scenario())


async def no_wait(seconds: float) -> None:
    return None


def test_the_async_client_retries_a_lost_answer_with_the_same_key(live_server, secret, tenant):
    class AsyncDropsTheFirstAnswer(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.AsyncHTTPTransport()
            self.keys: list[str | None] = []

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            self.keys.append(request.headers.get("Idempotency-Key"))
            response = await self.inner.handle_async_request(request)
            if len(self.keys) == 1:
                await response.aread()
                await response.aclose()
                raise httpx.RemoteProtocolError("server disconnected", request=request)
            return response

        async def aclose(self) -> None:
            await self.inner.aclose()

    transport = AsyncDropsTheFirstAnswer()

    async def scenario() -> Any:
        async with httpx.AsyncClient(transport=transport) as http, \
                AsyncZeromem(secret, live_server.url, http_client=http) as client:
            client._sleep = no_wait
            return await client.add("stored once", user_id="u1")

    result = asyncio.run(scenario())
    assert result.created == 1 and transport.keys[0] == transport.keys[1]
    assert Memory.objects.filter(tenant=tenant).count() == 1


# --- the example ---------------------------------------------------------------------------------------------

def test_the_agent_loop_example_runs_against_the_server(live_server, secret, tenant, eager):
    env = {**os.environ, "ZEROMEM_URL": live_server.url, "ZEROMEM_API_KEY": secret}
    done = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # The second session's context recalls what the first one was told.
    assert "allergic to peanuts" in done.stdout.split("--- session 2 ---")[1]
    assert Memory.objects.filter(tenant=tenant, role="assistant").exists()
    assert "session ended" in done.stdout
