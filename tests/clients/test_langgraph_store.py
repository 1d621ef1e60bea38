"""`ZeromemStore` against the real API (pytest-django's live server) behaves as LangGraph's own `InMemoryStore`: the
same put / get / search / delete / list_namespaces scenario runs on both, and every answer is compared (only the
order of search results and their scores may differ). The example graph runs on it too."""

from __future__ import annotations

import asyncio
import runpy
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from langgraph.store.base import BaseStore, Item
from langgraph.store.memory import InMemoryStore
from zeromem_client import Zeromem
from zeromem_client.langgraph import ZeromemStore

from consolidation.jobs.clustering import clustering_run_now
from zeromem.core import services
from zeromem.models import Memory

EXAMPLE = Path(__file__).resolve().parents[2] / "clients" / "python" / "examples" / "langgraph_graph.py"

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("hash_embedder")]

ALICE = ("u1", "alice")
ALICE_WORK = ("u1", "alice", "work")

ITEMS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (("u1",), "drink", {"text": "Prefers green tea over coffee.", "kind": "preference", "strength": 4}),
    (ALICE, "job", {"content": "Alice works as a data engineer at Northwind.", "kind": "fact", "since": 2021}),
    (ALICE, "pet", {"owner": "Alice", "pet": "cat", "name": "Mia", "kind": "fact"}),  # no text field: JSON
    (ALICE_WORK, "stack", {"text": "Alice runs PostgreSQL with pgvector at work.", "kind": "fact", "level": 3}),
    (("u2",), "drink", {"text": "Prefers green tea over coffee.", "kind": "preference"}),  # same text, other user
    (("u2", "bob"), "job", {"text": "Prefers green tea over coffee.", "kind": "fact"}),  # same text, same user
]


@pytest.fixture
def secret(tenant: Any) -> str:
    return services.apikey_create(tenant=tenant)[1]


@pytest.fixture
def client(live_server: Any, secret: str) -> Iterator[Zeromem]:
    with Zeromem(api_key=secret, base_url=live_server.url, max_retries=0) as zeromem:
        yield zeromem


def view(result: Any) -> Any:
    """What must agree between the stores: items as (namespace, key, value), search results as a set of them."""
    if isinstance(result, Item):
        return (result.namespace, result.key, result.value)
    if isinstance(result, list) and result and isinstance(result[0], Item):
        return sorted(view(item) for item in result)
    return result


def scenario(store: BaseStore) -> list[tuple[str, Any]]:
    """Every answer the store gives, labelled, in the order asked."""
    seen: list[tuple[str, Any]] = []
    for namespace, key, value in ITEMS:
        store.put(namespace, key, value)
    seen.append(("get job", view(store.get(ALICE, "job"))))
    seen.append(("get JSON value", view(store.get(ALICE, "pet"))))
    seen.append(("get deep namespace", view(store.get(ALICE_WORK, "stack"))))
    seen.append(("get other user's same text", view(store.get(("u2",), "drink"))))
    seen.append(("get key in wrong namespace", store.get(ALICE_WORK, "job")))
    seen.append(("get missing key", store.get(ALICE, "nothing")))
    store.put(ALICE, "job", {"content": "Alice works as a staff engineer at Northwind.", "kind": "fact",
                             "since": 2024})
    seen.append(("get overwritten", view(store.get(ALICE, "job"))))
    seen.append(("search by query under a prefix", view(store.search(ALICE, query="Alice"))))
    seen.append(("search by query and filter", view(store.search(ALICE, query="Alice", filter={"since": 2024}))))
    seen.append(("search without query", view(store.search(("u1",)))))
    seen.append(("two pages without query", sorted(view(store.search(("u1",), limit=2))
                                                   + view(store.search(("u1",), limit=2, offset=2)))))
    seen.append(("search with $ne filter", view(store.search(("u1",), filter={"kind": {"$ne": "preference"}}))))
    seen.append(("search with $gte filter", view(store.search(ALICE_WORK, filter={"level": {"$gte": 3}}))))
    seen.append(("search nested prefix", view(store.search(ALICE_WORK))))
    seen.append(("search other user", view(store.search(("u2",), filter={"kind": "preference"}))))
    seen.append(("namespaces", store.list_namespaces()))
    seen.append(("namespaces under a prefix", store.list_namespaces(prefix=("u1",))))
    seen.append(("namespaces by suffix", store.list_namespaces(suffix=("work",))))
    seen.append(("namespaces to depth 1", store.list_namespaces(max_depth=1)))
    seen.append(("namespaces with wildcard", store.list_namespaces(prefix=("*", "alice"))))
    store.delete(ALICE, "pet")
    seen.append(("get deleted", store.get(ALICE, "pet")))
    seen.append(("search after delete", view(store.search(ALICE, query="Alice"))))
    seen.append(("async get", view(asyncio.run(store.aget(ALICE, "job")))))
    seen.append(("async search", view(asyncio.run(store.asearch(ALICE_WORK, query="PostgreSQL")))))
    return seen


def test_it_answers_the_scenario_as_the_in_memory_store_does(client: Zeromem) -> None:
    expected = scenario(InMemoryStore())
    actual = scenario(ZeromemStore(client))
    for (label, want), (_, got) in zip(expected, actual, strict=True):
        assert got == want, label


