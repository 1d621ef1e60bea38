"""`zeromem-mcp` against the real API (pytest-django's live server), driven by the `mcp` SDK's own client over both
transports: stdio (the server spawned as a subprocess) and streamable HTTP (`--http PORT`, where each caller sends
its own zeromem key and the server's ZEROMEM_API_KEY is never used).

Database work (seeding, clustering, checks) happens outside the event loop the MCP client runs in: Django refuses
ORM calls from a thread with a running loop."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import anyio
import httpx
import pytest
from django.db import connections
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult
from zeromem_client.mcp_server import TOOL_NAMES, CallerKeys

from consolidation.jobs.clustering import clustering_run_now
from profiles.models import MemoryProfile
from tests.factories import ingest_clusterable, ingest_one
from zeromem.core import services
from zeromem.models import Memory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("hash_embedder")]

TOOLS = {"remember", "search_memories", "get_context", "get_profile", "list_memories", "get_memory",
         "update_memory", "delete_memory", "forget", "end_session", "reflect", "get_run", "why"}
NOTES = ["Alice prefers green tea over coffee.",
         "Alice runs 10 km along the river every Sunday.",
         "Alice works as a data engineer at Northwind."]
SERVER = [sys.executable, "-m", "zeromem_client.mcp_server"]


@pytest.fixture
def env(live_server: Any, tenant: Any) -> dict[str, str]:
    """What the MCP server is configured with."""
    return {"ZEROMEM_URL": live_server.url, "ZEROMEM_API_KEY": services.apikey_create(tenant=tenant)[1]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(env: dict[str, str], tmp_path: Any) -> Iterator[str]:
    """`zeromem-mcp --http PORT` running; its endpoint's URL."""
    port = free_port()
    log = tmp_path / "mcp-http.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen([*SERVER, "--http", str(port)], env={**os.environ, **env},
                                   stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(params=["stdio", "http"])
def server(request: Any, env: dict[str, str]) -> Callable[[], Client]:
    """A new SDK client for zeromem-mcp over the transport under test (over HTTP, presenting the tenant's key)."""
    if request.param == "http":
        url = request.getfixturevalue("http_server")
        return lambda: http(url, env["ZEROMEM_API_KEY"])
    return lambda: stdio(env)


def http(url: str, key: str | None, statuses: list[int] | None = None) -> Client:
    """The SDK's streamable HTTP client, sending `Authorization: Bearer <key>` on every request (none: no header);
    the status of each answer is appended to `statuses`."""
    async def record(response: Any) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    @contextlib.asynccontextmanager
    async def transport() -> AsyncIterator[Any]:
        headers = {"Authorization": f"Bearer {key}"} if key is not None else None
        async with create_mcp_http_client(headers=headers) as client, \
                streamable_http_client(url, http_client=client) as streams:
            client.event_hooks["response"].append(record)
            yield streams
    return Client(transport())


def stdio(env: dict[str, str], **extra: str) -> Client:
    # The SDK starts the server with a minimal environment: PYTHONPATH goes along, so that it runs the client under
    # test (a checkout's) and not whichever one the interpreter has installed.
    inherited = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    return Client(StdioServerParameters(command=SERVER[0], args=SERVER[1:], env={**inherited, **env, **extra}))


def run(client: Client, body: Callable[[Client], Awaitable[Any]]) -> Any:
    """`body(connected client)`, in an event loop of its own."""
    async def main() -> Any:
        async with client as connected:
            return await body(connected)
    return anyio.run(main)


