"""The API's one error shape, `{"error": {"code": "...", "message": "...", "details": [...]}}`, with the matching
status, for every answer that is not a success: a refused request, a service saying no, an unknown path, a wrong
method, a crash.

Routes raise `ApiError` (or a subclass); exceptions from services, ninja and Django are turned into one through
TRANSLATIONS below; anything else is a 500 that is logged with its traceback and answered without it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.http.response import HttpResponseBase
from django.urls import URLPattern, URLResolver
from django.views import defaults
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError, ValidationErrorContext
from pydantic import BaseModel

from consolidation.selectors import ScopeAmbiguous, ScopeNotFound
from consolidation.triggers import RunBusy
from zeromem.core.contention import WriteContention
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.core.ratelimit import RateLimited
from zeromem.core.selectors import InvalidCursor
from zeromem.core.services import IdempotencyConflict
from zeromem.models import Memory

logger = logging.getLogger(__name__)

RUN_BUSY_RETRY_SECONDS = 30


class ApiError(Exception):
    """An answer in the error shape: `code` is for programs (stable), `message` for people; `headers` go on the
    response (Retry-After, Allow)."""

    def __init__(self, status: int, code: str, message: str, *, details: list[Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details or []
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class BadRequest(ApiError):
    def __init__(self, message: str) -> None:
        super().__init__(400, "bad_request", message)


class NotFound(ApiError):
    def __init__(self, message: str) -> None:
        super().__init__(404, "not_found", message)


class Conflict(ApiError):
    def __init__(self, message: str) -> None:
        super().__init__(409, "conflict", message)


# Codes by status, for ninja's own HttpErrors (an unparseable body is its 400) and Django's error views.
CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
         409: "conflict", 413: "too_large", 422: "invalid_input", 500: "internal_error"}
# Django's own error views, answered outside the API's prefix, and what the API says instead under it.
DJANGO_PAGES: dict[int, Callable[..., HttpResponse]] = {
    400: defaults.bad_request, 403: defaults.permission_denied, 404: defaults.page_not_found,
    500: defaults.server_error}
MESSAGES = {400: "the request could not be understood", 403: "not allowed",
            404: "no such endpoint (see the OpenAPI document at …/docs)"}


def as_sent(model: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """A location inside ninja's model of a view's parameters, as a path in what the client sent: a flattened
    query or path field by its own name, and without the view's argument that holds a whole body or query schema
    (the client never saw that name)."""
    if loc in model.__ninja_flatten_map_reverse__:
        return tuple(model.__ninja_flatten_map_reverse__[loc])
    if loc and loc[0] == getattr(model, "__read_from_single_attr__", None):
        return loc[1:]
    field = model.model_fields.get(loc[0]) if loc else None
    if field is not None and isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
        return loc[1:]
    return loc


def validation_details(exc: ValidationError) -> list[dict[str, Any]]:
    return [{"loc": list(e.get("loc", [])), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors]


def validation_message(exc: ValidationError) -> str:
    """The first problem, naming the field as the request spells it (`memories[1].metadata: ...`); the others
    are counted, and all of them are in the details."""
    if not exc.errors:
        return "the request did not validate"
    first = exc.errors[0]
    problem = str(first.get("msg", "")).removeprefix("Value error, ")
    more = f" (and {len(exc.errors) - 1} more problem(s), in details)" if len(exc.errors) > 1 else ""
    return f"{field_as_sent(list(first.get('loc', [])))}: {problem}{more}"


def field_as_sent(loc: list[Any]) -> str:
    """`["body", "memories", 0, "metadata"]` -> `memories[0].metadata`: the location (already as the client sent
    it, `ErrorShapedApi`) without its source."""
    source, path = (loc[0], loc[1:]) if loc else ("body", [])
    if not path:
        return f"the request {source}"
    spelled = str(path[0])
    for part in path[1:]:
        spelled += f"[{part}]" if isinstance(part, int) else f".{part}"
    return spelled


# Every exception from below the API that has an answer other than 500, in one place. Looked up along the
# exception's class hierarchy, so a subclass answers like its parent unless it has a row of its own.
TRANSLATIONS: dict[type[Exception], Callable[[Any], ApiError]] = {
    ValidationError: lambda e: ApiError(422, "invalid_input", validation_message(e), details=validation_details(e)),
    AuthenticationError: lambda e: ApiError(401, "unauthorized", "a valid 'Authorization: Bearer <key>' is required"),
    HttpError: lambda e: ApiError(e.status_code, CODES.get(e.status_code, "error"), str(e)),
    Http404: lambda e: NotFound("no such resource"),
    RequestDataTooBig: lambda e: ApiError(413, "too_large", "the request body is larger than the server accepts"),
    RateLimited: lambda e: ApiError(429, "rate_limited", str(e), headers={"Retry-After": str(e.retry_after)}),
    IdempotencyConflict: lambda e: ApiError(409, "idempotency_conflict", str(e)),
    InvalidCursor: lambda e: ApiError(400, "invalid_cursor", str(e)),
    Memory.DoesNotExist: lambda e: NotFound("no such memory"),
    ScopeNotFound: lambda e: NotFound(str(e)),
    ScopeAmbiguous: lambda e: ApiError(400, "ambiguous_entity", str(e)),
    RunBusy: lambda e: ApiError(409, "run_in_progress", str(e), details=[{"run_id": str(e.run.id)}],
                                headers={"Retry-After": str(RUN_BUSY_RETRY_SECONDS)}),
    # Another worker moved the memory first (the conditional UPDATE found it in another state).
    TransitionRefused: lambda e: Conflict(str(e)),
    # Concurrent writes of the same user beat every retry of this one (zeromem.core.contention): nothing written.
    WriteContention: lambda e: ApiError(503, "busy", str(e), headers={"Retry-After": "1"}),
}


def as_api_error(exc: Exception) -> ApiError:
    if isinstance(exc, ApiError):
        return exc
    for cls in type(exc).__mro__:
        if cls in TRANSLATIONS:
            return TRANSLATIONS[cls](exc)
    return internal_error()


def internal_error() -> ApiError:
    return ApiError(500, "internal_error", "the server hit an unexpected error; it has been logged")


class ErrorShapedApi(NinjaAPI):
    """A NinjaAPI whose every non-success answer is in the one error shape: one exception handler (for
    Exception, so ninja's own defaults for HttpError, ValidationError and Http404 never answer), and its 405s,
    which ninja's path views answer as plain text without consulting any handler, rewritten."""

    def set_default_exception_handlers(self) -> None:
        self.add_exception_handler(Exception, self.on_error)

    def validation_error_from_error_contexts(self, error_contexts: list[ValidationErrorContext[Any]]
                                             ) -> ValidationError:
        """ninja's errors, each `loc` naming the field as the client sent it: `["body", "memories", 0, "content"]`,
        `["query", "page_size"]`, `["path", "memory_id"]` (ninja's own put the view's argument in: `["body",
        "payload", …]`)."""
        errors = super().validation_error_from_error_contexts(error_contexts).errors
        locs = [(context.model, tuple(e["loc"])) for context in error_contexts
                for e in context.pydantic_validation_error.errors(include_url=False)]
        return ValidationError([{**error, "loc": (model.__ninja_param_source__, *as_sent(model, loc))}
                                for error, (model, loc) in zip(errors, locs, strict=True)])

    def on_error(self, request: HttpRequest, exc: Exception | type[Exception]) -> HttpResponse:
        instance = exc() if isinstance(exc, type) else exc  # ninja's handler type admits a class
        error = as_api_error(instance)
        if error.status >= 500:
            logger.error("unhandled error in %s %s", request.method, request.path, exc_info=instance)
        return self.error_response(request, error)

    def error_response(self, request: HttpRequest, error: ApiError) -> HttpResponse:
        response = self.create_response(request, error.body(), status=error.status)
        for name, value in error.headers.items():
            response[name] = value
        return response

    @property
    def urls(self) -> tuple[list[URLResolver | URLPattern], str, str]:
        patterns, app_name, namespace = super().urls
        return [self._json_405(p) if isinstance(p, URLPattern) else p for p in patterns], app_name, namespace

    def _json_405(self, pattern: URLPattern) -> URLPattern:
        view = pattern.callback

        @functools.wraps(view)  # keeps csrf_exempt and the name the URL pattern is known by
        def answer(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            response: HttpResponseBase = view(request, *args, **kwargs)
            if not isinstance(response, HttpResponseNotAllowed):
                return response
            allowed = response["Allow"]
            return self.error_response(request, ApiError(
                405, "method_not_allowed", f"{request.method} is not allowed here; allowed: {allowed}",
                headers={"Allow": allowed}))

        return URLPattern(pattern.pattern, answer, pattern.default_args, pattern.name)

    def django_error_handler(self, status: int) -> Callable[..., HttpResponse]:
        """A `handler404`-style view for the URLconf: the error shape under this API's prefix (an unknown path,
        the bare root), Django's own page everywhere else."""
        page = DJANGO_PAGES[status]

        def handler(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
            if not request.path.startswith(self.get_root_path({})):
                return page(request) if exception is None else page(request, exception)
            error = internal_error() if status == 500 else ApiError(status, CODES[status], MESSAGES[status])
            return self.error_response(request, error)

        return handler