def test_it_keeps_items_as_memories_in_the_scope_their_namespace_names(client: Zeromem) -> None:
    store = ZeromemStore(client)
    for namespace, key, value in ITEMS:
        store.put(namespace, key, value)
    stack = Memory.objects.get(metadata__langgraph__key="stack")
    assert (stack.user_id, stack.entity_id, stack.namespace) == ("u1", "alice", "work")
    assert stack.content == "Alice runs PostgreSQL with pgvector at work." and "langgraph" in stack.tags
    pet = Memory.objects.get(metadata__langgraph__key="pet")
    assert pet.content == '{"kind": "fact", "name": "Mia", "owner": "Alice", "pet": "cat"}'
    same_text = Memory.objects.filter(content="Prefers green tea over coffee.")
    assert same_text.count() == 3, "two keys holding the same text stay two memories"


def test_search_hits_carry_zeromem_scores_and_a_new_store_finds_old_keys(client: Zeromem) -> None:
    ZeromemStore(client).put(ALICE, "job", {"content": "Alice works as a data engineer at Northwind."})
    fresh = ZeromemStore(client)  # nothing remembered: the key is found by listing its scope
    assert fresh.get(ALICE, "job").value == {"content": "Alice works as a data engineer at Northwind."}
    hits = fresh.search(("u1",), query="data engineer")
    assert [h.key for h in hits] == ["job"] and hits[0].score is not None and hits[0].score > 0


def test_items_consolidated_by_clustering_are_still_found(client: Zeromem, tenant: Any) -> None:
    store = ZeromemStore(client)
    for day in range(3):
        store.put(("u1", "ops"), f"incident-{day}", {"text": f"The billing-api Redis cache hit its limit, day {day}."})
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True).run
    assert run.merged == 3
    assert Memory.objects.filter(metadata__langgraph__key__startswith="incident-", state="consolidated").count() == 3
    assert store.get(("u1", "ops"), "incident-1").value == {"text": "The billing-api Redis cache hit its limit, day 1."}
    assert {h.key for h in store.search(("u1",), query="Redis cache limit")} == {"incident-0", "incident-1",
                                                                                 "incident-2"}


def test_a_correction_made_through_the_api_shows_in_the_item(client: Zeromem) -> None:
    store = ZeromemStore(client)
    store.put(ALICE, "job", {"content": "Alice works at Northwind.", "since": 2021})
    memory_id = Memory.objects.get(metadata__langgraph__key="job").id
    client.update(str(memory_id), "Alice works at Contoso.")
    assert store.get(ALICE, "job").value == {"content": "Alice works at Contoso.", "since": 2021}


def test_the_example_graph_reads_and_writes_memories_through_the_store(live_server: Any, secret: str,
                                                                         monkeypatch: Any, capsys: Any) -> None:
    monkeypatch.setenv("ZEROMEM_URL", live_server.url)
    monkeypatch.setenv("ZEROMEM_API_KEY", secret)
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    last_recall = out.strip().splitlines()[-1]
    assert last_recall.startswith("recalled:   ['My favourite editor is Helix, with the default keymap.'"), out
    stored = Memory.objects.filter(user_id="demo-user", entity_id="assistant", tags__contains=["langgraph"])
    assert stored.count() == 3


def test_concurrent_puts_of_one_key_leave_one_item_that_get_and_search_agree_on(client: Zeromem) -> None:
    store = ZeromemStore(client)
    values = [{"text": f"Alice's current project is number {n}.", "n": n} for n in range(16)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda value: ZeromemStore(client).put(ALICE, "project", value), values))
    assert Memory.objects.filter(metadata__langgraph__key="project").count() == 1
    item = store.get(ALICE, "project")
    assert item is not None and item.value in values
    assert [(hit.key, hit.value) for hit in store.search(ALICE)] == [("project", item.value)]
    assert [(hit.key, hit.value) for hit in store.search(ALICE, query="current project")] == [("project", item.value)]


def test_concurrent_puts_and_deletes_of_one_key_raise_nothing_and_leave_at_most_one_item(client: Zeromem) -> None:
    def put_or_delete(n: int) -> None:
        store = ZeromemStore(client)
        for _ in range(5):
            if n % 2:
                store.delete(ALICE, "project")
            else:
                store.put(ALICE, "project", {"text": f"Alice's current project is number {n}."})

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(put_or_delete, range(16)))
    assert Memory.objects.filter(metadata__langgraph__key="project").count() <= 1


def test_items_written_before_keyed_writes_are_keyed_by_the_migration(client: Zeromem) -> None:
    store = ZeromemStore(client)
    store.put(ALICE, "job", {"content": "Alice works at Northwind."})
    store.put(ALICE_WORK, "stack", {"text": "Alice runs PostgreSQL."})
    Memory.objects.update(key=None)  # as the store wrote them before
    stale = Memory.objects.get(metadata__langgraph__key="job")
    stale.pk, stale.created_at = None, stale.created_at - timedelta(days=1)
    stale.content, stale.content_hash = "Alice worked at Contoso.", services.content_hash("Alice worked at Contoso.")
    stale.save()  # an older copy of the same item, as concurrent puts left them
    with connection.cursor() as cursor:
        cursor.execute(import_module("zeromem.migrations.0009_langgraph_items_keyed").KEY_LANGGRAPH_ITEMS)
    assert store.get(ALICE, "job").value == {"content": "Alice works at Northwind."}
    assert store.get(ALICE_WORK, "stack").value == {"text": "Alice runs PostgreSQL."}
    assert sorted(item.key for item in store.search(ALICE)) == ["job", "stack"]  # the older copy is left out
