"""The operator home (the admin index), a user's page with "Run clustering now" and "Reflect now" (force, and why
a run would read nothing), and lag in human units."""

from __future__ import annotations

import pytest

from consolidation.models import ConsolidationRun, LedgerEntry
from profiles.models import MemoryProfile
from tests.factories import DAY, HOUR, ingest, ingest_one, memory_input
from tests.operator.test_operator_admin import history
from zeromem.models import LlmUsage
from zeromem.operator import charts
from zeromem.operator.run_words import run_changes
from zeromem.operator.wording import counted, duration_words

pytestmark = [pytest.mark.operator, pytest.mark.usefixtures("hash_embedder")]


def test_lag_reads_in_days_hours_and_minutes():
    assert [duration_words(h) for h in (0.001, 0.5, 3 + 5 / 60, 24, 50, 21 * 24, 30_700)] == [
        "under a minute", "30 min", "3 h 5 min", "24 h", "2 days 2 h", "21 days", "1,279 days"]
    assert counted(1, "memory", "memories") == "1 memory" and counted(4895, "memory", "memories") == "4,895 memories"


def test_the_dashboards_lag_bars_read_in_days_not_in_exponents():
    bars = charts.horizontal_bars("Lag", [("acme / u1", 30_700.0)], threshold=24, value_words=duration_words)

    assert "1,279 days" in bars and "e+" not in bars and "alert 24 h" in bars


@pytest.mark.django_db(transaction=True)
def test_the_index_shows_the_days_runs_with_what_each_changed_the_queue_cost_lag_and_yesterday(
        tenant, admin_client, now):
    _, _, _, run = history(tenant, now)
    ingest_one(tenant, "The staging database moved to eu-west-2.", user="u2", session="old", created_at=now - 30 * DAY)
    LlmUsage.objects.create(tenant=tenant, month=now.date().replace(day=1), purpose="reflection", calls=3,
                            prompt_tokens=900, completion_tokens=100, cost_usd="1.25")
    LedgerEntry.objects.filter(run=run, action="merge").update(created_at=now - DAY)  # two merges yesterday
    ConsolidationRun.objects.create(tenant=tenant, user_id="u3", kind="reflection", trigger="beat", status="failed",
                                    error="LLM unavailable: timed out")

    page = admin_client.get("/admin/").content.decode()

    assert "Runs of the last 24 h" in page and run_changes(run) in page and "merged" in run_changes(run)
    assert "<strong>4</strong> change(s) wait for review" in page  # two merges, a supersede, a contradiction
    assert "$1.25 this month" in page
    assert "28 days" in page and "e+" not in page  # u2's episode: 30 days old, 2 past the 48-hour window
    assert "2 × merge" in page  # what changed yesterday
    failures = page[page.index("Failures of the last 24 h"):]
    assert "reflection u3</a>" in failures and "LLM unavailable: timed out" in failures
    assert f"/admin/operator/user/?tenant={tenant.id}&user=u2" in page  # drill-down


@pytest.mark.django_db
def test_a_users_page_shows_memories_by_state_runs_and_profiles(tenant, admin_client, now):
    ingest(tenant, [memory_input(f"note {i}", session="s", created_at=now - HOUR) for i in range(3)])
    MemoryProfile.objects.create(tenant=tenant, user_id="u1", summary="Runs the billing team.",
                                 facts=[{"category": "role", "statement": "lead", "confidence": 0.9,
                                         "source_ids": []}])
    ConsolidationRun.objects.create(tenant=tenant, user_id="u1", kind="clustering", trigger="admin",
                                    status="succeeded", merged=12, clusters=4)

    page = admin_client.get("/admin/operator/user/", {"tenant": tenant.id, "user": "u1"}).content.decode()

    assert "<td>episodic</td><td>3</td><td>0</td><td>0</td>" in page
    assert "merged 12 memories into 4" in page and "Runs the billing team." in page
    assert 'name="force"' in page and "Run clustering now" in page and "Reflect now" in page
    assert "3 memories newer than the 48-hour recency window" in page
    assert admin_client.get("/admin/operator/user/", {"tenant": 999, "user": "u1"}).status_code == 404
    assert admin_client.post("/admin/operator/user/erase/", {"tenant": tenant.id, "user": "u1"}).status_code == 404


