"""HTTP API under /api/v1/public/memory/v2/ (django-ninja: validation and OpenAPI at …/docs).

Views parse input, call one service or selector, format output. One error shape everywhere:
`{"error": {"code": "...", "message": "...", "details": [...]}}` with the matching status code.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import IntegrityError
from django.http import HttpRequest, HttpResponse
from django.utils import timezone as dj_timezone
from ninja import Field, NinjaAPI, Query, Router, Schema, Status
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer
from pydantic import ConfigDict, field_validator, model_validator

from consolidation.corrections.erasure import memories_erase, memory_correct, scope_erase
from consolidation.corrections.feedback import memory_feedback
from consolidation.jobs.reflection import reflection_answer
from consolidation.models import ACTIVE_STATUSES, ConsolidationRun
from consolidation.selectors import ScopeAmbiguous, ScopeNotFound, reflection_scope_resolve
from consolidation.triggers import RunBusy, reflection_request, session_end
from profiles.selectors import context_build, profile_get
from zeromem.core import selectors, services
from zeromem.core.access import access_record
from zeromem.core.ratelimit import RateLimited, rate_limit_check
from zeromem.core.selectors import MemoryFilter
from zeromem.core.tasks import enqueue_on_commit, memories_embed_task
from zeromem.models import ApiKey, Memory


class ApiKeyAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        key = selectors.apikey_authenticate(secret=token)
        if key is not None:
            rate_limit_check(key_prefix=key.prefix)
            services.apikey_touch(key=key)
        return key


api = NinjaAPI(title="zeromem", version="2", urls_namespace="memory_v2", auth=ApiKeyAuth())
router = Router()


def error_response(request: HttpRequest, status: int, code: str, message: str,
                   details: list[Any] | None = None) -> HttpResponse:
    return api.create_response(request, {"error": {"code": code, "message": message, "details": details or []}},
                               status=status)


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    details = [{"loc": list(e.get("loc", [])), "msg": e.get("msg", ""), "type": e.get("type", "")}
               for e in exc.errors]
    return error_response(request, 422, "invalid_input", "the request did not validate", details)


@api.exception_handler(AuthenticationError)
def on_auth_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error_response(request, 401, "unauthorized", "a valid 'Authorization: Bearer <key>' is required")


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    codes = {400: "bad_request", 404: "not_found", 409: "conflict", 413: "too_large", 422: "invalid_input"}
    return error_response(request, exc.status_code, codes.get(exc.status_code, "error"), str(exc))


@api.exception_handler(services.IdempotencyConflict)
def on_idempotency_conflict(request: HttpRequest, exc: services.IdempotencyConflict) -> HttpResponse:
    return error_response(request, 409, "idempotency_conflict", str(exc))


@api.exception_handler(RequestDataTooBig)
def on_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return error_response(request, 413, "too_large", "the request body is larger than the server accepts")


@api.exception_handler(RateLimited)
def on_rate_limited(request: HttpRequest, exc: RateLimited) -> HttpResponse:
    response = error_response(request, 429, "rate_limited", str(exc))
    response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(ScopeNotFound)
def on_scope_not_found(request: HttpRequest, exc: ScopeNotFound) -> HttpResponse:
    return error_response(request, 404, "not_found", str(exc))


@api.exception_handler(ScopeAmbiguous)
def on_scope_ambiguous(request: HttpRequest, exc: ScopeAmbiguous) -> HttpResponse:
    return error_response(request, 400, "ambiguous_entity", str(exc))


@api.exception_handler(RunBusy)
def on_run_busy(request: HttpRequest, exc: RunBusy) -> HttpResponse:
    response = error_response(request, 409, "run_in_progress", str(exc), [{"run_id": str(exc.run.id)}])
    response["Retry-After"] = "30"
    return response


@api.exception_handler(selectors.InvalidCursor)
def on_invalid_cursor(request: HttpRequest, exc: selectors.InvalidCursor) -> HttpResponse:
    return error_response(request, 400, "invalid_cursor", str(exc))


def tenant_id(request: HttpRequest) -> int:
    key: ApiKey = request.auth  # type: ignore[attr-defined]
    return int(key.tenant_id)


# --- schemas -----------------------------------------------------------------------------------------------

Name = Field(..., min_length=1, max_length=200)
OptionalName = Field(None, min_length=1, max_length=200)


def _unstorable(value: Any) -> bool:
    """A NUL character or a lone surrogate (valid JSON, not valid UTF-8) anywhere in the value."""
    if isinstance(value, str):
        if "\x00" in value:
            return True
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_unstorable(k) or _unstorable(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_unstorable(v) for v in value)
    return False


class Strict(Schema):
    """Unknown fields are refused, and so are NUL characters and lone surrogates anywhere (PostgreSQL text and
    jsonb cannot hold them)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def no_nul_anywhere(cls, data: Any) -> Any:
        if _unstorable(data):
            raise ValueError("NUL characters and lone surrogates are not allowed")
        return data


