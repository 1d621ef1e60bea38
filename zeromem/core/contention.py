"""Write paths run again, whole, when a concurrent write got in the way: PostgreSQL aborted the transaction (a
deadlock or a serialization failure), or what was read before the transaction changed before it wrote
(`StaleRead`). The caller sees one answer; only when every attempt was beaten does it get `WriteContention`
(the API answers 503 with Retry-After, never a 500).

Only the outermost call retries: inside a caller's transaction everything it did is already rolled back, so the
error goes up to whoever owns that transaction.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import DatabaseError, connection
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

logger = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

ATTEMPTS = 5
# deadlock_detected, serialization_failure: the transaction was aborted whole and can simply run again.
RETRYABLE_SQLSTATES = frozenset({"40P01", "40001"})


class StaleRead(Exception):
    """Raised inside a transaction when rows read before it changed meanwhile; the whole write runs again."""


class WriteContention(Exception):
    """Concurrent writes beat every attempt of this one; nothing of it was written."""


def is_contention(exc: BaseException) -> bool:
    if isinstance(exc, StaleRead):
        return True
    return isinstance(exc, DatabaseError) and getattr(exc.__cause__, "sqlstate", None) in RETRYABLE_SQLSTATES


def retry_on_contention(write: Callable[P, R]) -> Callable[P, R]:
    """Run `write` (which opens its own transactions) again on contention, up to ATTEMPTS times with a short
    jittered backoff (the jitter keeps two retried writers from meeting again)."""

    @functools.wraps(write)
    def retried(*args: P.args, **kwargs: P.kwargs) -> R:
        if connection.in_atomic_block:
            return write(*args, **kwargs)
        retrying = Retrying(retry=retry_if_exception(is_contention), stop=stop_after_attempt(ATTEMPTS),
                            wait=wait_exponential_jitter(multiplier=0.02, max=0.5, jitter=0.05), reraise=True,
                            before_sleep=_log_retry)
        try:
            return retrying(write, *args, **kwargs)
        except (StaleRead, DatabaseError) as exc:
            if is_contention(exc):
                raise WriteContention(f"{write.__name__}: concurrent writes won {ATTEMPTS} times; try again") from exc
            raise

    return retried


def _log_retry(state: RetryCallState) -> None:
    """Contention is answered, not hidden: each retry is a warning an operator can count."""
    error = state.outcome.exception() if state.outcome else None
    logger.warning("%s: attempt %d lost to a concurrent write (%s); running it again",
                   getattr(state.fn, "__name__", "write"), state.attempt_number, str(error).partition("\n")[0])
