"""The operator's admin (issue 9): dashboard, review queue and run pages; decisions recorded in the ledger
with the acting admin user."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from consolidation.jobs.clustering import clustering_run_now
from consolidation.models import ConsolidationRun, LedgerEntry
from tests.factories import DAY, MINUTE, REDIS_BILLING, ingest_one
from zeromem.models import LlmUsage, Memory, MemoryRelation
from zeromem.operator import charts

pytestmark = [pytest.mark.operator, pytest.mark.usefixtures("hash_embedder")]
PAGES = ["/admin/dashboard/", "/admin/review/"]
INCIDENTS = ["The billing-api Redis cache filled up during the deploy.",
             "Billing-api Redis cache filled up again after the deploy; on-call flushed session keys.",
             "Redis for billing-api filled up overnight and evicted the session keys."]


def say(tenant, text, *, at, session, entities=()):
    """Specific to this file: a statement with the entities given (none by default, unlike `ingest`, which
    lets ingestion extract them), so only the memories meant to cluster do."""
    return ingest_one(tenant, text, session=session, entities=entities, created_at=at)


def history(tenant, now):
    """A merge, a supersede and a flagged contradiction, from one clustering run."""
    ids = [say(tenant, text, at=now - 20 * DAY + i * MINUTE, session=f"r{i}", entities=REDIS_BILLING)
           for i, text in enumerate(INCIDENTS)]
    old = say(tenant, "Max retries for the payment worker is 3.", at=now - 60 * DAY, session="a",
              entities=("payment-worker",))
    new = say(tenant, "We bumped max retries for the payment worker to 8.", at=now - 5 * DAY, session="b",
              entities=("payment-worker",))
    say(tenant, "The queue limit is 500 messages.", at=now - 10 * DAY, session="q")
    ingest_one(tenant, "The queue limit is 800 messages.", session="q2", created_at=now - 10 * DAY + 2 * MINUTE)
    say(tenant, "Good morning!", at=now, session="today")
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run
    assert run.status == "succeeded", run.error
    assert sorted(LedgerEntry.objects.filter(run=run).exclude(action__startswith="transition.")
                  .values_list("action", flat=True)) == ["contradiction.flagged", "merge", "merge", "supersede"]
    return ids, old, new, run


def entry(action):
    return LedgerEntry.objects.filter(action=action).latest("id")


def incidents_merge(ids):
    return next(e for e in LedgerEntry.objects.filter(action="merge")
                if {m["id"] for m in e.inputs["members"]} == {str(i) for i in ids})


@pytest.mark.django_db(transaction=True)
def test_operator_pages_render_for_staff_and_refuse_everyone_else(tenant, admin_client, client, now):
    _, _, _, run = history(tenant, now)
    LlmUsage.objects.create(tenant=tenant, month=now.date().replace(day=1), purpose="reflection",
                            calls=3, prompt_tokens=900, completion_tokens=100, cost_usd="0.0123")
    run_page = f"/admin/consolidation/consolidationrun/{run.id}/change/"
    for url in [*PAGES, run_page, "/admin/"]:
        assert admin_client.get(url).status_code == 200, url
    dashboard = admin_client.get("/admin/dashboard/").content.decode()
    assert dashboard.count('<svg xmlns="http://www.w3.org/2000/svg" role="img"') == 5
    assert "acme" in dashboard and "Consolidation runs per day" in dashboard
    assert "http://" not in dashboard.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing fetched
    assert "merge" in admin_client.get(run_page).content.decode()  # the run's ledger rows
    client.force_login(User.objects.create_user("viewer", password="x"))  # not staff
    for url in [*PAGES, run_page]:
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"], url
    client.force_login(User.objects.create_user("intern", password="x", is_staff=True))  # staff, no permission
    for url in PAGES:
        assert client.get(url).status_code == 403, url
    assert admin_client.get("/admin/review/1/approve/").status_code == 405  # decisions are POSTs


@pytest.mark.django_db(transaction=True)
def test_the_review_queue_shows_each_change_with_its_sources_side_by_side(tenant, admin_client, now):
    history(tenant, now)
    page = admin_client.get("/admin/review/").content.decode()
    for text in (*INCIDENTS, "Max retries for the payment worker is 3.",
                 "We bumped max retries for the payment worker to 8.", "The queue limit is 500 messages."):
        assert text in page
    assert page.count('class="side-by-side"') == 4  # two merges, a supersede, a flagged contradiction
    only = admin_client.get("/admin/review/", {"action": "supersede"}).content.decode()
    assert only.count('class="side-by-side"') == 1 and INCIDENTS[0] not in only


@pytest.mark.django_db(transaction=True)
def test_approve_is_recorded_with_the_admin_user_and_leaves_the_queue(tenant, admin_client, admin_user, now):
    ids, _, _, _ = history(tenant, now)
    merge = incidents_merge(ids)
    response = admin_client.post(f"/admin/review/{merge.id}/approve/", {"note": "looks right"})
    assert response.status_code == 302
    merge.refresh_from_db()
    assert merge.reviewed_by.action == "review.approve"
    assert merge.reviewed_by.actor == f"admin:{admin_user.username}" and merge.reviewed_by.reason == "looks right"
    assert INCIDENTS[0] not in admin_client.get("/admin/review/").content.decode()
    again = admin_client.post(f"/admin/review/{merge.id}/reject/", follow=True)
    assert "already decided" in again.content.decode()


@pytest.mark.django_db(transaction=True)
def test_reject_unmerges_a_merge_and_restores_a_superseded_statement(tenant, admin_client, admin_user, now):
    ids, old, _, _ = history(tenant, now)
    merge, supersede = incidents_merge(ids), entry("supersede")
    admin_client.post(f"/admin/review/{merge.id}/reject/")
    admin_client.post(f"/admin/review/{supersede.id}/reject/")
    assert set(Memory.objects.filter(id__in=ids).values_list("state", flat=True)) == {"raw"}
    assert Memory.objects.get(id=merge.outputs["semantic_id"]).state == "archived"
    assert Memory.objects.get(id=old).state == "raw"
    assert not MemoryRelation.objects.filter(to_memory_id=old, relation_type="supersedes").exists()
    for row in (merge, supersede):
        row.refresh_from_db()
        assert row.undone_by is not None and row.reviewed_by.action == "review.reject"
        assert row.reviewed_by.actor == f"admin:{admin_user.username}"


@pytest.mark.django_db(transaction=True)
def test_resolve_clears_a_flagged_contradiction_and_a_wrong_decision_is_refused(tenant, admin_client, now):
    history(tenant, now)
    flagged = entry("contradiction.flagged")
    refused = admin_client.post(f"/admin/review/{flagged.id}/reject/", follow=True).content.decode()
    assert "is not offered for a contradiction.flagged" in refused
    admin_client.post(f"/admin/review/{flagged.id}/resolve/", {"note": "two queues"})
    relation = MemoryRelation.objects.get(relation_type="contradicts")
    assert not relation.flagged and relation.metadata["resolution"] == "two queues"
    assert LedgerEntry.objects.get(action="review.resolve").inputs["entry_id"] == flagged.id


def test_charts_escape_labels_and_draw_every_value():
    svg = charts.stacked_bars("Runs <by> day", ["Nov 01", "Nov 02"], {"succeeded": [2, 0], "failed": [1, 3]})
    assert svg.startswith("<svg") and "<by>" not in svg and "&lt;by&gt;" in svg
    assert svg.count("<title>Nov") == 3  # one bar per non-zero value; the zero one is not drawn
    bars = charts.horizontal_bars("Lag", [("acme / <u1>", 30.0)], unit="h", threshold=24)
    assert "&lt;u1&gt;" in bars and "alert 24 h" in bars
    assert "nothing to show" in charts.horizontal_bars("Cost", [])
    assert charts.line_chart("States", ["a"], {"raw": [0.0]}).count("<polyline") == 1


@pytest.mark.django_db
def test_the_dashboard_counts_states_from_timestamps(tenant, now):
    from zeromem.operator.dashboard import dashboard_figures

    # Rows written directly: states and their timestamps as they would be after days of consolidation.
    Memory.objects.bulk_create([
        Memory(tenant=tenant, user_id="u1", content=f"m{i}", content_hash=f"h{i}", created_at=now - 5 * DAY,
               state=state, consolidated_at=consolidated, archived_at=archived)
        for i, (state, consolidated, archived) in enumerate([
            ("raw", None, None), ("consolidated", now - 2 * DAY, None),
            ("archived", now - 3 * DAY, now - DAY), ("archived", None, now)])])
    ConsolidationRun.objects.create(tenant=tenant, kind="clustering", trigger="cli", status="failed")
    figures = dashboard_figures(days=7)
    assert [figures.states[s][0] for s in ("raw", "consolidated", "archived")] == [0, 0, 0]
    assert [figures.states[s][2] for s in ("raw", "consolidated", "archived")] == [4, 0, 0]  # 4 days ago
    assert [figures.states[s][-1] for s in ("raw", "consolidated", "archived")] == [1, 1, 2]
    assert figures.runs["failed"][-1] == 1 and figures.totals["runs_failed_in_window"] == 1


@pytest.mark.django_db(transaction=True)
def test_a_retired_claim_is_reviewed_beside_the_newer_statement_and_reject_gives_the_memory_back(
        tenant, admin_client, now):
    turn = ingest_one(tenant, "My dog Luna comes along on every trail near Bergen. "
                              "I've hiked 30 peaks in Norway so far.", session="a", created_at=now - 80 * DAY)
    ingest_one(tenant, "I've hiked 34 peaks in Norway so far!", session="b", created_at=now - 4 * DAY)
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    retired = entry("claim.retire")
    page = admin_client.get("/admin/review/", {"action": "claim.retire"}).content.decode()
    assert page.count('class="side-by-side"') == 1
    assert "I&#x27;ve hiked 30 peaks in Norway so far." in page and "34 peaks" in page
    assert "My dog Luna comes along on every trail near Bergen." in page  # the remainder: what it still says

    admin_client.post(f"/admin/review/{retired.id}/reject/", {"note": "same count"})
    assert Memory.objects.get(id=turn).state == "raw"
    assert Memory.objects.get(id=retired.outputs["claim_ids"][0]).archive_reason == "retract"
    retired.refresh_from_db()
    assert retired.undone_by is not None and retired.reviewed_by.action == "review.reject"