def as_utc(value: datetime | None) -> datetime | None:
    """An aware datetime in UTC (PostgreSQL refuses offsets past ±15:59; naive times are ambiguous)."""
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("a date-time needs a time zone (e.g. 2024-03-01T09:00:00Z)")
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError("date-time out of range") from exc


def checked_content(value: str) -> str:
    if len(value) > settings.ZEROMEMORY_MAX_CONTENT_CHARS:
        raise ValueError(f"content is longer than {settings.ZEROMEMORY_MAX_CONTENT_CHARS} characters")
    if not value.strip():
        raise ValueError("content is blank")
    if "\x00" in value:
        raise ValueError("NUL characters are not allowed")  # PostgreSQL text cannot store them
    return value


class MemoryIn(Strict):
    content: str = Field(..., min_length=1)
    user_id: str = Name
    entity_id: str | None = OptionalName
    namespace: str = Field("global", min_length=1, max_length=100)
    session_id: str | None = OptionalName
    memory_type: Literal["episodic", "working"] = "episodic"
    kind: Literal["observation", "decision", "question", "preference", "outcome", "fact", "meta"] | None = None
    role: str = Field("", max_length=50)
    entities: list[str] | None = Field(None, max_length=100)
    tags: list[str] = Field(default_factory=list, max_length=50)
    window: str | None = OptionalName
    importance: float | None = Field(None, ge=0.0, le=1.0)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None

    @field_validator("content")
    @classmethod
    def content_within_limit(cls, value: str) -> str:
        return checked_content(value)

    @field_validator("created_at")
    @classmethod
    def not_in_the_future(cls, value: datetime | None) -> datetime | None:
        value = as_utc(value)
        if value is not None and value > dj_timezone.now() + timedelta(seconds=settings.ZEROMEMORY_MAX_FUTURE_SECONDS):
            raise ValueError("created_at is too far in the future")
        return value

    @field_validator("entities", "tags")
    @classmethod
    def short_labels(cls, value: list[str] | None) -> list[str] | None:
        if value and any(not item or len(item) > 200 for item in value):
            raise ValueError("each item must be 1–200 characters")
        return value

    @field_validator("content", "user_id", "entity_id", "session_id", "namespace", "role", "window")
    @classmethod
    def no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise ValueError("NUL characters are not allowed")  # PostgreSQL text cannot store them
        return value


class MemoriesIn(Strict):
    memories: list[MemoryIn] = Field(..., min_length=1)

    @field_validator("memories")
    @classmethod
    def batch_within_limit(cls, value: list[MemoryIn]) -> list[MemoryIn]:
        if len(value) > settings.ZEROMEMORY_MAX_BATCH:
            raise ValueError(f"at most {settings.ZEROMEMORY_MAX_BATCH} memories per request")
        return value


class StoredOut(Schema):
    ids: list[uuid.UUID]
    created: int
    deduplicated: int
    embedded: int


class MemoryOut(Schema):
    id: uuid.UUID
    user_id: str
    entity_id: str | None
    namespace: str
    session_id: str | None
    memory_type: str
    state: str
    kind: str
    role: str
    content: str
    entities: list[str]
    tags: list[str]
    window: str | None
    importance: float
    confidence: float
    corroboration_count: int
    metadata: dict[str, Any]
    has_embedding: bool
    created_at: datetime
    updated_at: datetime
    consolidated_at: datetime | None
    archived_at: datetime | None
    superseded_by_id: uuid.UUID | None

    @staticmethod
    def resolve_has_embedding(obj: Memory) -> bool:
        return obj.embedding is not None


class SourceOut(Schema):
    source_memory_id: uuid.UUID
    source_content_hash: str
    deleted: bool
    content: str | None
    state: str | None


class MemoryDetailOut(MemoryOut):
    sources: list[SourceOut]


class PageOut(Schema):
    memories: list[MemoryOut]
    next_cursor: str | None


