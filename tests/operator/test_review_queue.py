"""The review queue's filters (date, user, tenant, change type, run), its sentence diff, and bulk decisions: the
queue's own (selected changes, a run's changes) and the run list's admin actions; the run page in words."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from consolidation.models import ConsolidationRun, LedgerEntry
from tests.factories import DAY, HOUR, ingest, memory_input
from tests.operator.test_operator_admin import INCIDENTS, history, incidents_merge
from zeromem.models import Memory

pytestmark = [pytest.mark.operator, pytest.mark.usefixtures("hash_embedder")]
ITEM = 'class="module review-item"'


@pytest.mark.django_db(transaction=True)
def test_the_queue_filters_by_user_tenant_change_type_date_and_run(tenant, other_tenant, admin_client, now):
    ids, _, _, run = history(tenant, now)
    LedgerEntry.objects.filter(id=incidents_merge(ids).id).update(created_at=now - 3 * DAY)
    queue = "/admin/review/"

    def shown(**query: object) -> int:
        return admin_client.get(queue, query).content.decode().count(ITEM)

    assert shown() == 4
    assert shown(user="u1") == 4 and shown(user="someone-else") == 0
    assert shown(tenant=tenant.id) == 4 and shown(tenant=other_tenant.id) == 0
    assert shown(action="supersede") == 1 and shown(action="merge") == 2
    assert shown(until=(now - 2 * DAY).date().isoformat()) == 1  # only the merge dated 3 days ago
    assert shown(since=(now - DAY).date().isoformat()) == 3
    assert shown(run=str(run.id)) == 4 and shown(run=str(ConsolidationRun.objects.create(
        tenant=tenant, kind="clustering", trigger="cli").id)) == 0
    refused = admin_client.get(queue, {"since": "not a date"}).content.decode()
    assert refused.count(ITEM) == 4 and "Not applied: since" in refused


@pytest.mark.django_db(transaction=True)
def test_each_change_shows_which_sentences_were_kept_dropped_added_or_retired(tenant, admin_client, now):
    history(tenant, now)

    page = admin_client.get("/admin/review/", {"action": "supersede"}).content.decode()
    assert ('<li class="fate-retired"><span class="fate">retired</span> <span class="text">Max retries for the '
            'payment worker is 3.</span>') in page
    assert ('<li class="fate-added"><span class="fate">added</span> <span class="text">We bumped max retries for '
            'the payment worker to 8.</span>') in page

    merges = admin_client.get("/admin/review/", {"action": "merge"}).content.decode()
    for incident in INCIDENTS:
        assert f'<span class="fate">kept</span> <span class="text">{incident}</span>' in merges.replace("&#x27;", "'")


@pytest.mark.django_db(transaction=True)
def test_a_merge_that_dropped_a_greeting_shows_it_dropped(tenant, admin_client, now):
    from consolidation.jobs.clustering import clustering_run_now

    ingest(tenant, [memory_input(text, session=f"s{i}", created_at=now - (4 + i) * DAY, entities=["billing-api"])
                    for i, text in enumerate(["Good morning! The billing-api Redis cache filled up during the deploy.",
                                              "The billing-api Redis cache filled up again after the deploy."])])
    ingest(tenant, [memory_input("Today's note.", session="today", created_at=now)])
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    merge = LedgerEntry.objects.get(action="merge")
    if "Good morning" in merge.outputs["content"]:
        pytest.fail(f"the merge kept the greeting: {merge.outputs['content']!r}")

    page = admin_client.get("/admin/review/", {"action": "merge"}).content.decode()

    assert '<span class="fate">dropped</span> <span class="text">Good morning!</span>' in page


@pytest.mark.django_db(transaction=True)
def test_bulk_approve_of_selected_changes_records_each_decision(tenant, admin_client, admin_user, now):
    history(tenant, now)
    merges = list(LedgerEntry.objects.filter(action="merge"))

    response = admin_client.post("/admin/review/bulk/", {"decision": "approve",
                                                          "entry": [str(m.id) for m in merges]}, follow=True)

    assert "Approve: 2 changes decided." in response.content.decode()
    for merge in merges:
        merge.refresh_from_db()
        assert merge.reviewed_by.action == "review.approve" and merge.reviewed_by.actor == "admin:admin"
    assert admin_client.get("/admin/review/").content.decode().count(ITEM) == 2
    resolve = admin_client.post("/admin/review/bulk/", {"decision": "resolve", "run": str(merges[0].run_id)},
                                follow=True).content.decode()
    assert "Not applied: choose approve or reject." in resolve
    assert not LedgerEntry.objects.filter(action="review.resolve").exists()


@pytest.mark.django_db(transaction=True)
def test_reject_all_changes_of_a_run_undoes_its_merges_and_leaves_the_flag_for_a_person(tenant, admin_client, now):
    ids, old, _, run = history(tenant, now)

    response = admin_client.post("/admin/review/bulk/", {"decision": "reject", "run": str(run.id)}, follow=True)

    assert "Reject: 3 changes decided." in response.content.decode()
    assert set(Memory.objects.filter(id__in=ids).values_list("state", flat=True)) == {"raw"}
    assert Memory.objects.get(id=old).state == "raw"
    flagged = LedgerEntry.objects.get(action="contradiction.flagged")
    assert flagged.reviewed_by is None  # reject is not offered for a flag: it stays in the queue


@pytest.mark.django_db(transaction=True)
def test_the_run_list_approves_every_change_of_the_selected_runs_and_the_run_page_says_so(
        tenant, admin_client, now):
    _, _, _, run = history(tenant, now)

    response = admin_client.post("/admin/consolidation/consolidationrun/", {
        "action": "approve_changes", "_selected_action": [str(run.id)]}, follow=True)

    assert "3 changes approved; 0 refused." in response.content.decode()
    assert LedgerEntry.objects.filter(run=run, reviewed_by__action="review.approve").count() == 3
    page = admin_client.get(f"/admin/consolidation/consolidationrun/{run.id}/change/").content.decode()
    assert "In review: 3 changes approved, 1 change awaits review." in page


@pytest.mark.django_db(transaction=True)
def test_a_rejected_change_that_cannot_be_undone_is_reported_and_the_rest_decided(tenant, admin_client, now):
    ids, _, _, run = history(tenant, now)
    merge = incidents_merge(ids)
    Memory.objects.filter(id=merge.outputs["semantic_id"]).delete()  # erased: nothing left to unmerge

    response = admin_client.post("/admin/consolidation/consolidationrun/", {
        "action": "reject_changes", "_selected_action": [str(run.id)]}, follow=True).content.decode()

    assert "2 changes rejected; 1 refused." in response and f"Refused — #{merge.id} merge:" in response


@pytest.mark.django_db
def test_the_run_page_tells_the_safety_net_verdict_in_words_and_keeps_the_json_collapsed(tenant, admin_client):
    run = ConsolidationRun.objects.create(
        tenant=tenant, user_id="u1", kind="clustering", trigger="beat", status="failed", reviewed=40, merged=12,
        clusters=4, created=4, superseded=2, error="retrieval safety net: recall fell",
        result={"canaries": {"canaries": 20, "recall_before": 1.0, "recall_after": 0.85, "max_drop": 0.05,
                             "failed": True, "worse": ["memory a", "memory b", "memory c"]}})

    page = admin_client.get(f"/admin/consolidation/consolidationrun/{run.id}/change/").content.decode()

    assert "It reviewed 40 memories." in page and "It merged 12 memories into 4; 2 statements superseded." in page
    assert "The safety net replayed 20 canary queries before and after: recall 1.000 → 0.850." in page
    assert "3 canary queries ranked their memory lower after this run → the run was undone." in page
    words, raw = page.index('class="run-in-words"'), page.index("Raw result and timings (JSON)")
    assert words < raw and '&quot;recall_after&quot;: 0.85' in page[raw:]
    assert 'class="module aligned collapse"' in page[words:]


@pytest.mark.django_db
def test_the_run_page_says_why_a_clustering_run_reviewed_nothing(tenant, admin_client, now):
    ingest(tenant, [memory_input(f"note {i}", session="s", created_at=now - HOUR) for i in range(2)])
    run = ConsolidationRun.objects.create(tenant=tenant, user_id="u1", kind="clustering", trigger="admin",
                                          status="succeeded")

    page = admin_client.get(f"/admin/consolidation/consolidationrun/{run.id}/change/").content.decode()

    assert ("It reviewed no memory: right now the user has 2 memories newer than the 48-hour recency window; "
            "use force to include them.") in page
    assert "It changed nothing." in page


@pytest.mark.django_db(transaction=True)
def test_staff_who_may_only_read_runs_cannot_decide_in_bulk(tenant, client, django_user_model, now):
    _, _, _, run = history(tenant, now)
    reader = django_user_model.objects.create_user("reader", password="x", is_staff=True)
    reader.user_permissions.add(*Permission.objects.filter(codename__in=["view_consolidationrun",
                                                                         "view_ledgerentry"]))
    client.force_login(reader)

    listing = client.get("/admin/consolidation/consolidationrun/").content.decode()
    client.post("/admin/consolidation/consolidationrun/", {"action": "approve_changes",
                                                           "_selected_action": [str(run.id)]})
    bulk = client.post("/admin/review/bulk/", {"decision": "approve", "run": str(run.id)})

    assert "approve_changes" not in listing and bulk.status_code == 403
    assert not LedgerEntry.objects.filter(run=run, reviewed_by__isnull=False).exists()
