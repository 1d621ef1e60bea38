"""Webhooks (signed, retried, never for a rolled-back change), session end (once), feedback, access recording."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import transaction

from consolidation.models import ConsolidationRun, WebhookDelivery, WebhookEndpoint
from tests.factories import ingest_entity
from zeromem.core import selectors
from zeromem.core.access import access_flush
from zeromem.core.domain.policy import SearchPolicy
from zeromem.core.events import event_emit
from zeromem.models import Memory

pytestmark = [pytest.mark.lifecycle, pytest.mark.usefixtures("hash_embedder"),
              pytest.mark.django_db(transaction=True)]


class Receiver:
    """A webhook receiver on 127.0.0.1 answering the scripted status codes in turn (then 200)."""

    def __init__(self, statuses):
        self.statuses, self.requests = list(statuses), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.requests.append((dict(self.headers), body))
                self.send_response(outer.statuses.pop(0) if outer.statuses else 200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    server = Receiver([500])
    yield server
    server.close()


def test_signed_deliveries_are_retried_after_a_500(tenant, receiver, eager, settings):
    settings.ZEROMEMORY_WEBHOOK_BACKOFF_SECONDS = 0
    endpoint = WebhookEndpoint.objects.create(tenant=tenant, url=receiver.url, event_types=["memory.deleted"])
    WebhookEndpoint.objects.create(tenant=tenant, url=receiver.url, event_types=["profile.updated"])  # not this
    with transaction.atomic():
        payload = event_emit(event="memory.deleted", tenant_id=tenant.id, data={"memory_ids": ["x"]})
    assert len(receiver.requests) == 2  # a 500, then the retry
    for headers, body in receiver.requests:
        expected = hmac.new(endpoint.secret.encode(), headers["X-Zeromem-Timestamp"].encode() + b"." + body,
                            hashlib.sha256).hexdigest()
        assert headers["X-Zeromem-Signature"] == f"sha256={expected}"
        assert headers["X-Zeromem-Event"] == "memory.deleted" and json.loads(body)["id"] == payload["id"]
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("succeeded", 2, 200)


def test_no_delivery_for_a_rolled_back_change(tenant, receiver, eager):
    WebhookEndpoint.objects.create(tenant=tenant, url=receiver.url)
    with pytest.raises(RuntimeError), transaction.atomic():
        event_emit(event="memory.merged", tenant_id=tenant.id, data={})
        raise RuntimeError("the run failed")
    assert receiver.requests == [] and not WebhookDelivery.objects.exists()


def test_deliveries_commit_with_the_change_and_are_sent_only_after_it(tenant, receiver, eager):
    """An outbox: the delivery row is written in the emitting transaction (a crash right after commit loses
    nothing), and no request leaves before the commit."""
    WebhookEndpoint.objects.create(tenant=tenant, url=receiver.url)
    with transaction.atomic():
        event_emit(event="memory.merged", tenant_id=tenant.id, data={})
        assert WebhookDelivery.objects.filter(status="pending").count() == 1
        assert receiver.requests == []
    assert len(receiver.requests) == 2  # a 500, then the retry, after commit


def test_deliveries_are_written_once_per_event_and_subscribed_endpoint(tenant, other_tenant):
    from consolidation.webhooks import webhook_deliveries_create

    every = WebhookEndpoint.objects.create(tenant=tenant, url="http://127.0.0.1:9/every")
    merges = WebhookEndpoint.objects.create(tenant=tenant, url="http://127.0.0.1:9/merges",
                                            event_types=["memory.merged"])
    WebhookEndpoint.objects.create(tenant=other_tenant, url="http://127.0.0.1:9/elsewhere")
    WebhookEndpoint.objects.create(tenant=tenant, url="http://127.0.0.1:9/off", active=False)
    payloads = [{"id": str(uuid.UUID(int=n)), "event": event, "tenant": tenant.id, "data": {}}
                for n, event in ((1, "memory.merged"), (2, "memory.deleted"))]
    created = webhook_deliveries_create(payloads=payloads)
    assert sorted(WebhookDelivery.objects.filter(id__in=created).values_list("endpoint_id", "event_type")) == sorted(
        [(every.id, "memory.merged"), (every.id, "memory.deleted"), (merges.id, "memory.merged")])
    assert WebhookDelivery.objects.get(endpoint=merges).payload == payloads[0]
    assert webhook_deliveries_create(payloads=payloads) == []  # already written: nothing twice
    assert WebhookDelivery.objects.count() == 3


def test_a_dead_endpoint_never_blocks_a_job(tenant, eager, settings):
    settings.ZEROMEMORY_WEBHOOK_BACKOFF_SECONDS = 0
    settings.ZEROMEMORY_WEBHOOK_TIMEOUT_SECONDS = 0.5
    WebhookEndpoint.objects.create(tenant=tenant, url="http://127.0.0.1:9/nothing-listens-here")
    from consolidation.jobs.clustering import clustering_run_now

    ingest_entity(tenant, n=4, texts=["Alice: The billing-api Redis cache hit 512 MB again."])
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True).run
    assert run.status == "succeeded"
    failed = WebhookDelivery.objects.filter(status="failed")
    assert failed.exists() and all(d.attempts == settings.ZEROMEMORY_WEBHOOK_MAX_ATTEMPTS for d in failed)


def test_session_end_runs_one_consolidation_pass_however_often_it_is_called(tenant, api, eager):
    ingest_entity(tenant, n=12)
    first = api.post("/sessions/now-0/end", {"user_id": "u1"})
    second = api.post("/sessions/now-0/end", {"user_id": "u1"})
    assert (first.status_code, first.json()["queued"]) == (202, True)
    assert (second.status_code, second.json()["queued"]) == (202, False)
    runs = ConsolidationRun.objects.filter(trigger="session_end")
    assert sorted(runs.values_list("kind", "status")) == [("clustering", "succeeded"), ("reflection", "succeeded")]
    assert api.post("/sessions/now-0/end", {}).status_code == 422


def test_feedback_moves_the_reward_within_bounds(tenant, api, other_api):
    memory = ingest_entity(tenant, n=1)[0]
    rewards = [api.post(f"/memories/{memory.id}/feedback", {"useful": True}).json()["reward_score"]
               for _ in range(3)]
    assert rewards == pytest.approx([0.2, 0.36, 0.488])
    for _ in range(40):
        last = api.post(f"/memories/{memory.id}/feedback", {"useful": False}).json()["reward_score"]
    assert -1.0 <= last < -0.99
    assert other_api.post(f"/memories/{memory.id}/feedback", {"useful": True}).status_code == 404
    assert api.post(f"/memories/{memory.id}/feedback", {"useful": "very"}).status_code == 422


def test_the_reward_is_answered_without_float_noise_and_stored_in_full(tenant, api):
    memory = ingest_entity(tenant, n=1)[0]
    api.post(f"/memories/{memory.id}/feedback", {"useful": True})
    response = api.post(f"/memories/{memory.id}/feedback", {"useful": False})  # 0.2 + 0.2 * (-1 - 0.2)
    assert response.json()["reward_score"] == -0.04 and b"-0.04}" in response.content
    memory.refresh_from_db()
    assert memory.reward_score == pytest.approx(-0.04) and memory.reward_score != -0.04


def test_reads_record_access_and_internal_searches_do_not(tenant, api):
    access_flush()  # start from an empty buffer
    memories = ingest_entity(tenant, n=3)
    selectors.memories_search(scope=selectors.MemoryFilter(tenant_id=tenant.id), query="hiking Alps",  # internal
                              policy=SearchPolicy())
    assert access_flush() == 0
    api.get(f"/memories/{memories[0].id}")
    api.get(f"/memories/{memories[0].id}")
    hits = api.post("/search", {"query": "green tea coffee", "user_id": "u1", "top_k": 1}).json()["results"]
    assert access_flush() == 2
    first = Memory.objects.get(id=memories[0].id)
    assert first.access_count == 2 + (hits[0]["memory"]["id"] == str(first.id)) and first.last_accessed_at
    assert access_flush() == 0  # flushed once