class ListQuery(Strict):
    user_id: str | None = OptionalName
    entity_id: str | None = OptionalName
    namespace: str | None = None
    memory_type: Literal["episodic", "working", "semantic"] | None = None
    state: Literal["raw", "consolidated", "archived"] | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    cursor: str | None = Field(None, max_length=500)
    limit: int = Field(50, ge=1, le=500)

    @field_validator("created_after", "created_before")
    @classmethod
    def in_utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value)


class SearchIn(Strict):
    query: str = Field(..., min_length=1, max_length=4000)
    user_id: str | None = OptionalName
    entity_id: str | None = OptionalName
    namespace: str | None = None
    memory_types: list[Literal["episodic", "working", "semantic"]] | None = None
    states: list[Literal["raw", "consolidated", "archived"]] = Field(default_factory=lambda: ["raw"])  # type: ignore[arg-type]
    top_k: int = Field(10, ge=1, le=100)


class HitOut(Schema):
    memory: MemoryOut
    score: float
    bm25: float
    cosine: float | None


class SearchOut(Schema):
    results: list[HitOut]


class ProfileQuery(Strict):
    user_id: str = Name
    entity_id: str | None = OptionalName
    namespace: str = "global"


class ProfileOut(Schema):
    user_id: str
    entity_id: str | None
    namespace: str
    preferences: list[dict[str, Any]]
    behaviors: list[dict[str, Any]]
    facts: list[dict[str, Any]]
    summary: str
    version: int
    updated_at: datetime

    @staticmethod
    def resolve_entity_id(obj: Any) -> str | None:
        return obj.entity_id or None


# --- endpoints ---------------------------------------------------------------------------------------------

@router.post("/memories", response={201: StoredOut})
def memories_create(request: HttpRequest, payload: MemoriesIn) -> Status:
    inline = len(payload.memories) <= settings.ZEROMEMORY_INLINE_EMBED_MAX
    idempotency_key = request.headers.get("Idempotency-Key") or None
    if idempotency_key is not None and (len(idempotency_key) > 200 or not idempotency_key.isprintable()):
        raise HttpError(400, "Idempotency-Key must be at most 200 printable characters")
    result = services.memories_ingest(
        tenant_id=tenant_id(request), items=[services.MemoryInput(**m.model_dump()) for m in payload.memories],
        embed=inline, idempotency_key=idempotency_key)
    if not inline and result.created:
        enqueue_on_commit(memories_embed_task.name, memory_ids=[str(i) for i in result.ids])
    return Status(201, result.as_json())


@router.get("/memories", response=PageOut)
def memories_list(request: HttpRequest, filters: Query[ListQuery]) -> dict[str, Any]:
    scope = MemoryFilter(tenant_id=tenant_id(request), user_id=filters.user_id, entity_id=filters.entity_id,
                         namespace=filters.namespace,
                         memory_types=[filters.memory_type] if filters.memory_type else None,
                         states=[filters.state] if filters.state else None,
                         created_after=filters.created_after, created_before=filters.created_before)
    page, next_cursor = selectors.memories_page(scope=scope, cursor=filters.cursor, limit=filters.limit)
    return {"memories": page, "next_cursor": next_cursor}


@router.get("/memories/{memory_id}", response=MemoryDetailOut)
def memories_read(request: HttpRequest, memory_id: uuid.UUID) -> Memory:
    memory = selectors.memory_get(tenant_id=tenant_id(request), memory_id=memory_id)
    if memory is None:
        raise HttpError(404, "no such memory")
    sources = [{"source_memory_id": link.source_memory_id, "source_content_hash": link.source_content_hash,
                "deleted": link.source is None, "content": link.source.content if link.source else None,
                "state": link.source.state if link.source else None}
               for link in selectors.memory_sources(memory=memory)]
    memory.sources = sources  # type: ignore[attr-defined]
    access_record([memory.id])
    return memory


@router.post("/search", response=SearchOut)
def memories_search(request: HttpRequest, payload: SearchIn) -> dict[str, Any]:
    scope = MemoryFilter(tenant_id=tenant_id(request), user_id=payload.user_id, entity_id=payload.entity_id,
                         namespace=payload.namespace, memory_types=payload.memory_types, states=payload.states)
    hits = selectors.memories_search(scope=scope, query=payload.query, top_k=payload.top_k)
    access_record(h.memory.id for h in hits)
    return {"results": [{"memory": h.memory, "score": h.score, "bm25": h.bm25, "cosine": h.cosine}
                        for h in hits]}


