"""Plain Django views outside the API: the health check and the Prometheus scrape endpoint."""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from zeromem.api.metrics import DatabaseCollector
from zeromem.core.events import redis_client

logger = logging.getLogger(__name__)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """`Authorization: Bearer <ZEROMEMORY_METRICS_TOKEN>`; 401 without it, 403 when metrics are not enabled."""
    token = settings.ZEROMEMORY_METRICS_TOKEN
    if not token:
        return HttpResponse("metrics are disabled: set ZEROMEMORY_METRICS_TOKEN\n", status=403)
    presented = request.headers.get("Authorization", "").removeprefix("Bearer ")
    if not hmac.compare_digest(presented.encode(), token.encode()):
        return HttpResponse("a valid 'Authorization: Bearer <metrics token>' is required\n", status=401)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """No key: for load balancers and container healthchecks. 200 when the database and the broker both answer,
    503 (naming the one that does not) otherwise."""
    checks = {"database": _answers(_database_ping), "broker": _answers(lambda: redis_client().ping())}
    healthy = all(checks.values())
    return JsonResponse({"status": "ok" if healthy else "unavailable", **checks}, status=200 if healthy else 503)


def _database_ping() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _answers(ping: Callable[[], object]) -> bool:
    try:
        ping()
    except Exception:
        logger.warning("health check failed", exc_info=True)
        return False
    return True
