"""The operator's admin: pages render for staff, keys show their secret once, actions call the services."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from consolidation.models import ConsolidationRun
from tests.factories import ingest, ingest_clusterable, memory_input
from zeromem.core import services
from zeromem.models import ApiKey, Memory


@pytest.fixture
def staff(db):
    user = User.objects.create_superuser("ops", "ops@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.usefixtures("hash_embedder")
def test_every_admin_list_renders_with_its_filters(staff, tenant):
    ingest(tenant, "Redis at 512 MB", entity_id="svc")
    for path in ("zeromem/memory", "zeromem/tenant", "zeromem/apikey", "zeromem/memoryrelation",
                 "consolidation/consolidationrun", "consolidation/ledgerentry", "profiles/memoryprofile",
                 "django_celery_beat/periodictask"):
        assert staff.get(f"/admin/{path}/").status_code == 200, path
    page = staff.get("/admin/zeromem/memory/", {"state__exact": "raw", "q": "Redis"})
    assert b"Redis at 512 MB" in page.content
    memory = Memory.objects.get()
    assert staff.get(f"/admin/zeromem/memory/{memory.id}/change/").status_code == 200


def test_a_new_api_key_shows_its_secret_once_and_stores_only_a_hash(staff, tenant):
    response = staff.post("/admin/zeromem/apikey/add/", {"tenant": tenant.id, "name": "ci"}, follow=True)
    secret = re.search(rb"zm_[0-9a-f]{12}_[\w-]+", response.content).group().decode()
    key = ApiKey.objects.get(name="ci")
    assert key.secret_hash == services.hash_secret(secret) and secret not in str(key.__dict__)
    assert secret.encode() not in staff.get(f"/admin/zeromem/apikey/{key.id}/change/").content


def test_non_staff_users_are_refused(db):
    user = User.objects.create_user("agent", password="pw")
    client = Client()
    client.force_login(user)
    assert client.get("/admin/zeromem/memory/").status_code == 302


@pytest.mark.usefixtures("hash_embedder")
def test_run_clustering_now_queues_one_run_per_user(staff, tenant, django_capture_on_commit_callbacks,
                                                     three_days_ago):
    ids = ingest(tenant, [memory_input(f"note {i}", user=f"u{i % 2}", created_at=three_days_ago) for i in range(4)])
    with django_capture_on_commit_callbacks() as callbacks:
        response = staff.post("/admin/zeromem/memory/", {"action": "run_clustering_now",
                                                          "_selected_action": [str(i) for i in ids]}, follow=True)
    assert b"Clustering queued for 2 users; 0 already had an active run" in response.content
    assert ConsolidationRun.objects.filter(kind="clustering", status="pending", trigger="admin").count() == 2
    assert len(callbacks) == 2  # one task per run, sent after commit


@pytest.mark.usefixtures("hash_embedder")
@pytest.mark.django_db(transaction=True)
def test_the_unmerge_action_undoes_a_merge_and_reports_refusals(tenant, three_days_ago):
    from consolidation.jobs.clustering import clustering_run_now

    user = User.objects.create_superuser("ops2", "ops2@example.com", "pw")
    client = Client()
    client.force_login(user)
    ingest_clusterable(tenant, [f"billing-api Redis incident {i}" for i in range(2)], session=None,
                       created_at=three_days_ago)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True)
    semantic = Memory.objects.get(memory_type="semantic")
    episode = Memory.objects.filter(memory_type="episodic").first()
    response = client.post("/admin/zeromem/memory/", {"action": "unmerge",
                                                      "_selected_action": [str(semantic.id), str(episode.id)]},
                           follow=True)
    assert b"1 memory(ies) unmerged" in response.content and b"Refused" in response.content
    assert set(Memory.objects.filter(memory_type="episodic").values_list("state", flat=True)) == {"raw"}