@router.get("/profile", response=ProfileOut)
def profile_read(request: HttpRequest, filters: Query[ProfileQuery]) -> Any:
    profile = profile_get(tenant_id=tenant_id(request), user_id=filters.user_id,
                          entity_id=filters.entity_id, namespace=filters.namespace)
    if profile is None:
        raise HttpError(404, "no profile for this user/entity yet")
    return profile


class ReflectIn(Strict):
    entity_id: str | None = OptionalName
    user_id: str | None = OptionalName
    namespace: str = Field("global", min_length=1, max_length=100)
    force: bool = False  # also reflect the current session (the default keeps it for the agent, verbatim)

    @model_validator(mode="after")
    def names_a_scope(self) -> ReflectIn:
        if not self.entity_id and not self.user_id:
            raise ValueError("give entity_id (an entity) or user_id (the user's memories without an entity)")
        return self


class ReflectQuery(Strict):
    async_: bool = Field(False, alias="async")


class ReflectOut(Schema):
    entity_id: str | None
    user_id: str | None = None
    insights: list[str]
    memories_reviewed: int
    new_semantic_memories: int
    profile_updated: bool
    run_id: uuid.UUID
    status: str


class RunAcceptedOut(Schema):
    run_id: uuid.UUID
    status: str


class RunOut(Schema):
    run_id: uuid.UUID
    kind: str
    status: str
    user_id: str
    entity_id: str | None
    namespace: str | None
    trigger: str
    model: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    progress: dict[str, int]
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    error: str
    result: dict[str, Any] | None


class ContextIn(Strict):
    query: str = Field(..., min_length=1, max_length=4000)
    user_id: str = Name
    entity_id: str | None = OptionalName
    namespace: str = Field("global", min_length=1, max_length=100)
    budget_chars: int = Field(2000, ge=100, le=50_000)


class ContextMemoryOut(Schema):
    id: uuid.UUID
    content: str
    memory_type: str
    created_at: datetime
    score: float


class ContextOut(Schema):
    context: str
    chars: int
    budget_chars: int
    profile: dict[str, Any] | None
    memories: list[ContextMemoryOut]


@router.post("/reflect", response={200: ReflectOut, 202: RunAcceptedOut})
def reflect(request: HttpRequest, payload: ReflectIn, options: Query[ReflectQuery]) -> Status:
    scope = reflection_scope_resolve(tenant_id=tenant_id(request), namespace=payload.namespace,
                                     entity_id=payload.entity_id, user_id=payload.user_id)
    run = reflection_request(scope=scope, trigger="api", force=payload.force,
                             wait_seconds=0.0 if options.async_ else settings.ZEROMEMORY_REFLECT_WAIT_SECONDS)
    if options.async_ or run.status in ACTIVE_STATUSES:
        return Status(202, {"run_id": run.id, "status": run.status})
    if run.status != "succeeded":
        raise HttpError(503, f"reflection {run.status}: {run.error or 'no reason recorded'} (run {run.id})")
    return Status(200, reflection_answer(run))


@router.get("/runs/{run_id}", response=RunOut)
def run_read(request: HttpRequest, run_id: uuid.UUID) -> dict[str, Any]:
    run = ConsolidationRun.objects.filter(tenant_id=tenant_id(request), id=run_id).first()
    if run is None:
        raise HttpError(404, "no such run")
    finished = run.status not in ACTIVE_STATUSES
    return {"run_id": run.id, "kind": run.kind, "status": run.status, "user_id": run.user_id,
            "entity_id": run.entity_id, "namespace": run.namespace, "trigger": run.trigger, "model": run.model,
            "created_at": run.created_at, "started_at": run.started_at, "finished_at": run.finished_at,
            "progress": {"calls_done": int(run.result.get("calls_done", 0)),
                         "calls_planned": int(run.result.get("calls_planned", 0))},
            "llm_calls": run.llm_calls, "prompt_tokens": run.prompt_tokens,
            "completion_tokens": run.completion_tokens, "error": run.error,
            "result": (reflection_answer(run) if run.kind == "reflection" else
                       {"reviewed": run.reviewed, "clusters": run.clusters, "merged": run.merged,
                        "created": run.created, "superseded": run.superseded}) if finished else None}


