"""Plain Django views outside the API: the Prometheus scrape endpoint."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from zeromem.api.metrics import DatabaseCollector


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
