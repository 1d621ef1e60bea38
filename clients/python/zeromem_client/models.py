"""What the API answers, as pydantic models (snake_case, as on the wire).

Every model allows extra fields: a newer server may answer more keys than this client knows, and they stay readable
(`model.model_extra`, or as attributes) instead of breaking an older client. Ids are strings, dates are aware
datetimes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")


class Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class AddResult(Model):
    """POST /memories: one id per memory sent, in order (a duplicate answers the id already stored)."""

    ids: list[str]
    created: int
    deduplicated: int
    embedded: int


class KeyedResult(Model):
    """`put`: `outcome` is "created" (the key held nothing), "replaced" (the key's memory overwritten in place: same
    id and created_at) or "unchanged" (it already held exactly this; nothing written)."""

    outcome: str
    memory: Memory


class Source(Model):
    """A memory a semantic memory was built from (a deleted source keeps its id and content hash)."""

    source_memory_id: str
    source_content_hash: str
    deleted: bool
    content: str | None = None
    state: str | None = None


class Memory(Model):
    id: str
    user_id: str
    entity_id: str | None = None
    namespace: str = "global"
    session_id: str | None = None
    memory_type: str
    state: str
    kind: str = ""
    role: str = ""
    key: str | None = None
    """The key it was written under (`put`); None for memories written by `add`."""
    content: str
    entities: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    window: str | None = None
    importance: float = 0.5
    confidence: float = 0.5
    corroboration_count: int = 1
    metadata: dict[str, Any] = Field(default_factory=dict)
    has_embedding: bool = False
    created_at: datetime
    updated_at: datetime | None = None
    consolidated_at: datetime | None = None
    archived_at: datetime | None = None
    superseded_by_id: str | None = None
    valid_from: datetime | None = None
    """Since when the statement holds, by its own date (servers with `as_of`; None from older ones)."""
    valid_to: datetime | None = None
    """Until when it held: the date of the newer statement that superseded it; None while it still holds."""
    sources: list[Source] = Field(default_factory=list)
    """Only `get()` answers them; [] for an episode and in lists and search results."""


class SearchResult(Model):
    """One hit, best first. The history labels (`state` … `consolidated_at`) come from servers with `as_of`."""

    memory: Memory
    score: float
    bm25: float = 0.0
    cosine: float | None = None
    state: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str | None = None
    consolidated_at: datetime | None = None
    earlier_than: str | None = None  # a newer result stating the same attribute with another value


class ContextMemory(Model):
    id: str
    content: str
    memory_type: str
    created_at: datetime
    score: float
    state: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str | None = None
    consolidated_at: datetime | None = None
    earlier_than: str | None = None


class ProfileItem(Model):
    """A preference, behavior or fact reflection learnt, with the memories it rests on."""

    category: str = ""
    subject: str | None = None
    statement: str = ""
    confidence: float = 0.0
    source_ids: list[str] = Field(default_factory=list)
    memory_ids: list[str] = Field(default_factory=list)
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    valid_from: datetime | None = None
    """When it was first said (newer servers; None: `first_seen` is that date)."""
    weight: float | None = None
    """How strongly it holds (newer servers; None: `confidence` ranks it)."""
    replaced_by: Any = None
    """What replaced it, as the server states it (newer servers); None while it holds."""


class ContextProfile(Model):
    entity_id: str | None = None
    version: int
    summary: str = ""
    items: list[ProfileItem] = Field(default_factory=list)


class Context(Model):
    """POST /context: `context` is the text to put in the prompt, never longer than `budget_chars`."""

    context: str
    chars: int
    budget_chars: int
    profile: ContextProfile | None = None
    memories: list[ContextMemory] = Field(default_factory=list)

    def __str__(self) -> str:
        return self.context


class Profile(Model):
    user_id: str
    entity_id: str | None = None
    namespace: str = "global"
    preferences: list[ProfileItem] = Field(default_factory=list)
    behaviors: list[ProfileItem] = Field(default_factory=list)
    facts: list[ProfileItem] = Field(default_factory=list)
    summary: str = ""
    """With `budget_chars`: "" when it did not fit the budget."""
    static: list[ProfileItem] = Field(default_factory=list)
    """The long-standing items, strongest first; with `budget_chars`, only those that fit (newer servers)."""
    recent: list[ProfileItem] = Field(default_factory=list)
    """The items first said within the server's recent window (30 days by default), strongest first."""
    budget_chars: int | None = None
    version: int
    updated_at: datetime


class Feedback(Model):
    id: str
    reward_score: float


class Erasure(Model):
    """DELETE /memories/{id} and POST /forget: what was erased."""

    deleted: int
    derived_deleted: int = 0
    returned_to_raw: int = 0
    profiles_changed: int = 0
    ledger_rows_scrubbed: int = 0
    ids: list[str] = Field(default_factory=list)
    profiles_deleted: int = 0


class Usage(Model):
    """What a run spent on the LLM (servers that report it)."""

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class ReflectResult(Model):
    """POST /reflect. `status` "succeeded" carries the result; "pending"/"running" (the server answered 202) only
    `run_id`: follow it with `run(run_id)`."""

    run_id: str
    status: str
    entity_id: str | None = None
    user_id: str | None = None
    insights: list[str] = Field(default_factory=list)
    memories_reviewed: int = 0
    new_semantic_memories: int = 0
    profile_updated: bool = False
    usage: Usage | None = None

    @property
    def finished(self) -> bool:
        return self.status not in ("pending", "running")


class RunProgress(Model):
    calls_done: int = 0
    calls_planned: int = 0


class Run(Model):
    run_id: str
    kind: str
    status: str
    user_id: str = ""
    entity_id: str | None = None
    namespace: str | None = None
    trigger: str = ""
    model: str = ""
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    progress: RunProgress = Field(default_factory=RunProgress)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str = ""
    result: dict[str, Any] | None = None
    usage: Usage | None = None

    @property
    def finished(self) -> bool:
        return self.status not in ("pending", "running")


class SessionEnd(Model):
    """POST /sessions/{id}/end: `queued` false and `run_ids` [] when the session had already ended."""

    session_id: str
    user_id: str
    queued: bool
    run_ids: list[str] = Field(default_factory=list)


class MemoryHistory(Model):
    """GET /memories/{id}/history: where a memory came from and what happened to it — its provenance (`sources`,
    transitively), what was built from it (`cited_by`), what superseded it or it superseded, every relation, the
    ledger trail and the runs behind it. Loose on purpose (the endpoint is new): the entries are the server's
    dicts, and whatever else it answers is kept as extra fields."""

    memory: Memory | None = None
    sources: list[dict[str, Any]] = Field(default_factory=list)
    cited_by: list[dict[str, Any]] = Field(default_factory=list)
    superseded_by: dict[str, Any] | None = None
    supersedes: list[dict[str, Any]] = Field(default_factory=list)
    relations: list[dict[str, Any]] = Field(default_factory=list)
    ledger: list[dict[str, Any]] = Field(default_factory=list)
    runs: list[dict[str, Any]] = Field(default_factory=list)


class Page(Model, Generic[T]):
    """One page of a cursor-paginated list (the iterators of `list()` and `runs()` follow `next_cursor`)."""

    items: list[T]
    next_cursor: str | None = None
