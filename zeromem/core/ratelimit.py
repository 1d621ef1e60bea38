"""Per-key rate limiting: a fixed-window counter per API key in Redis, shared by every web process and machine.

Past the limit a request gets 429 with Retry-After (seconds until the window ends). If Redis cannot be reached
the request is let through and the problem logged: the limiter must never take the API down with it.
"""

from __future__ import annotations

import logging
import math
import time

from django.conf import settings

from zeromem.core.events import redis_client

logger = logging.getLogger(__name__)


class RateLimited(Exception):
    def __init__(self, retry_after: int) -> None:
        super().__init__(f"rate limit exceeded; retry in {retry_after} s")
        self.retry_after = retry_after


def rate_limit_check(*, key_prefix: str, now: float | None = None) -> None:
    """Count one request for the key; RateLimited past ZEROMEMORY_RATE_LIMIT_REQUESTS per window (0 = off)."""
    limit, window = settings.ZEROMEMORY_RATE_LIMIT_REQUESTS, settings.ZEROMEMORY_RATE_LIMIT_WINDOW_SECONDS
    if limit <= 0:
        return
    now = time.time() if now is None else now
    slot = int(now // window)
    name = f"zeromem:ratelimit:{key_prefix}:{slot}"
    try:
        pipe = redis_client().pipeline(transaction=True)
        pipe.incr(name)
        pipe.expire(name, int(window) + 1)
        count = int(pipe.execute()[0])
    except Exception:
        logger.exception("rate limiter unavailable; request let through")
        return
    if count > limit:
        raise RateLimited(retry_after=max(1, math.ceil((slot + 1) * window - now)))
