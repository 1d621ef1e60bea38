"""Typed errors, one per kind of answer a program handles differently, all read from the server's one error shape
`{"error": {"code", "message", "details"}}`.

`code` is the server's stable code (`not_found`, `invalid_input`, `rate_limited`, `idempotency_conflict`,
`run_in_progress`, ...); `details` the list it sent (for `invalid_input`: one `{loc, msg, type}` per problem).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any


class ZeromemError(Exception):
    """Every error this client raises. `status` is the HTTP status (None when no answer came back);
    `retry_after` the seconds the server asked to wait (429, and 409 run_in_progress), else None."""

    def __init__(self, message: str, *, status: int | None = None, code: str = "error",
                 details: list[Any] | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.details: list[Any] = details if details is not None else []
        self.retry_after = retry_after

    def __str__(self) -> str:
        prefix = f"{self.status} {self.code}" if self.status is not None else self.code
        return f"{prefix}: {self.message}"


class AuthenticationError(ZeromemError):
    """401: no key, or a key the server does not know (revoked, mistyped)."""


class NotFoundError(ZeromemError):
    """404: no such memory, run, profile or entity in the key's tenant (another tenant's ids answer 404 too)."""


class ValidationError(ZeromemError):
    """400, 413 or 422: the server refused the request as sent. For 422 `details` has one `{loc, msg, type}` per
    problem (`field_errors` maps each field to its message)."""

    @property
    def field_errors(self) -> dict[str, str]:
        return {".".join(str(p) for p in d.get("loc", [])[-1:]): str(d.get("msg", ""))
                for d in self.details if isinstance(d, Mapping)}


class ConflictError(ZeromemError):
    """409: an Idempotency-Key reused with another body (`idempotency_conflict`), a correction that collides with
    stored content, or the user's memories held by a clustering run (`run_in_progress`, with `retry_after`)."""


class RateLimitError(ZeromemError):
    """429: past the key's request limit; `retry_after` says when the window ends."""


class ServerError(ZeromemError):
    """5xx: the server failed (503 from /reflect: the LLM was down or the budget spent)."""


class APIConnectionError(ZeromemError, builtins.ConnectionError):
    """No answer: the connection could not be made, or dropped before the answer arrived. `request_sent` is False
    when the request never left (the server cannot have acted on it)."""

    def __init__(self, message: str, *, request_sent: bool = True, code: str = "connection_error") -> None:
        super().__init__(message, code=code)
        self.request_sent = request_sent


class APITimeoutError(APIConnectionError):
    """No answer within the client's timeout."""

    def __init__(self, message: str, *, request_sent: bool = True) -> None:
        super().__init__(message, request_sent=request_sent, code="timeout")


def error_class(status: int) -> type[ZeromemError]:
    if status == 401:
        return AuthenticationError
    if status == 404:
        return NotFoundError
    if status in (400, 413, 422):
        return ValidationError
    if status == 409:
        return ConflictError
    if status == 429:
        return RateLimitError
    if status >= 500:
        return ServerError
    return ZeromemError


def error_from_response(status: int, headers: Mapping[str, str], content: bytes) -> ZeromemError:
    """The typed error for a non-success answer. A body that is not the error shape (a proxy's HTML page) still
    gives the right class, with its first characters as the message."""
    code, message = f"http_{status}", content[:200].decode("utf-8", "replace")
    details: list[Any] = []
    try:
        body = json.loads(content)
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code = str(error.get("code") or code)
        message = str(error.get("message") or message)
        details = error["details"] if isinstance(error.get("details"), list) else []
    return error_class(status)(message, status=status, code=code, details=details,
                               retry_after=retry_after_seconds(headers.get("retry-after")))


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """`Retry-After` in seconds: a number of seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
