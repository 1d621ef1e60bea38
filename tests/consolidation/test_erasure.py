"""Erasure and correction leave no trace of the old text anywhere the API or the admin can show."""

from __future__ import annotations

import pytest

from consolidation.jobs.clustering import clustering_run_now
from consolidation.jobs.reflection import reflection_run_now
from consolidation.models import ConsolidationRun, LedgerEntry
from consolidation.selectors import ReflectionScope
from profiles.models import MemoryProfile
from tests.factories import ingest_entity
from zeromem.models import Memory, MemorySource

pytestmark = [pytest.mark.lifecycle, pytest.mark.usefixtures("hash_embedder")]
SECRET = "Alice: My home address is 42 Wisteria Lane, Springfield, and my PIN is 7391."


def build_history(tenant, user="u1"):
    """Episodes, clustered and reflected: the secret sits in episodes, merges, insights, digests, ledger rows,
    run results and the profile."""
    texts = [SECRET, SECRET.replace("PIN is 7391", "PIN is 7391, please remember it")] + [
        f"Alice: I really love hiking in the Alps, trip number {i}." for i in range(10)]
    ingest_entity(tenant, n=12, user=user, texts=texts)
    clustering_run_now(tenant_id=tenant.id, user_id=user, trigger="cli", force=True)
    reflection_run_now(scope=ReflectionScope(tenant.id, user, "alice", "global"), trigger="cli", force=True)


def visible_text(api, admin_client, tenant):
    """Everything the API and the admin show about the tenant, as one string."""
    parts = [api.get("/memories", user_id="u1", limit=500).content.decode()]
    for state in ("raw", "consolidated", "archived"):
        parts.append(api.get("/memories", state=state, limit=500).content.decode())
    parts.append(api.post("/search", {"query": "Wisteria Lane PIN address", "states": [
        "raw", "consolidated", "archived"]}).content.decode())
    parts.append(api.get("/profile", user_id="u1", entity_id="alice").content.decode())
    for memory in Memory.objects.filter(tenant=tenant):
        parts.append(api.get(f"/memories/{memory.id}").content.decode())
        parts.append(admin_client.get(f"/admin/zeromem/memory/{memory.id}/change/").content.decode())
    for run in ConsolidationRun.objects.filter(tenant=tenant):
        parts.append(api.get(f"/runs/{run.id}").content.decode())
        parts.append(admin_client.get(f"/admin/consolidation/consolidationrun/{run.id}/change/").content.decode())
    for row in LedgerEntry.objects.filter(tenant=tenant):
        parts.append(admin_client.get(f"/admin/consolidation/ledgerentry/{row.id}/change/").content.decode())
    for profile in MemoryProfile.objects.filter(tenant=tenant):
        parts.append(admin_client.get(f"/admin/profiles/memoryprofile/{profile.id}/change/").content.decode())
    for page in ("zeromem/memory", "consolidation/ledgerentry", "consolidation/consolidationrun",
                 "profiles/memoryprofile", "zeromem/memoryrelation"):
        parts.append(admin_client.get(f"/admin/{page}/").content.decode())
    return "\n".join(parts)


def test_forgetting_a_user_leaves_no_trace(tenant, api, admin_client):
    build_history(tenant)
    before = visible_text(api, admin_client, tenant)
    assert "Wisteria" in before and "7391" in before  # the check can see the secret when it is there
    stored = Memory.objects.filter(tenant=tenant).count()
    response = api.post("/forget", {"user_id": "u1"})
    assert response.status_code == 200
    assert response.json()["deleted"] + response.json()["derived_deleted"] == stored > 13
    after = visible_text(api, admin_client, tenant)
    for fragment in ("Wisteria", "7391", "Springfield", "hiking"):
        assert fragment not in after
    assert not Memory.objects.filter(tenant=tenant).exists() and not MemoryProfile.objects.exists()
    assert LedgerEntry.objects.filter(tenant=tenant, action="delete").exists()  # ids and hashes stay


def test_forgetting_an_entity_keeps_the_users_other_memories(tenant, api, admin_client):
    build_history(tenant)
    ingest_entity(tenant, n=2, entity="bob", texts=["Bob: I enjoy sailing on Lake Constance every June."], week=7)
    api.post("/forget", {"entity_id": "alice"})
    assert not Memory.objects.filter(entity_id="alice").exists()
    assert Memory.objects.filter(entity_id="bob").count() >= 1
    assert "Wisteria" not in visible_text(api, admin_client, tenant)


def test_deleting_one_memory_unwinds_what_was_built_from_it(tenant, api, admin_client):
    build_history(tenant)
    secret = Memory.objects.filter(content=SECRET).first() or Memory.objects.get(content__startswith=SECRET[:40])
    derived = set(MemorySource.objects.filter(source_memory_id=secret.id).values_list("memory_id", flat=True))
    siblings = set(MemorySource.objects.filter(memory_id__in=derived).exclude(source_memory_id=secret.id)
                   .values_list("source_memory_id", flat=True)) - derived
    assert derived and siblings
    body = api.client.delete(f"{api.base}/memories/{secret.id}", headers=api.headers).json()
    assert body["deleted"] == 1 and body["derived_deleted"] >= len(derived)
    assert not Memory.objects.filter(id__in=derived | {secret.id}).exists()
    survivors = Memory.objects.filter(id__in=siblings)
    assert survivors.count() == len(siblings)  # nothing else is lost ...
    assert all(m.state == "raw" or m.source_links.exists() or m.cited_by_links.exists() for m in survivors)
    assert "my PIN is 7391." not in visible_text(api, admin_client, tenant)  # the sibling says "7391, please …"
    assert api.client.delete(f"{api.base}/memories/{secret.id}", headers=api.headers).status_code == 404


def test_deleting_another_tenants_memory_is_404(tenant, api, other_api):
    memory = ingest_entity(tenant, n=1)[0]
    assert other_api.client.delete(f"{other_api.base}/memories/{memory.id}",
                                   headers=other_api.headers).status_code == 404
    assert Memory.objects.filter(id=memory.id).exists()


def test_a_correction_rewrites_the_memory_and_what_was_built_from_it(tenant, api, admin_client):
    build_history(tenant)
    secret = Memory.objects.filter(content=SECRET).first()
    corrected = "Alice: My home address is 7 Elm Street, Shelbyville."
    response = api.client.patch(f"{api.base}/memories/{secret.id}", data={"content": corrected},
                                content_type="application/json", headers=api.headers)
    assert response.status_code == 200 and response.json()["content"] == corrected
    secret.refresh_from_db()
    assert secret.state == "raw" and secret.content_hash != "" and not secret.cited_by_links.exists()
    hits = api.post("/search", {"query": "Elm Street Shelbyville", "user_id": "u1"}).json()["results"]
    assert hits and hits[0]["memory"]["id"] == str(secret.id)
    row = LedgerEntry.objects.get(action="correct")
    assert set(row.inputs) == {"content_hash"} and row.outputs["content_hash"] == secret.content_hash
    assert "my PIN is 7391." not in visible_text(api, admin_client, tenant)
    bad = api.client.patch(f"{api.base}/memories/{secret.id}", data={"content": ""},
                           content_type="application/json", headers=api.headers)
    assert bad.status_code == 422
