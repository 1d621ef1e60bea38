"""What the API accepts and answers: django-ninja schemas (pydantic), so validation and the OpenAPI document come
from one definition. Every input schema is `Strict`: unknown fields, NUL characters and lone surrogates are refused
there, in one place, for bodies, query strings and path parameters alike."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from django.conf import settings
from django.utils import timezone as dj_timezone
from ninja import Field, Schema
from pydantic import ConfigDict, field_validator, model_validator

from zeromem.models import Memory

Name = Field(..., min_length=1, max_length=200)
OptionalName = Field(None, min_length=1, max_length=200)


def unstorable(value: Any) -> bool:
    """A NUL character or a lone surrogate (valid JSON, not valid UTF-8) anywhere in the value, keys included."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return "\x00" in value
    if isinstance(value, dict):
        return any(unstorable(k) or unstorable(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(unstorable(v) for v in value)
    return False


class Strict(Schema):
    """Unknown fields are refused, and so are NUL characters and lone surrogates anywhere: PostgreSQL text and
    jsonb cannot hold them, and refusing them here, before any field validator runs, means no service ever sees
    one."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def no_nul_anywhere(cls, data: Any) -> Any:
        if unstorable(data):
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
    return value


# --- memories ------------------------------------------------------------------------------------------------

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
    importance: float | None = Field(None, ge=0.0, le=1.0, strict=True)
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
    top_k: int = Field(10, ge=1, le=100, strict=True)


class HitOut(Schema):
    memory: MemoryOut
    score: float
    bm25: float
    cosine: float | None


class SearchOut(Schema):
    results: list[HitOut]


class CorrectIn(Strict):
    content: str = Field(..., min_length=1)

    @field_validator("content")
    @classmethod
    def content_within_limit(cls, value: str) -> str:
        return checked_content(value)


class FeedbackIn(Strict):
    useful: bool = Field(..., strict=True)


class FeedbackOut(Schema):
    id: uuid.UUID
    reward_score: float


# --- profiles and context ------------------------------------------------------------------------------------

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


class ContextIn(Strict):
    query: str = Field(..., min_length=1, max_length=4000)
    user_id: str = Name
    entity_id: str | None = OptionalName
    namespace: str = Field("global", min_length=1, max_length=100)
    budget_chars: int = Field(2000, ge=100, le=50_000, strict=True)


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


# --- reflection and runs -------------------------------------------------------------------------------------

class ReflectIn(Strict):
    entity_id: str | None = OptionalName
    user_id: str | None = OptionalName
    namespace: str = Field("global", min_length=1, max_length=100)
    # Also reflect the current session (the default keeps it for the agent, verbatim).
    force: bool = Field(False, strict=True)

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


class RunsQuery(Strict):
    user_id: str | None = OptionalName
    entity_id: str | None = OptionalName
    kind: Literal["clustering", "reflection", "lifecycle"] | None = None
    status: Literal["pending", "running", "succeeded", "failed", "skipped"] | None = None
    cursor: str | None = Field(None, max_length=500)
    limit: int = Field(50, ge=1, le=200)


class RunsPageOut(Schema):
    runs: list[RunOut]
    next_cursor: str | None


# --- erasure and sessions ------------------------------------------------------------------------------------

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


class SessionPath(Strict):
    session_id: str = Name


class SessionEndIn(Strict):
    user_id: str = Name


class SessionEndOut(Schema):
    session_id: str
    user_id: str
    queued: bool = Field(description="False when this session had already ended: nothing new was enqueued")
    run_ids: list[uuid.UUID] = Field(description="the forced clustering run the consolidation pass does first; "
                                                 "its reflection runs follow (GET /runs?user_id=…)")
