"""GET /metrics after a scripted scenario shows every metric with the values the scenario implies."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from consolidation.jobs.lifecycle import lifecycle_run_now
from consolidation.jobs.reflection import reflection_run_now
from consolidation.models import ConsolidationRun
from consolidation.selectors import ReflectionScope
from tests.factories import ingest_entity, use_fake_llm
from zeromem.api.metrics import CELERY_QUEUE
from zeromem.celery import app as celery_app
from zeromem.core import services
from zeromem.core.events import redis_client
from zeromem.devtools.fake_llm import FakeLLM
from zeromem.models import LlmUsage, Memory

pytestmark = [pytest.mark.operator, pytest.mark.usefixtures("hash_embedder")]
TOKEN = "metrics-token-for-tests"


def scrape(token=TOKEN):
    return Client().get("/metrics", headers={"Authorization": f"Bearer {token}"} if token else {})


def samples():
    text = scrape().content.decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_metrics_show_what_the_scenario_did(tenant, settings):
    settings.ZEROMEMORY_METRICS_TOKEN = TOKEN
    with FakeLLM() as server:
        use_fake_llm(settings, server)
        ingest_entity(tenant, n=12)  # alice's memories: 17 to 6 days old; u1's newest is today
        run = reflection_run_now(scope=ReflectionScope(tenant.id, "u1", "alice", "global"), trigger="cli").run
    old = services.memories_ingest(tenant_id=tenant.id, items=[services.MemoryInput(
        content="an old unimportant note", user_id="u2", importance=0.1,
        created_at=timezone.now() - timedelta(days=400))]).ids[0]
    services.memories_ingest(tenant_id=tenant.id, items=[services.MemoryInput(
        content="a note from yesterday", user_id="u3", created_at=timezone.now() - timedelta(hours=72))])
    lifecycle = lifecycle_run_now(tenant_id=tenant.id, trigger="cli").run
    queued_before = redis_client().llen(CELERY_QUEUE)
    for _ in range(3):  # no worker runs in this test: the messages wait in the broker
        celery_app.send_task("zeromem.tests.never_consumed", queue=CELERY_QUEUE)
    try:
        found = samples()
    finally:
        redis_client().ltrim(CELERY_QUEUE, 3, -1)  # kombu LPUSHes, so ours are the first three

    def value(name, **labels):
        return found[(name, tuple(sorted(labels.items())))]

    assert Memory.objects.get(id=old).state == "archived" and lifecycle.archived >= 1
    assert value("zeromem_prune_total", tenant="acme") == lifecycle.archived + lifecycle.deleted
    assert value("zeromem_consolidation_lag_hours", tenant="acme", user_id="u3") == pytest.approx(24, abs=0.1)
    assert ("zeromem_consolidation_lag_hours", (("tenant", "acme"), ("user_id", "u2"))) not in found  # archived
    insights, calls = len(run.result["insights"]), run.result["calls_done"]
    assert value("zeromem_facts_per_batch", tenant="acme") == pytest.approx(insights / calls, abs=1e-3)
    semantic = Memory.objects.filter(tenant=tenant, user_id="u1", memory_type="semantic", state="raw").count()
    assert value("zeromem_semantic_store_size", tenant="acme", user_id="u1") == semantic > 0
    assert value("zeromem_runs_total", kind="reflection", status="succeeded") == 1
    assert value("zeromem_runs_total", kind="lifecycle", status="succeeded") == 1
    usage = LlmUsage.objects.get(tenant=tenant)
    assert value("zeromem_llm_calls_total", tenant="acme") == usage.calls == 1
    assert value("zeromem_llm_tokens_total", tenant="acme") == usage.prompt_tokens + usage.completion_tokens
    assert value("zeromem_llm_cost_usd_total", tenant="acme") == 0.0  # the fake model has no price
    assert value("zeromem_queue_depth", queue="celery") == queued_before + 3
    assert ConsolidationRun.objects.count() == 2


def test_metrics_need_the_token(db, settings):
    settings.ZEROMEMORY_METRICS_TOKEN = TOKEN
    assert scrape(None).status_code == 401
    assert scrape("wrong").status_code == 401
    assert scrape().status_code == 200
    settings.ZEROMEMORY_METRICS_TOKEN = ""
    assert scrape().status_code == 403
