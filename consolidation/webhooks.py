"""Webhooks: per-tenant endpoints subscribed to event types, fed from the same events as the Redis stream. The
deliveries are written in the transaction that emits the events (a rolled-back change is never announced, and a
crash right after commit loses no delivery); their tasks are sent after commit.

Each event becomes one WebhookDelivery row per subscribed endpoint and a Celery task that POSTs it, signed:
`X-Zeromem-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" with the endpoint's secret>` and
`X-Zeromem-Timestamp` (receivers should reject old timestamps to stop replays). Anything but a 2xx is retried with
exponential backoff up to ZEROMEMORY_WEBHOOK_MAX_ATTEMPTS; every attempt is logged on the delivery row (admin).
A failing or slow endpoint only ever occupies its own delivery task: jobs never wait on it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from typing import Any

import httpx
from django.conf import settings
from django.db import connection
from django.dispatch import receiver
from django.utils import timezone

from consolidation.models import DeliveryStatus, WebhookDelivery, WebhookEndpoint
from zeromem.core.events import memory_events_recorded
from zeromem.core.tasks import enqueue_on_commit

WEBHOOK_DELIVER_TASK = "consolidation.webhook_deliver"  # registered in consolidation.tasks

logger = logging.getLogger(__name__)


class DeliveryFailed(Exception):
    """The endpoint did not answer 2xx; the task retries later."""


def webhook_signature(*, secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def webhook_deliveries_create(*, payloads: list[dict[str, Any]]) -> list[int]:
    """One delivery per event and active endpoint of its tenant subscribed to its type (all types when empty), in
    one statement; the ids of those created (an event already delivered to an endpoint is left as it is). The
    endpoints are read once per tenant of `payloads` (a job's chunk commits hundreds of events at a time)."""
    endpoints = {tenant: list(WebhookEndpoint.objects.filter(tenant_id=tenant, active=True))
                 for tenant in {p["tenant"] for p in payloads}}
    rows = [(endpoint.id, payload["id"], payload["event"], json.dumps(payload, default=str))
            for payload in payloads for endpoint in endpoints[payload["tenant"]]
            if not endpoint.event_types or payload["event"] in endpoint.event_types]
    if not rows:
        return []
    endpoint_ids, event_ids, event_types, bodies = (list(column) for column in zip(*rows, strict=True))
    with connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {WebhookDelivery._meta.db_table}
                       (endpoint_id, event_id, event_type, payload, status, attempts, last_error, created_at)
                SELECT endpoint_id, event_id, event_type, payload, %s, 0, '', %s
                  FROM unnest(%s::bigint[], %s::uuid[], %s::text[], %s::jsonb[])
                       AS new (endpoint_id, event_id, event_type, payload)
                    ON CONFLICT ON CONSTRAINT webhook_delivery_once DO NOTHING
             RETURNING id""",
            [DeliveryStatus.PENDING, timezone.now(), endpoint_ids, event_ids, event_types, bodies])
        return [row[0] for row in cursor.fetchall()]


def webhook_deliver(*, delivery_id: int) -> bool:
    """POST one delivery; True when delivered (or already delivered), DeliveryFailed otherwise."""
    delivery = WebhookDelivery.objects.select_related("endpoint").get(id=delivery_id)
    if delivery.status == DeliveryStatus.SUCCEEDED:
        return True
    body = json.dumps(delivery.payload, separators=(",", ":")).encode()
    timestamp = str(int(time.time()))
    headers = {"Content-Type": "application/json", "X-Zeromem-Event": delivery.event_type,
               "X-Zeromem-Delivery": str(delivery.id), "X-Zeromem-Timestamp": timestamp,
               "X-Zeromem-Signature": webhook_signature(secret=delivery.endpoint.secret, timestamp=timestamp,
                                                        body=body)}
    try:
        response = httpx.post(delivery.endpoint.url, content=body, headers=headers,
                              timeout=settings.ZEROMEMORY_WEBHOOK_TIMEOUT_SECONDS)
        code, error = response.status_code, "" if response.is_success else response.text[:500]
    except httpx.HTTPError as exc:
        code, error = None, f"{type(exc).__name__}: {exc}"[:500]
    return _record_attempt(delivery, code, error)


def _record_attempt(delivery: WebhookDelivery, code: int | None, error: str) -> bool:
    delivery.attempts += 1
    delivery.last_status_code, delivery.last_error = code, error
    ok = code is not None and 200 <= code < 300
    if ok:
        delivery.status, delivery.delivered_at = DeliveryStatus.SUCCEEDED, timezone.now()
    elif delivery.attempts >= settings.ZEROMEMORY_WEBHOOK_MAX_ATTEMPTS:
        delivery.status = DeliveryStatus.FAILED
    delivery.save()
    if not ok and delivery.status != DeliveryStatus.FAILED:
        raise DeliveryFailed(f"delivery {delivery.id}: {code or error}")
    return ok


@receiver(memory_events_recorded, dispatch_uid="zeromem-webhooks")
def _on_events(sender: Any, payloads: list[dict[str, Any]], **kwargs: Any) -> None:
    """In the transaction that emits the events: their deliveries commit with the change (a job's chunk reads the
    endpoints inside its own transaction, no second one), and their tasks are sent after commit."""
    for delivery_id in webhook_deliveries_create(payloads=payloads):
        enqueue_on_commit(WEBHOOK_DELIVER_TASK, delivery_id=delivery_id)
