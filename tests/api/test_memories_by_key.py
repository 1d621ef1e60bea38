"""PUT / GET / DELETE /memories/by-key: one memory per (tenant, user, entity, namespace, key), replaced in place."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.db.models import Sum

from consolidation.corrections.erasure import memories_erase
from consolidation.models import LedgerEntry
from tests.conftest import ApiClient
from zeromem.core import services
from zeromem.models import Memory, TermStat, UserSearchStats

pytestmark = pytest.mark.usefixtures("hash_embedder")

SCOPE = {"user_id": "u1", "entity_id": "alice", "namespace": "work"}


def put(api: ApiClient, key: str = "job", content: str = "Alice works as a data engineer.", **fields: Any) -> Any:
    body = {**SCOPE, "key": key, "content": content, **fields}
    return api.client.put(api.base + "/memories/by-key", data=json.dumps(body), content_type="application/json",
                          headers=api.headers)


def delete(api: ApiClient, key: str = "job", **scope: Any) -> Any:
    query = "&".join(f"{k}={v}" for k, v in {**SCOPE, "key": key, **scope}.items())
    return api.client.delete(f"{api.base}/memories/by-key?{query}", headers=api.headers)


def term_counts(user_id: str = "u1") -> dict[str, int]:
    """Document frequencies, the sums of the counters' delta rows (terms no memory uses left out)."""
    rows = TermStat.objects.filter(user_id=user_id).values("term").annotate(n=Sum("doc_count")).filter(n__gt=0)
    return {row["term"]: row["n"] for row in rows}


def test_a_first_put_creates_the_memory_of_the_key(api):
    response = put(api, metadata={"since": 2021}, tags=["job"])
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["outcome"] == "created" and body["memory"]["key"] == "job"
    memory = Memory.objects.get(id=body["memory"]["id"])
    assert (memory.user_id, memory.entity_id, memory.namespace, memory.key) == ("u1", "alice", "work", "job")
    assert memory.metadata == {"since": 2021} and memory.embedding is not None


def test_a_second_put_replaces_the_memory_in_place_and_moves_the_search_counters(api):
    first = put(api).json()["memory"]
    second = put(api, content="Alice leads the platform team.", metadata={"since": 2024})
    assert second.status_code == 200 and second.json()["outcome"] == "replaced"
    memory = Memory.objects.get()
    assert str(memory.id) == first["id"] and memory.created_at.isoformat().startswith(first["created_at"][:19])
    assert memory.content == "Alice leads the platform team." and memory.metadata == {"since": 2024}
    assert "platform" in term_counts() and "engin" not in term_counts()
    assert UserSearchStats.objects.filter(user_id="u1").aggregate(n=Sum("doc_count"))["n"] == 1
    row = LedgerEntry.objects.get(action="replace")
    assert row.inputs["content_hash"] != row.outputs["content_hash"] and "metadata" in row.outputs["fields"]


def test_a_put_of_what_the_key_holds_writes_nothing(api, events):
    put(api, tags=["job"], importance=0.8)
    before = Memory.objects.get()
    again = put(api, tags=["job"], importance=0.8)
    assert again.status_code == 200 and again.json()["outcome"] == "unchanged"
    assert Memory.objects.get().updated_at == before.updated_at
    assert not LedgerEntry.objects.filter(action="replace").exists()
    assert [e for e in events if e["event"] == "memory.updated"] == []


def test_a_put_that_changes_only_metadata_keeps_the_text_and_its_counters(api):
    put(api, metadata={"v": 1})
    counts = term_counts()
    assert put(api, metadata={"v": 2}).json()["outcome"] == "replaced"
    assert Memory.objects.get().metadata == {"v": 2} and term_counts() == counts


def test_keys_are_per_scope_and_two_keys_may_hold_the_same_text(api):
    put(api, key="a")
    put(api, key="b")
    put(api, key="a", entity_id=None)
    put(api, key="a", namespace="home")
    put(api, key="a", user_id="u2")
    assert Memory.objects.count() == 5


def test_an_unkeyed_write_of_the_same_text_is_a_memory_of_its_own(api):
    keyed = put(api).json()["memory"]["id"]
    response = api.post("/memories", {"memories": [{**SCOPE, "content": "Alice works as a data engineer."}]})
    assert response.json()["created"] == 1 and response.json()["ids"] != [keyed]


def test_get_answers_the_memory_of_the_key_and_404_for_a_key_holding_none(api):
    put(api)
    found = api.get("/memories/by-key", **SCOPE, key="job")
    assert found.status_code == 200 and found.json()["content"] == "Alice works as a data engineer."
    missing = api.get("/memories/by-key", **SCOPE, key="nothing")
    assert missing.status_code == 404 and missing.json()["error"]["code"]


def test_delete_erases_the_memory_and_a_second_delete_is_a_no_op(api):
    put(api)
    first = delete(api)
    assert first.status_code == 200 and first.json()["deleted"] == 1
    assert not Memory.objects.exists() and term_counts() == {}
    second = delete(api)
    assert second.status_code == 200 and second.json()["deleted"] == 0


def test_a_key_is_free_again_after_its_memory_is_erased_by_id(api, tenant):
    memory_id = put(api).json()["memory"]["id"]
    memories_erase(tenant_id=tenant.id, memory_ids=[memory_id], actor="test", reason="test")
    assert put(api).json()["outcome"] == "created"


def test_a_user_scoped_key_cannot_put_or_read_another_users_key(api, tenant):
    put(api, user_id="u2")
    scoped = ApiClient(services.apikey_create(tenant=tenant, user_id="u1")[1])
    assert scoped.get("/memories/by-key", **{**SCOPE, "user_id": "u2"}, key="job").status_code == 404
    assert put(scoped, user_id="u2").status_code == 404
    assert Memory.objects.get().user_id == "u2"


def test_another_tenants_key_is_another_memory(api, other_api):
    put(api)
    assert other_api.get("/memories/by-key", **SCOPE, key="job").status_code == 404
    assert put(other_api).json()["outcome"] == "created"


@pytest.mark.parametrize("fields", [{"key": ""}, {"key": "k" * 501}, {"memory_type": "semantic"}, {"content": " "}])
def test_bad_input_answers_422_and_writes_nothing(api, fields):
    response = put(api, **fields)
    assert response.status_code == 422, response.content
    assert not Memory.objects.exists()


def test_the_database_refuses_a_second_memory_for_a_key(api, tenant):
    put(api)
    row = Memory.objects.get()
    row.pk, row.content, row.content_hash = None, "Another text.", services.content_hash("Another text.")
    with pytest.raises(IntegrityError, match="memory_key_once"), transaction.atomic():
        Memory.objects.create(**{f.attname: getattr(row, f.attname) for f in Memory._meta.concrete_fields
                                 if f.attname != "id"})
