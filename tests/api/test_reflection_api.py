"""POST …/reflect, GET …/runs/{id} and POST …/context, with the task run eagerly or by a real worker."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from consolidation import triggers
from consolidation.models import ConsolidationRun
from tests.conftest import ApiClient
from tests.factories import ingest_entity
from zeromem.core import services
from zeromem.devtools.fake_llm import FakeLLM, Reply
from zeromem.models import Memory

pytestmark = [pytest.mark.usefixtures("hash_embedder"), pytest.mark.django_db(transaction=True)]


def test_reflect_answers_the_documented_shape(tenant, api, eager):
    ingest_entity(tenant, n=12)
    response = api.post("/reflect", {"entity_id": "alice", "namespace": "global"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert {"entity_id", "insights", "memories_reviewed", "new_semantic_memories", "profile_updated"} <= set(body)
    assert body["entity_id"] == "alice" and body["memories_reviewed"] == 12 and body["profile_updated"] is True
    condensed = Memory.objects.filter(tags__contains=["condensed"]).count()
    assert condensed >= 1 and len(body["insights"]) >= 3
    insights = Memory.objects.filter(tags__contains=["insight"]).count()  # items no passage already carries
    assert body["new_semantic_memories"] == insights + condensed
    assert all(isinstance(s, str) for s in body["insights"])
    profile = api.get("/profile", user_id="u1", entity_id="alice").json()
    assert profile["version"] == 1 and profile["preferences"]


def test_an_entity_with_no_inputs_answers_zeros(tenant, api, eager):
    ingest_entity(tenant, n=12)
    api.post("/reflect", {"entity_id": "alice"})
    body = api.post("/reflect", {"entity_id": "alice"}).json()
    assert body == {**body, "insights": [], "memories_reviewed": 0, "new_semantic_memories": 0,
                    "profile_updated": False}


def test_user_wide_reflection(tenant, api, eager):
    now_items = [services.MemoryInput(content=t, user_id="u2", session_id=f"s{i}",
                                      created_at=timezone.now() - timedelta(days=10 - i))
                 for i, t in enumerate(["I prefer dark mode in every editor I use.",
                                        "I usually deploy on Tuesdays after the standup.",
                                        "Today was fine."])]
    services.memories_ingest(tenant_id=tenant.id, items=now_items)
    body = api.post("/reflect", {"user_id": "u2"}).json()
    assert body["entity_id"] is None and body["user_id"] == "u2"
    assert body["memories_reviewed"] == 2  # the newest session is the current one: kept for the agent


def test_reflect_is_tenant_scoped_and_validates(tenant, api, other_api, eager):
    ingest_entity(tenant, n=12)
    assert other_api.post("/reflect", {"entity_id": "alice"}).status_code == 404
    assert api.post("/reflect", {"entity_id": "nobody"}).status_code == 404
    assert api.post("/reflect", {"namespace": "global"}).status_code == 422
    assert api.post("/reflect", {"entity_id": "alice", "surprise": 1}).status_code == 422
    assert ConsolidationRun.objects.count() == 0


def test_async_answers_202_and_the_run_reports_the_result(tenant, api, other_api, eager):
    ingest_entity(tenant, n=12)
    accepted = api.client.post(api.base + "/reflect?async=1", data=json.dumps({"entity_id": "alice"}),
                               content_type="application/json", headers=api.headers)
    assert accepted.status_code == 202 and set(accepted.json()) == {"run_id", "status"}
    run_id = accepted.json()["run_id"]
    run = api.get(f"/runs/{run_id}").json()
    assert run["status"] == "succeeded" and run["kind"] == "reflection"
    assert run["progress"] == {"calls_done": 1, "calls_planned": 1}
    assert run["result"]["memories_reviewed"] == 12
    assert other_api.get(f"/runs/{run_id}").status_code == 404


def test_past_the_wait_limit_it_answers_202(tenant, api, settings):
    settings.ZEROMEMORY_REFLECT_WAIT_SECONDS = 0.2  # no worker is running: the run stays pending
    ingest_entity(tenant, n=12)
    response = api.post("/reflect", {"entity_id": "alice"})
    assert response.status_code == 202 and response.json()["status"] == "pending"
    assert api.get(f"/runs/{response.json()['run_id']}").json()["result"] is None


@pytest.fixture
def slow_llm(settings):
    with FakeLLM(script=[Reply(delay=2.0)]) as server:
        yield server


@pytest.fixture
def worker_env(slow_llm):
    return {"ZEROMEMORY_REFLECTION_MODEL": "openai/fake-reflector", "ZEROMEMORY_LLM_API_BASE": slow_llm.api_base,
            "ZEROMEMORY_LLM_API_KEY": "sk-test-not-a-secret"}


def test_overlapping_requests_run_one_reflection(tenant, api, worker, slow_llm, monkeypatch, settings):
    # What is tested is that the requests join one run. The worker runs at idle CPU priority, so on a loaded
    # machine it may take longer than the default waits to claim and finish; the 202 those answer is another
    # behaviour (tested above).
    monkeypatch.setattr(triggers, "CLAIM_WAIT_SECONDS", 120.0)
    settings.ZEROMEMORY_REFLECT_WAIT_SECONDS = 120.0
    ingest_entity(tenant, n=12)
    answers = []

    def post():
        answers.append(ApiClient(api.headers["Authorization"].split()[1]).post("/reflect", {"entity_id": "alice"}))
        connection.close()

    threads = [threading.Thread(target=post) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [a.status_code for a in answers] == [200, 200, 200], [a.content for a in answers]
    assert len({a.json()["run_id"] for a in answers}) == 1
    assert ConsolidationRun.objects.filter(kind="reflection").count() == 1
    assert len(slow_llm.requests) == 1  # one call: 12 memories in one batch
    assert answers[0].json()["memories_reviewed"] == 12


def test_context_packs_profile_and_results_within_the_budget(tenant, api, eager):
    ingest_entity(tenant, n=16)
    api.post("/reflect", {"entity_id": "alice"})
    for budget in (300, 2000):
        body = api.post("/context", {"query": "what does Alice drink", "user_id": "u1", "entity_id": "alice",
                                     "budget_chars": budget}).json()
        assert body["chars"] == len(body["context"]) <= budget
        # 300: the 400-character summary does not fit half the budget, items do; 2,000: the summary, and only
        # the items it does not already say
        shown = body["context"].startswith("Summary: ") if budget == 2000 else bool(body["profile"]["items"])
        assert body["profile"]["summary"] and shown
        assert body["memories"] and ("tea" in body["context"] or budget == 300)  # 300: room for one passage
    body = api.post("/context", {"query": "anything", "user_id": "nobody"}).json()
    assert body["profile"] is None and body["memories"] == [] and body["context"] == ""
    assert api.post("/context", {"query": "x", "user_id": "u1", "budget_chars": 10**9}).status_code == 422
