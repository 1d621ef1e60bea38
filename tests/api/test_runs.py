"""Runs a client can follow: session end answers its run, GET /runs lists the tenant's runs, /reflect answers
at once when no worker takes the run, and numbers and booleans are refused as strings."""

from __future__ import annotations

import pytest

from consolidation.models import ConsolidationRun, RunKind, RunStatus
from consolidation.runs import run_request
from tests.factories import ingest_entity

pytestmark = pytest.mark.usefixtures("hash_embedder")


@pytest.mark.django_db(transaction=True)
def test_session_end_answers_the_forced_clustering_run_it_queued(tenant, api, eager):
    ingest_entity(tenant, n=12)

    answer = api.post("/sessions/now-0/end", {"user_id": "u1"}).json()

    clustering = ConsolidationRun.objects.get(id=answer["run_ids"][0])
    assert answer["queued"] and (clustering.kind, clustering.force, clustering.status) == (
        RunKind.CLUSTERING, True, RunStatus.SUCCEEDED)
    assert api.post("/sessions/now-0/end", {"user_id": "u1"}).json()["run_ids"] == []
    listed = api.get("/runs?user_id=u1").json()["runs"]
    assert {run["run_id"] for run in listed} == {
        str(run_id) for run_id in ConsolidationRun.objects.filter(user_id="u1").values_list("id", flat=True)}


@pytest.mark.django_db
def test_runs_are_listed_newest_first_filtered_and_paged(tenant, api, other_api):
    for user in ("u1", "u2", "u3"):
        run_request(tenant_id=tenant.id, user_id=user, kind=RunKind.CLUSTERING, trigger="cli")

    first = api.get("/runs?limit=2").json()
    second = api.get(f"/runs?limit=2&cursor={first['next_cursor']}").json()

    assert [run["user_id"] for run in first["runs"] + second["runs"]] == ["u3", "u2", "u1"]
    assert second["next_cursor"] is None
    assert [run["user_id"] for run in api.get("/runs?user_id=u2&kind=clustering&status=pending").json()["runs"]] == [
        "u2"]
    assert api.get("/runs?status=succeeded").json()["runs"] == []
    assert other_api.get("/runs").json() == {"runs": [], "next_cursor": None}
    assert api.get("/runs?kind=dreaming").status_code == 422


@pytest.mark.django_db(transaction=True)
def test_reflect_answers_202_with_the_run_id_at_once_when_no_worker_takes_it(tenant, api, settings):
    settings.ZEROMEMORY_REFLECT_WAIT_SECONDS = 600  # waiting for a worker would hang this test
    ingest_entity(tenant, n=12)

    response = api.post("/reflect", {"entity_id": "alice"})

    assert response.status_code == 202 and response.json()["status"] == "pending"
    assert ConsolidationRun.objects.get(id=response.json()["run_id"]).status == RunStatus.PENDING


@pytest.mark.parametrize(("path", "body"), [
    ("/memories", {"memories": [{"content": "x", "user_id": "u1", "importance": "0.8"}]}),
    ("/search", {"query": "x", "top_k": "5"}),
    ("/reflect", {"user_id": "u1", "force": "yes"}),
    ("/context", {"query": "x", "user_id": "u1", "budget_chars": "500"}),
])
def test_numbers_and_booleans_given_as_strings_are_refused(api, path, body):
    response = api.post(path, body)

    assert response.status_code == 422, response.content