def answer(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def error(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    return " ".join(block.text for block in result.content if block.type == "text")


def test_the_tools_remember_search_and_build_context_over_each_transport(server: Callable[[], Client]) -> None:
    async def body(client: Client) -> dict[str, Any]:
        tools = (await client.list_tools()).tools
        stored = [answer(await client.call_tool("remember", {"content": text, "user_id": "u1",
                                                             "entity_id": "alice", "session_id": "s1"}))
                  for text in NOTES]
        found = answer(await client.call_tool("search_memories", {"query": "Alice", "user_id": "u1"}))
        context = answer(await client.call_tool("get_context", {"query": "What about Alice?", "user_id": "u1",
                                                                "entity_id": "alice", "budget_chars": 300}))
        return {"tools": tools, "stored": stored, "found": found, "context": context}

    seen = run(server(), body)
    assert {tool.name for tool in seen["tools"]} == TOOLS == set(TOOL_NAMES)
    assert all(tool.description for tool in seen["tools"])
    assert [s["created"] for s in seen["stored"]] == [True, True, True]
    ids = [s["id"] for s in seen["stored"]]
    hits = {hit["id"]: hit for hit in seen["found"]["results"]}
    assert set(hits) == set(ids)
    for memory_id, text in zip(ids, NOTES, strict=True):
        assert hits[memory_id]["text"] == text
        assert hits[memory_id]["state"] == "raw" and hits[memory_id]["score"] > 0
        assert hits[memory_id]["created_at"] and hits[memory_id]["valid_from"]
    context = seen["context"]
    assert all(text in context["context"] for text in NOTES)
    assert set(context["memory_ids"]) == set(ids)
    assert context["chars"] == len(context["context"]) <= context["budget_chars"] == 300


def test_a_bad_call_is_a_tool_error_and_the_server_keeps_serving(server: Callable[[], Client]) -> None:
    async def body(client: Client) -> dict[str, Any]:
        return {
            "schema": await client.call_tool("search_memories", {"query": "tea", "top_k": 0}),
            "api": await client.call_tool("get_memory", {"memory_id": "00000000-0000-0000-0000-000000000000"}),
            "refused": await client.call_tool("remember", {"content": "   ", "user_id": "u1"}),
            "after": await client.call_tool("remember", {"content": "Still serving.", "user_id": "u1"}),
        }

    seen = run(server(), body)
    assert "top_k" in error(seen["schema"])
    assert "no such memory" in error(seen["api"])
    assert "content is blank" in error(seen["refused"])
    assert answer(seen["after"])["created"] is True


def test_why_names_the_sources_of_a_semantic_memory_and_the_run_that_merged_them(
        env: dict[str, str], tenant: Any, three_days_ago: Any) -> None:
    # Four: a run consolidating fewer samples no canary (the policy's canaries.min_consolidated).
    ids = ingest_clusterable(tenant, [f"The billing-api Redis cache hit its limit, day {i}." for i in range(4)],
                             created_at=three_days_ago)
    run_id = str(clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True).run.id)
    semantic = str(Memory.objects.get(tenant=tenant, memory_type="semantic").id)

    async def body(client: Client) -> dict[str, Any]:
        return answer(await client.call_tool("why", {"memory_id": semantic}))

    why = run(stdio(env), body)
    assert why["memory"]["id"] == semantic and why["memory"]["memory_type"] == "semantic"
    assert {s["source_memory_id"] for s in why["sources"]} == {str(i) for i in ids}
    runs = {r["run_id"]: r for r in why["runs"]}
    assert runs[run_id]["kind"] == "clustering" and runs[run_id]["status"] == "succeeded"
    assert runs[run_id]["canaries"]["recall_after"] >= runs[run_id]["canaries"]["recall_before"] - 0.05


def test_get_profile_answers_the_strongest_items_within_the_budget_as_static_and_recent(
        env: dict[str, str], tenant: Any, now: datetime) -> None:
    def item(statement: str, confidence: float, days: int) -> dict[str, Any]:
        seen = (now - timedelta(days=days)).isoformat()
        return {"category": "domain_fact", "statement": statement, "confidence": confidence, "source_ids": [],
                "memory_ids": [], "first_seen": seen, "last_seen": seen}

    MemoryProfile.objects.create(tenant=tenant, user_id="u1", entity_id="alice", facts=[
        item(NOTES[0], 0.9, 100), item(NOTES[1], 0.8, 2), item(NOTES[2] + " " + NOTES[2], 0.7, 2)])

    async def body(client: Client) -> dict[str, Any]:
        return answer(await client.call_tool("get_profile", {"user_id": "u1", "entity_id": "alice",
                                                             "budget_chars": 100}))

    profile = run(stdio(env), body)
    assert [i["statement"] for i in profile["static"]] == [NOTES[0]]
    assert [i["statement"] for i in profile["recent"]] == [NOTES[1]]
    assert profile["budget_chars"] == 100 and len(profile["facts"]) == 3


def test_with_a_fixed_user_no_tool_takes_a_user_and_other_users_are_out_of_reach(
        env: dict[str, str], tenant: Any) -> None:
    other = str(ingest_one(tenant, "Bob's secret plan about window seats.", user="bob"))

    async def body(client: Client) -> dict[str, Any]:
        return {
            "tools": (await client.list_tools()).tools,
            "stored": answer(await client.call_tool("remember", {"content": "I prefer window seats."})),
            "found": answer(await client.call_tool("search_memories", {"query": "secret plan window seats"})),
            "other": await client.call_tool("get_memory", {"memory_id": other}),
            "forget all unconfirmed": await client.call_tool("forget", {}),
        }

    seen = run(stdio(env, ZEROMEM_USER_ID="carol"), body)
    for tool in seen["tools"]:
        assert "user_id" not in json.dumps(tool.input_schema), tool.name
    assert Memory.objects.get(id=seen["stored"]["id"]).user_id == "carol"
    assert [hit["id"] for hit in seen["found"]["results"]] == [seen["stored"]["id"]]
    assert "no such memory" in error(seen["other"])
    assert "everything=true" in error(seen["forget all unconfirmed"])
    assert Memory.objects.filter(user_id="carol").exists()


# --- HTTP: only callers with a key, each acting as its key ------------------------------------------------------

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}}


