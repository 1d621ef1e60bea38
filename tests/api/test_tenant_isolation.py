"""Tenant B's key never reads, lists, searches or changes tenant A's memories, on every endpoint."""

from __future__ import annotations

import pytest

from profiles.models import MemoryProfile
from zeromem.models import Memory

pytestmark = pytest.mark.usefixtures("hash_embedder")


@pytest.fixture
def a_memory_id(api):
    body = {"memories": [{"content": "Tenant A's secret plan: launch on 1 March.", "user_id": "shared-user",
                          "session_id": "s1", "entity_id": "project-x"}]}
    return api.post("/memories", body).json()["ids"][0]


def test_another_tenant_cannot_read_a_memory_by_id(other_api, a_memory_id):
    response = other_api.get(f"/memories/{a_memory_id}")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


def test_another_tenant_lists_nothing(other_api, a_memory_id):
    for params in ({}, {"user_id": "shared-user"}, {"entity_id": "project-x"}, {"state": "raw"}):
        assert other_api.get("/memories", **params).json()["memories"] == []


def test_another_tenant_searches_nothing(other_api, a_memory_id):
    body = {"query": "secret plan launch", "user_id": "shared-user", "states": ["raw", "consolidated", "archived"]}
    assert other_api.post("/search", body).json()["results"] == []


def test_another_tenant_cannot_change_a_memory_with_the_same_user_and_content(other_api, a_memory_id):
    body = {"memories": [{"content": "Tenant A's secret plan: launch on 1 March.", "user_id": "shared-user",
                          "session_id": "s1"}]}
    response = other_api.post("/memories", body).json()
    assert response["created"] == 1 and response["ids"][0] != a_memory_id  # stored apart, not deduplicated
    original = Memory.objects.get(id=a_memory_id)
    assert original.tenant.name == "acme"


def test_another_tenants_idempotency_keys_are_separate(api, other_api):
    body = {"memories": [{"content": "same words", "user_id": "u"}]}
    first = api.post("/memories", body, **{"Idempotency-Key": "k"}).json()
    second = other_api.post("/memories", body, **{"Idempotency-Key": "k"}).json()
    assert first["ids"] != second["ids"] and second["created"] == 1


def test_another_tenant_cannot_read_a_profile(api, other_api, tenant):
    MemoryProfile.objects.create(tenant=tenant, user_id="shared-user", entity_id="project-x", summary="A only")
    assert api.get("/profile", user_id="shared-user", entity_id="project-x").json()["summary"] == "A only"
    assert other_api.get("/profile", user_id="shared-user", entity_id="project-x").status_code == 404


def test_a_revoked_key_is_refused(tenant):
    from tests.conftest import ApiClient
    from zeromem.core import services

    key, secret = services.apikey_create(tenant=tenant)
    client = ApiClient(secret)
    assert client.get("/memories").status_code == 200
    services.apikey_revoke(key=key)
    assert client.get("/memories").status_code == 401