@pytest.mark.django_db
def test_run_clustering_now_says_why_it_will_read_nothing_and_force_includes_the_recent_memories(
        tenant, admin_client, now, django_capture_on_commit_callbacks):
    ingest(tenant, [memory_input(f"note {i}", session="s", created_at=now - HOUR) for i in range(3)])

    with django_capture_on_commit_callbacks():
        unforced = admin_client.post("/admin/operator/user/cluster/", {"tenant": tenant.id, "user": "u1"},
                                     follow=True).content.decode()
    assert "Clustering queued for 1 user;" in unforced
    assert ("the run will review no memory: right now the user has 3 memories newer than the 48-hour recency "
            "window; use force to include them.") in unforced
    assert not ConsolidationRun.objects.get().force

    with django_capture_on_commit_callbacks():
        forced = admin_client.post("/admin/operator/user/cluster/", {"tenant": tenant.id, "user": "u1",
                                                                     "force": "on"}, follow=True).content.decode()
    assert "(forced)" in forced and "will review no memory" not in forced
    assert ConsolidationRun.objects.get().force  # the pending run took the force


@pytest.mark.django_db
def test_reflect_now_says_when_the_threshold_holds_it_back_and_force_reflects(
        tenant, admin_client, now, django_capture_on_commit_callbacks):
    ingest(tenant, [memory_input(f"Alice likes tea {i}", entity_id="alice", session=f"s{i}",
                                 created_at=now - (5 - i) * DAY) for i in range(2)])

    held = admin_client.post("/admin/operator/user/reflect/", {"tenant": tenant.id, "user": "u1"},
                             follow=True).content.decode()
    assert "1 entity has unreflected memories, but fewer than the reflection threshold" in held
    assert not ConsolidationRun.objects.exists()

    with django_capture_on_commit_callbacks() as callbacks:
        forced = admin_client.post("/admin/operator/user/reflect/", {"tenant": tenant.id, "user": "u1",
                                                                     "force": "on"}, follow=True).content.decode()
    assert "Reflection queued for 1 scope (forced)" in forced and len(callbacks) == 1
    run = ConsolidationRun.objects.get()
    assert (run.kind, run.entity_id, run.force, run.trigger) == ("reflection", "alice", True, "admin")


@pytest.mark.django_db
def test_the_memory_list_offers_forced_clustering(tenant, admin_client, now, django_capture_on_commit_callbacks):
    ids = ingest(tenant, [memory_input("note", session="s", created_at=now - HOUR)])

    with django_capture_on_commit_callbacks():
        page = admin_client.post("/admin/zeromem/memory/", {"action": "run_clustering_now_forced",
                                                             "_selected_action": [str(i) for i in ids]}, follow=True)

    assert b"Clustering queued for 1 user (forced)" in page.content and ConsolidationRun.objects.get().force


@pytest.mark.django_db
def test_only_staff_with_the_permission_may_open_a_user_or_run_a_job(tenant, client, django_user_model):
    client.force_login(django_user_model.objects.create_user("intern", password="x", is_staff=True))

    assert client.get("/admin/operator/user/", {"tenant": tenant.id, "user": "u1"}).status_code == 403
    assert client.post("/admin/operator/user/cluster/", {"tenant": tenant.id, "user": "u1"}).status_code == 403
    assert client.get("/admin/operator/user/cluster/").status_code == 405
    assert not ConsolidationRun.objects.exists()


@pytest.mark.django_db
def test_the_memory_and_profile_lists_offer_forced_reflection(tenant, admin_client, now,
                                                               django_capture_on_commit_callbacks):
    ids = ingest(tenant, [memory_input("Alice likes tea.", entity_id="alice", session="s", created_at=now - DAY)])
    profile = MemoryProfile.objects.create(tenant=tenant, user_id="u1", entity_id="bob")

    with django_capture_on_commit_callbacks():
        from_memories = admin_client.post("/admin/zeromem/memory/", {
            "action": "trigger_reflection_forced", "_selected_action": [str(i) for i in ids]}, follow=True)
    assert b"Reflection queued for 1 scope (forced)" in from_memories.content
    first = ConsolidationRun.objects.get()
    assert (first.entity_id, first.force) == ("alice", True)
    ConsolidationRun.objects.filter(id=first.id).update(status="succeeded")

    with django_capture_on_commit_callbacks():
        admin_client.post("/admin/profiles/memoryprofile/", {"action": "trigger_reflection_forced",
                                                             "_selected_action": [profile.id]})
    assert ConsolidationRun.objects.get(entity_id="bob").force