@pytest.mark.parametrize("authorization", [None, "Bearer zm_0123456789ab_not-a-real-key", "Basic eA=="])
def test_over_http_a_request_without_a_valid_key_answers_401_even_with_a_key_in_the_servers_environment(
        http_server: str, authorization: str | None) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["Authorization"] = authorization
    response = httpx.post(http_server, json=INITIALIZE, headers=headers)
    assert response.status_code == 401, response.text
    assert response.headers["WWW-Authenticate"].startswith("Bearer ")
    assert response.json()["error"] == "invalid_token"


def test_the_sdk_client_without_a_key_is_refused_with_401(http_server: str) -> None:
    async def body(client: Client) -> Any:
        return await client.list_tools()

    statuses: list[int] = []
    with pytest.raises(ExceptionGroup):  # the SDK's task groups carry its "Server returned an error response"
        run(http(http_server, None, statuses), body)
    assert statuses and set(statuses) == {401}  # every request refused (the SDK probes, then initializes)


def test_over_http_a_user_scoped_key_reaches_only_its_own_user(http_server: str, tenant: Any) -> None:
    bobs = str(ingest_one(tenant, "Bob's secret plan about window seats.", user="bob"))
    carols_key = services.apikey_create(tenant=tenant, user_id="carol")[1]

    async def body(client: Client) -> dict[str, Any]:
        return {
            "stored": answer(await client.call_tool("remember", {"content": "I prefer window seats.",
                                                                 "user_id": "carol"})),
            "found": answer(await client.call_tool("search_memories", {"query": "secret plan window seats"})),
            "listed": answer(await client.call_tool("list_memories", {})),
            "bob's memory": await client.call_tool("get_memory", {"memory_id": bobs}),
            "bob's search": await client.call_tool("search_memories", {"query": "plan", "user_id": "bob"}),
            "as bob": await client.call_tool("remember", {"content": "Written as Bob.", "user_id": "bob"}),
            "delete bob's": await client.call_tool("delete_memory", {"memory_id": bobs}),
        }

    seen = run(http(http_server, carols_key), body)
    carols = seen["stored"]["id"]
    assert Memory.objects.get(id=carols).user_id == "carol"
    assert [hit["id"] for hit in seen["found"]["results"]] == [carols]
    assert [m["id"] for m in seen["listed"]["memories"]] == [carols]
    for refused in ("bob's memory", "bob's search", "as bob", "delete bob's"):
        assert "404" in error(seen[refused]), refused
    assert list(Memory.objects.filter(user_id="bob").values_list("content", flat=True)) == [
        "Bob's secret plan about window seats."]


def test_over_http_a_tenant_key_reaches_every_user_of_its_tenant_only(
        http_server: str, tenant: Any, other_tenant: Any) -> None:
    bobs = str(ingest_one(tenant, "Bob's note about the deploy window.", user="bob"))
    foreign = str(ingest_one(other_tenant, "Another tenant's note about the deploy window.", user="bob"))
    key = services.apikey_create(tenant=tenant)[1]

    async def body(client: Client) -> dict[str, Any]:
        return {"found": answer(await client.call_tool("search_memories", {"query": "deploy window"})),
                "foreign": await client.call_tool("get_memory", {"memory_id": foreign})}

    seen = run(http(http_server, key), body)
    assert [hit["id"] for hit in seen["found"]["results"]] == [bobs]
    assert "no such memory" in error(seen["foreign"])


def test_a_key_zeromem_accepted_is_trusted_for_the_ttl_then_checked_again(live_server: Any, tenant: Any) -> None:
    key, secret = services.apikey_create(tenant=tenant)
    clock = [1000.0]
    keys = CallerKeys(live_server.url, ttl=60.0, clock=lambda: clock[0])

    def revoke() -> None:
        services.apikey_revoke(key=key)
        connections.close_all()  # this worker thread's connection, which would outlive the test database

    async def verify_revoke_verify_later() -> list[Any]:
        first = await keys.verify_token(secret)
        await anyio.to_thread.run_sync(revoke)  # no ORM call inside the loop
        cached = await keys.verify_token(secret)
        clock[0] += 61.0
        expired = await keys.verify_token(secret)
        await keys.aclose()  # its kept-alive connection would hold a live-server thread and its database session
        return [first, cached, expired]

    first, cached, expired = anyio.run(verify_revoke_verify_later)

    assert first is not None and first.token == secret
    assert cached == first
    assert expired is None


def test_an_empty_key_is_refused_without_falling_back_to_the_environments_key(
        live_server: Any, env: dict[str, str], monkeypatch: Any) -> None:
    monkeypatch.setenv("ZEROMEM_API_KEY", env["ZEROMEM_API_KEY"])  # what a bare client would fall back to
    keys = CallerKeys(live_server.url)

    async def verify_empty() -> list[Any]:
        return [await keys.verify_token(""), await keys.verify_token("   ")]

    assert anyio.run(verify_empty) == [None, None]