@router.post("/context", response=ContextOut)
def context(request: HttpRequest, payload: ContextIn) -> dict[str, Any]:
    built = context_build(tenant_id=tenant_id(request), user_id=payload.user_id, entity_id=payload.entity_id,
                          namespace=payload.namespace, query=payload.query, budget_chars=payload.budget_chars)
    profile = built.profile
    access_record(h.memory.id for h in built.hits)
    return {"context": built.text, "chars": len(built.text), "budget_chars": payload.budget_chars,
            "profile": None if profile is None else {
                "entity_id": profile.entity_id or None, "version": profile.version, "summary": profile.summary,
                "items": built.profile_items},
            "memories": [{"id": h.memory.id, "content": h.memory.content, "memory_type": h.memory.memory_type,
                          "created_at": h.memory.created_at, "score": h.score} for h in built.hits]}


class CorrectIn(Strict):
    content: str = Field(..., min_length=1)

    @field_validator("content")
    @classmethod
    def content_within_limit(cls, value: str) -> str:
        return checked_content(value)


class ForgetIn(Strict):
    user_id: str | None = OptionalName
    entity_id: str | None = OptionalName

    @model_validator(mode="after")
    def names_someone(self) -> ForgetIn:
        if not self.entity_id and not self.user_id:
            raise ValueError("give user_id (forget a user) or entity_id (forget an entity, optionally of one user)")
        return self


class ErasureOut(Schema):
    deleted: int
    derived_deleted: int
    returned_to_raw: int
    profiles_changed: int
    ledger_rows_scrubbed: int
    ids: list[str]
    profiles_deleted: int = 0


class SessionEndIn(Strict):
    user_id: str = Name


class SessionEndOut(Schema):
    session_id: str
    user_id: str
    queued: bool


class FeedbackIn(Strict):
    useful: bool


class FeedbackOut(Schema):
    id: uuid.UUID
    reward_score: float


def actor(request: HttpRequest) -> str:
    return f"apikey:{request.auth.prefix}"  # type: ignore[attr-defined]


@router.delete("/memories/{memory_id}", response=ErasureOut)
def memory_erase(request: HttpRequest, memory_id: uuid.UUID) -> dict[str, Any]:
    if selectors.memory_get(tenant_id=tenant_id(request), memory_id=memory_id) is None:
        raise HttpError(404, "no such memory")
    return memories_erase(tenant_id=tenant_id(request), memory_ids=[memory_id], actor=actor(request),
                          reason="erasure request").as_json()


@router.patch("/memories/{memory_id}", response=MemoryOut)
def memory_update(request: HttpRequest, memory_id: uuid.UUID, payload: CorrectIn) -> Memory:
    if selectors.memory_get(tenant_id=tenant_id(request), memory_id=memory_id) is None:
        raise HttpError(404, "no such memory")
    try:
        memory_correct(tenant_id=tenant_id(request), memory_id=memory_id, content=payload.content,
                       actor=actor(request))
    except IntegrityError as exc:
        raise HttpError(409, "the same content is already stored in this memory's session") from exc
    return Memory.objects.get(id=memory_id)


@router.post("/forget", response=ErasureOut)
def forget(request: HttpRequest, payload: ForgetIn) -> dict[str, Any]:
    return scope_erase(tenant_id=tenant_id(request), actor=actor(request), user_id=payload.user_id,
                       entity_id=payload.entity_id)


@router.post("/sessions/{session_id}/end", response={202: SessionEndOut})
def session_end_view(request: HttpRequest, session_id: str, payload: SessionEndIn) -> Status:
    if not 1 <= len(session_id) <= 200 or "\x00" in session_id:
        raise HttpError(422, "session_id must be 1–200 characters")
    queued = session_end(tenant_id=tenant_id(request), user_id=payload.user_id, session_id=session_id)
    return Status(202, {"session_id": session_id, "user_id": payload.user_id, "queued": queued})


@router.post("/memories/{memory_id}/feedback", response=FeedbackOut)
def memory_feedback_view(request: HttpRequest, memory_id: uuid.UUID, payload: FeedbackIn) -> dict[str, Any]:
    try:
        reward = memory_feedback(tenant_id=tenant_id(request), memory_id=memory_id, useful=payload.useful,
                                 actor=actor(request), step=settings.ZEROMEMORY_FEEDBACK_STEP)
    except Memory.DoesNotExist as exc:
        raise HttpError(404, "no such memory") from exc
    return {"id": memory_id, "reward_score": reward}


api.add_router("/", router)
