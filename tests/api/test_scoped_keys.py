"""A key scoped to one user (`createapikey --user`) sees and writes only that user: naming another user, or asking
for another user's memory, run or profile by id, answers the same 404 as something that does not exist; leaving the
user out narrows the request to the key's own user."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from consolidation.models import ConsolidationRun
from profiles.models import MemoryProfile
from tests.conftest import ApiClient
from tests.factories import DAY, ingest, ingest_one
from zeromem.core import services
from zeromem.models import ApiKey, Memory

pytestmark = [pytest.mark.usefixtures("hash_embedder"), pytest.mark.django_db]

NOT_FOUND = {"error": {"code": "not_found", "message": "no such user", "details": []}}


@pytest.fixture
def alice_key(tenant):
    """A key of the tenant scoped to user alice."""
    _, secret = services.apikey_create(tenant=tenant, name="alice's agent", user_id="alice")
    return ApiClient(secret)


@pytest.fixture
def memories(tenant, now):
    """Two users of one tenant, with memories about the same entity: {user: [ids]}."""
    return {user: ingest(tenant, [f"{user.title()} keeps the deploy notes for project-x, part {i}." for i in range(2)],
                         user=user, entity_id="project-x", session=f"{user}-s1", created_at=now - 3 * DAY)
            for user in ("alice", "bob")}


def users_of(answer_memories):
    return {m["user_id"] for m in answer_memories}


def test_a_scoped_key_stores_memories_of_its_own_user_only(alice_key):
    own = alice_key.post("/memories", {"memories": [{"content": "Alice's note.", "user_id": "alice"}]})
    other = alice_key.post("/memories", {"memories": [{"content": "Mine.", "user_id": "alice"},
                                                      {"content": "Bob's note.", "user_id": "bob"}]})
    assert own.status_code == 201
    assert (other.status_code, other.json()) == (404, NOT_FOUND)
    assert list(Memory.objects.values_list("user_id", "content")) == [("alice", "Alice's note.")]  # all or nothing


def test_another_user_answers_exactly_as_a_user_that_does_not_exist(alice_key, memories):
    for user in ("bob", "nobody"):
        for response in (alice_key.get("/memories", user_id=user),
                         alice_key.post("/search", {"query": "deploy notes", "user_id": user}),
                         alice_key.get("/profile", user_id=user),
                         alice_key.post("/context", {"query": "deploy notes", "user_id": user}),
                         alice_key.get("/runs", user_id=user),
                         alice_key.post("/reflect", {"user_id": user}),
                         alice_key.post("/forget", {"user_id": user}),
                         alice_key.post("/sessions/bob-s1/end", {"user_id": user})):
            assert (response.status_code, response.json()) == (404, NOT_FOUND), response.request["PATH_INFO"]
    assert Memory.objects.filter(user_id="bob").count() == 2


def test_lists_and_searches_without_a_user_are_narrowed_to_the_keys_user(alice_key, api, memories):
    assert users_of(alice_key.get("/memories").json()["memories"]) == {"alice"}
    assert users_of(alice_key.get("/memories", entity_id="project-x").json()["memories"]) == {"alice"}
    hits = alice_key.post("/search", {"query": "deploy notes project-x", "states": ["raw", "archived"],
                                      "include_history": True}).json()["results"]
    assert hits and users_of(h["memory"] for h in hits) == {"alice"}
    assert users_of(api.get("/memories").json()["memories"]) == {"alice", "bob"}  # a tenant-wide key sees both


def test_naming_its_own_user_works_as_usual(alice_key, memories):
    assert len(alice_key.get("/memories", user_id="alice").json()["memories"]) == 2
    context = alice_key.post("/context", {"query": "deploy notes", "user_id": "alice"}).json()
    assert context["memories"] and "Bob" not in context["context"]


def test_another_users_memory_by_id_is_404_on_every_route(alice_key, memories):
    bob = memories["bob"][0]
    before = Memory.objects.get(id=bob)
    for method, path, body in (("GET", f"/memories/{bob}", ""), ("GET", f"/memories/{bob}/history", ""),
                               ("PATCH", f"/memories/{bob}", '{"content": "rewritten"}'),
                               ("POST", f"/memories/{bob}/feedback", '{"useful": false}'),
                               ("DELETE", f"/memories/{bob}", "")):
        response = alice_key.client.generic(method, alice_key.base + path, body, content_type="application/json",
                                            headers=alice_key.headers)
        assert response.status_code == 404 and response.json()["error"]["message"] == "no such memory", path
    after = Memory.objects.get(id=bob)
    assert (after.content, after.reward_score) == (before.content, before.reward_score)


def test_its_own_memory_by_id_works_as_usual(alice_key, memories):
    alice = memories["alice"][0]
    assert alice_key.get(f"/memories/{alice}").json()["user_id"] == "alice"
    assert alice_key.get(f"/memories/{alice}/history").status_code == 200
    assert alice_key.post(f"/memories/{alice}/feedback", {"useful": True}).status_code == 200


def test_another_users_profile_is_404_and_its_own_is_read(alice_key, tenant):
    for user in ("alice", "bob"):
        MemoryProfile.objects.create(tenant=tenant, user_id=user, entity_id="project-x", summary=f"{user}'s")
    assert alice_key.get("/profile", user_id="bob", entity_id="project-x").status_code == 404
    assert alice_key.get("/profile", user_id="alice", entity_id="project-x").json()["summary"] == "alice's"


def test_runs_of_other_users_and_of_the_whole_tenant_are_hidden(alice_key, tenant):
    runs = {user: ConsolidationRun.objects.create(tenant=tenant, user_id=user, kind=kind, trigger="cli",
                                                  status="succeeded")
            for user, kind in (("alice", "clustering"), ("bob", "clustering"), ("", "lifecycle"))}
    assert [r["run_id"] for r in alice_key.get("/runs").json()["runs"]] == [str(runs["alice"].id)]
    assert alice_key.get(f"/runs/{runs['alice'].id}").status_code == 200
    assert alice_key.get(f"/runs/{runs['bob'].id}").status_code == 404
    assert alice_key.get(f"/runs/{runs[''].id}").status_code == 404


def test_reflecting_on_an_entity_only_another_user_has_is_404(alice_key, tenant, now):
    ingest_one(tenant, "Bob's project-y plan.", user="bob", entity_id="project-y", created_at=now - DAY)
    response = alice_key.post("/reflect?async=1", {"entity_id": "project-y"})
    assert response.status_code == 404 and not ConsolidationRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_reflecting_on_an_entity_many_users_share_picks_the_keys_user(alice_key, memories, eager):
    response = alice_key.post("/reflect?async=1", {"entity_id": "project-x"})
    assert response.status_code == 202
    assert ConsolidationRun.objects.get(id=response.json()["run_id"]).user_id == "alice"


@pytest.mark.django_db(transaction=True)
def test_forgetting_an_entity_forgets_only_the_keys_user(alice_key, memories, eager):
    answer = alice_key.post("/forget", {"entity_id": "project-x"}).json()
    assert answer["deleted"] == 2
    assert set(Memory.objects.values_list("user_id", flat=True)) == {"bob"}


@pytest.mark.django_db(transaction=True)
def test_ending_its_own_users_session_works_as_usual(alice_key, memories, eager):
    assert alice_key.post("/sessions/alice-s1/end", {"user_id": "alice"}).status_code == 202


def test_createapikey_scopes_a_key_to_a_user(db):
    out, err = io.StringIO(), io.StringIO()
    call_command("createapikey", "--tenant", "acme", "--user", "alice", stdout=out, stderr=err)
    key = ApiKey.objects.get()
    assert (key.tenant.name, key.user_id) == ("acme", "alice") and "scoped to user 'alice'" in err.getvalue()
    assert out.getvalue().strip().startswith(f"zm_{key.prefix}_")
    call_command("createapikey", "--tenant", "acme", stdout=io.StringIO(), stderr=io.StringIO())
    assert ApiKey.objects.filter(user_id__isnull=True).count() == 1
    with pytest.raises(CommandError):
        call_command("createapikey", "--tenant", "acme", "--user", "", stdout=io.StringIO(), stderr=io.StringIO())
