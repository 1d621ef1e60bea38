"""What the API accepts and answers: django-ninja schemas (pydantic), so validation and the OpenAPI document come
from one definition. Every input schema is `Strict`: unknown fields, NUL characters and lone surrogates are refused
there, in one place, for bodies, query strings and path parameters alike."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from django.conf import settings
from django.utils import timezone as dj_timezone
from ninja import Field, Schema
from pydantic import ConfigDict, PlainSerializer, field_validator, model_validator

from zeromem.api.limits import Metadata, metadata_field
from zeromem.models import Memory


def name(description: str) -> Any:
    """A required id-like string (a user, an entity, a session): 1–200 characters."""
    return Field(..., min_length=1, max_length=200, description=description)


def optional_name(description: str) -> Any:
    return Field(None, min_length=1, max_length=200, description=description)


# A score as the API shows it: 4 decimals (as the canary figures), so that float arithmetic's noise
# (-0.03999999999999998 for -0.04) never reaches a client. Stored values keep their full precision.
SCORE_DECIMALS = 4
Score = Annotated[float, PlainSerializer(lambda value: round(value, SCORE_DECIMALS), return_type=float)]


def unstorable(value: Any) -> bool:
    """A NUL character or a lone surrogate (valid JSON, not valid UTF-8) anywhere in the value, keys included.
    Walked with a list, not by recursion: a body nested a few hundred levels deep (the JSON parser takes ~1,000)
    would exhaust the stack before any limit on its depth is checked."""
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, str) and unstorable_text(node):
            return True
        if isinstance(node, dict):
            pending.extend(node)
            pending.extend(node.values())
        elif isinstance(node, (list, tuple)):
            pending.extend(node)
    return False


def unstorable_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return "\x00" in text


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
    content: str = Field(..., min_length=1, description="The text to remember (not blank; at most "
                                                          "ZEROMEMORY_MAX_CONTENT_CHARS characters).")
    user_id: str = name("The user the memory belongs to; every query is scoped by it.")
    entity_id: str | None = optional_name("What the memory is about (a person, a project); reflection and profiles "
                                          "are per entity. Omit for the user's own memories.")
    namespace: str = Field("global", min_length=1, max_length=100,
                           description="A partition of the user's memories; jobs never mix namespaces.")
    session_id: str | None = optional_name("The conversation the memory comes from. The user's newest session is "
                                           "kept verbatim by the jobs; without one, a UTC day counts as a session.")
    memory_type: Literal["episodic", "working"] = Field(
        "episodic", description="episodic (what happened) or working (short-lived scratch); semantic memories "
                                "are written by consolidation only.")
    kind: Literal["observation", "decision", "question", "preference", "outcome", "fact", "meta"] | None = Field(
        None, description="What sort of statement it is; filled by built-in rules when omitted.")
    role: str = Field("", max_length=50, description="Who said it (e.g. user, assistant, tool); free text.")
    entities: list[str] | None = Field(None, max_length=100,
                                       description="Names mentioned (1–200 characters each); extracted by built-in "
                                                   "rules when omitted.")
    tags: list[str] = Field(default_factory=list, max_length=50,
                            description="Free labels (1–200 characters each), for filtering in your own code.")
    window: str | None = optional_name("A boundary clusters and reflection batches never cross (e.g. a project "
                                       "phase).")
    importance: float | None = Field(None, ge=0.0, le=1.0, strict=True,
                                     description="0–1, a JSON number; drives decay and retention (default 0.5).")
    metadata: Metadata = metadata_field()
    created_at: datetime | None = Field(None, description="When it was said, with a time zone (default: now; "
                                                          "not in the future).")

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
    memories: list[MemoryIn] = Field(..., min_length=1, description="The batch (1 to ZEROMEMORY_MAX_BATCH, default "
                                                                    "1,000), stored all or nothing.")

    @field_validator("memories")
    @classmethod
    def batch_within_limit(cls, value: list[MemoryIn]) -> list[MemoryIn]:
        if len(value) > settings.ZEROMEMORY_MAX_BATCH:
            raise ValueError(f"at most {settings.ZEROMEMORY_MAX_BATCH} memories per request")
        return value


class StoredOut(Schema):
    ids: list[uuid.UUID] = Field(description="One id per memory sent, in the order sent (a duplicate answers the "
                                             "id already stored).")
    created: int = Field(description="How many new rows were written.")
    deduplicated: int = Field(description="How many were already stored (same user, session and content).")
    embedded: int = Field(description="How many were embedded in the request; the rest are embedded by a worker "
                                      "and are found by keyword meanwhile.")


class MemoryOut(Schema):
    id: uuid.UUID = Field(description="The memory's id.")
    user_id: str = Field(description="The user it belongs to.")
    entity_id: str | None = Field(description="What it is about; null for the user's own memories.")
    namespace: str = Field(description="Its namespace.")
    session_id: str | None = Field(description="The session it came from, if given.")
    memory_type: str = Field(description="episodic, working or semantic (written by consolidation).")
    state: str = Field(description="raw (active), consolidated (folded into a semantic memory) or archived.")
    kind: str = Field(description="observation, decision, question, preference, outcome, fact or meta.")
    role: str = Field(description="Who said it, as sent.")
    key: str | None = Field(description="The key it was written under (PUT /memories/by-key); null otherwise.")
    content: str = Field(description="The text.")
    entities: list[str] = Field(description="Names mentioned, as sent or extracted.")
    tags: list[str] = Field(description="Labels; consolidation adds its own (e.g. insight, digest, condensed).")
    window: str | None = Field(description="The boundary jobs never cross, if given.")
    importance: Score = Field(description="0–1.")
    confidence: Score = Field(description="0–1; raised when consolidation finds the statement corroborated.")
    corroboration_count: int = Field(description="How many memories state it (1 for an episode).")
    metadata: dict[str, Any] = Field(description="As sent.")
    has_embedding: bool = Field(description="False until the memory is embedded (it is found by keyword "
                                            "meanwhile).")
    created_at: datetime = Field(description="When it was said.")
    updated_at: datetime = Field(description="When the row last changed.")
    consolidated_at: datetime | None = Field(description="When it was folded into a semantic memory.")
    archived_at: datetime | None = Field(description="When it was archived.")
    superseded_by_id: uuid.UUID | None = Field(description="The memory that replaced it, when a newer statement "
                                                           "did.")
    valid_from: datetime = Field(description="Since when the statement holds, by its own date (its created_at, or "
                                             "for a semantic memory its oldest source's).")
    valid_to: datetime | None = Field(description="Until when it held: the date of the newer statement that "
                                                  "superseded it; null while it still holds.")

    @staticmethod
    def resolve_has_embedding(obj: Memory) -> bool:
        # A search result is read without its vector (selectors.memories_search) and says whether it has one.
        return bool(obj.has_vector) if hasattr(obj, "has_vector") else obj.embedding is not None

    @staticmethod
    def resolve_valid_from(obj: Memory) -> datetime:
        return obj.valid_from or obj.created_at


def memory_key(description: str) -> Any:
    return Field(..., min_length=1, max_length=500, description=description)


class KeyedMemoryIn(MemoryIn):
    key: str = memory_key("Your name for the memory (1–500 characters): one memory per user, entity, namespace and "
                          "key. A put replaces what the key holds.")


class MemoryKeyQuery(Strict):
    user_id: str = name("The user the key belongs to.")
    entity_id: str | None = optional_name("The entity of the key's scope; omit for the user's own memories.")
    namespace: str = Field("global", min_length=1, max_length=100, description="The namespace of the key's scope.")
    key: str = memory_key("The key.")


class KeyedOut(Schema):
    outcome: Literal["created", "replaced", "unchanged"] = Field(
        description="created: the key held nothing; replaced: the key's memory was overwritten in place (same id); "
                    "unchanged: it already held exactly this, nothing was written.")
    memory: MemoryOut = Field(description="The key's memory as stored now.")


class SourceOut(Schema):
    source_memory_id: uuid.UUID = Field(description="The cited memory's id (kept after it is deleted).")
    source_content_hash: str = Field(description="sha256 of the cited memory's content (kept after it is "
                                                 "deleted).")
    deleted: bool = Field(description="True when the cited memory no longer exists.")
    content: str | None = Field(description="Its text; null once deleted.")
    state: str | None = Field(description="Its state; null once deleted.")


class MemoryDetailOut(MemoryOut):
    sources: list[SourceOut] = Field(description="The memories a semantic memory was built from; [] for an "
                                                 "episode.")


class PageOut(Schema):
    memories: list[MemoryOut] = Field(description="One page, newest first.")
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


class ListQuery(Strict):
    user_id: str | None = optional_name("Only this user's memories.")
    entity_id: str | None = optional_name("Only memories about this entity.")
    namespace: str | None = Field(None, max_length=100, description="Only this namespace.")
    memory_type: Literal["episodic", "working", "semantic"] | None = Field(None, description="Only this type.")
    state: Literal["raw", "consolidated", "archived"] | None = Field(None, description="Only this state.")
    created_after: datetime | None = Field(None, description="Only memories created at or after this time "
                                                             "(with a time zone).")
    created_before: datetime | None = Field(None, description="Only memories created before this time (with a "
                                                              "time zone).")
    cursor: str | None = Field(None, max_length=500, description="`next_cursor` of the previous page.")
    limit: int = Field(50, ge=1, le=500, description="Page size, 1–500.")

    @field_validator("created_after", "created_before")
    @classmethod
    def in_utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value)


class SearchIn(Strict):
    query: str = Field(..., min_length=1, max_length=4000, description="What to look for, in plain words.")
    user_id: str | None = optional_name("Only this user's memories.")
    entity_id: str | None = optional_name("Only memories about this entity.")
    namespace: str | None = Field(None, max_length=100, description="Only this namespace.")
    # Three types and three states exist: a longer list could only repeat them (into the query's IN list).
    memory_types: list[Literal["episodic", "working", "semantic"]] | None = Field(
        None, max_length=3, description="Only these types (default: all); at most 3.")
    states: list[Literal["raw", "consolidated", "archived"]] = Field(
        default_factory=lambda: ["raw"],  # type: ignore[arg-type]
        max_length=3, description="Only these states (default: active, i.e. raw); at most 3.")
    top_k: int = Field(10, ge=1, le=100, strict=True, description="How many results, 1–100 (a JSON number).")
    as_of: datetime | None = Field(None, description="What was true at this time (with a time zone), by the "
                                                     "statements' own dates: a memory counts when valid_from ≤ as_of "
                                                     "< valid_to (no valid_to: still true), superseded statements "
                                                     "included. Omit for current knowledge.")
    include_history: bool = Field(False, strict=True, description="Also superseded and consolidated memories, each "
                                                                  "labelled with its state, superseded_by and "
                                                                  "valid_to / consolidated_at (a JSON boolean).")

    @field_validator("as_of")
    @classmethod
    def as_of_in_utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value)


class LabelledOut(Schema):
    """The labels every search and context result carries (history-aware reads, knowledge updates)."""

    state: str = Field(description="raw (current), consolidated (folded into a semantic memory) or archived "
                                   "(with include_history or as_of: superseded).")
    valid_from: datetime = Field(description="Since when it holds, by its own date.")
    valid_to: datetime | None = Field(description="Until when it held (the newer statement's date); null while it "
                                                  "still holds.")
    superseded_by: uuid.UUID | None = Field(description="The memory that replaced it; null when none did.")
    consolidated_at: datetime | None = Field(description="When it was folded into a semantic memory; null if never.")
    earlier_than: uuid.UUID | None = Field(
        default=None, description="A newer result of this answer stating the same attribute with another value "
                                  "(it ranks just above this one); null when none does.")


class HitOut(LabelledOut):
    memory: MemoryOut = Field(description="The memory found.")
    score: Score = Field(description="The rank score: BM25 divided by the best candidate's, fused with cosine "
                                     "similarity (higher is better).")
    bm25: Score = Field(description="Its raw BM25 score for the query's words.")
    cosine: Score | None = Field(description="Cosine similarity to the query; null when not yet embedded.")


class SearchOut(Schema):
    results: list[HitOut] = Field(description="Best first, at most top_k.")


class ProvenanceOut(Schema):
    source_memory_id: uuid.UUID = Field(description="The cited memory's id (kept after it is deleted).")
    cited_by: uuid.UUID = Field(description="The memory citing it: the memory asked about, or one of its sources.")
    depth: int = Field(description="1: cited by the memory asked about; 2: by one of its sources; and so on.")
    source_content_hash: str = Field(description="sha256 of the cited memory's content (kept after it is deleted).")
    deleted: bool = Field(description="True when the cited memory no longer exists.")
    content: str | None = Field(description="Its text; null once deleted.")
    memory_type: str | None = Field(description="episodic, working or semantic; null once deleted.")
    state: str | None = Field(description="Its state; null once deleted.")
    created_at: datetime | None = Field(description="When it was said; null once deleted.")


class HistoryMemoryOut(Schema):
    id: uuid.UUID = Field(description="The memory's id.")
    content: str = Field(description="Its text.")
    memory_type: str = Field(description="episodic, working or semantic.")
    state: str = Field(description="raw, consolidated or archived.")
    created_at: datetime = Field(description="When it was said (a semantic memory: when it was written).")
    valid_to: datetime | None = Field(description="Until when it held, when a newer statement superseded it.")


class RelationOut(Schema):
    relation_type: str = Field(description="supersedes, contradicts, derived_from, related, implies, specializes "
                                           "or causes.")
    direction: Literal["outgoing", "incoming"] = Field(
        description="outgoing: this memory → the other (e.g. this one supersedes it); incoming: the other → this "
                    "memory (e.g. the other superseded this one).")
    memory: HistoryMemoryOut = Field(description="The memory at the other end.")
    flagged: bool = Field(description="Waiting for an operator's review (a contradiction).")
    reason: str = Field(description="Why the relation was made (e.g. update cue); '' when not recorded.")
    created_at: datetime = Field(description="When the relation was made.")


class LedgerEntryOut(Schema):
    id: int = Field(description="The ledger row's id.")
    action: str = Field(description="What was done: merge, supersede, contradiction.flagged, transition.<operation> "
                                    "(consolidate, supersede, decay, restore, …), reflection, correct, feedback, "
                                    "unmerge, restore, review.<decision>, ….")
    actor: str = Field(description="Who did it: run:<id>, apikey:<prefix>, admin:<name> or safety-net:run:<id>.")
    run_id: uuid.UUID | None = Field(description="The run it was part of; null for a request or an operator.")
    reason: str = Field(description="Why, in words.")
    created_at: datetime = Field(description="When.")
    undoable: bool = Field(description="Whether it can be undone.")
    undone: bool = Field(description="Whether it was undone (by a later ledger row).")


class RunSummaryOut(Schema):
    """What every answer that names a run says of it."""

    run_id: uuid.UUID = Field(description="The run's id (GET /runs/{run_id}).")
    kind: str = Field(description="clustering, reflection or lifecycle.")
    status: str = Field(description="pending, running, succeeded, failed or skipped.")
    trigger: str = Field(description="What started it: beat, api, admin, cli or session_end.")
    created_at: datetime = Field(description="When it was requested.")
    started_at: datetime | None = Field(description="When a worker claimed it.")
    finished_at: datetime | None = Field(description="When it ended.")
    error: str = Field(description="Why it failed ('' otherwise).")


class HistoryRunOut(RunSummaryOut):
    canaries: dict[str, Any] | None = Field(
        description="The retrieval safety net's figures, when it measured the run: {canaries, recall_before, "
                    "recall_after, max_drop, failed, worse}; null when it did not.")


class HistoryOut(Schema):
    memory: MemoryOut = Field(description="The memory, as GET /memories/{memory_id} answers it (without sources).")
    sources: list[ProvenanceOut] = Field(description="Its provenance: what it was built from, transitively "
                                                     "(shallowest first); [] for an episode.")
    cited_by: list[HistoryMemoryOut] = Field(description="The memories built from it (directly).")
    superseded_by: HistoryMemoryOut | None = Field(description="The newer statement that replaced it; null when "
                                                               "none did.")
    supersedes: list[HistoryMemoryOut] = Field(description="The older statements it replaced.")
    relations: list[RelationOut] = Field(description="Every relation either way (supersedes, flagged "
                                                     "contradictions, …), oldest first.")
    ledger: list[LedgerEntryOut] = Field(description="Every change that named it, oldest first (at most 500).")
    runs: list[HistoryRunOut] = Field(description="The runs behind those changes, oldest first.")


class CorrectIn(Strict):
    content: str = Field(..., min_length=1, description="The corrected text (not blank; at most "
                                                        "ZEROMEMORY_MAX_CONTENT_CHARS characters).")

    @field_validator("content")
    @classmethod
    def content_within_limit(cls, value: str) -> str:
        return checked_content(value)


class FeedbackIn(Strict):
    useful: bool = Field(..., strict=True, description="Whether the memory helped (a JSON boolean).")


class FeedbackOut(Schema):
    id: uuid.UUID = Field(description="The memory's id.")
    reward_score: Score = Field(description="The new reward, in [−1, 1]: moved a lifecycle.feedback_step share "
                                            "of the way towards +1 (useful) or −1.")


# --- profiles and context ------------------------------------------------------------------------------------

class ProfileQuery(Strict):
    user_id: str = name("The user.")
    entity_id: str | None = optional_name("The entity; omit for the user-wide profile.")
    namespace: str = Field("global", max_length=100, description="The namespace.")
    budget_chars: int | None = Field(None, ge=100, le=50_000,
                                     description="The most characters the summary, `static` and `recent` may take "
                                                 "together, 100–50,000 (each counted with a line break); omit for "
                                                 "every item.")


class ProfileOut(Schema):
    user_id: str = Field(description="The user.")
    entity_id: str | None = Field(description="The entity; null for the user-wide profile.")
    namespace: str = Field(description="The namespace.")
    preferences: list[dict[str, Any]] = Field(description="Items {category, subject, statement, confidence, "
                                                          "source_ids, memory_ids, first_seen, last_seen}; newer "
                                                          "items also carry valid_from, weight and replaced_by.")
    behaviors: list[dict[str, Any]] = Field(description="Items, as preferences.")
    facts: list[dict[str, Any]] = Field(description="Items, as preferences.")
    summary: str = Field(description="A short summary of the entity or user; with budget_chars, \"\" when it does "
                                     "not fit the budget.")
    static: list[dict[str, Any]] = Field(description="The long-standing items, strongest first (weight, else "
                                                     "confidence): first said (valid_from, else first_seen) before "
                                                     "the last profile.recent_days (30) days; with "
                                                     "budget_chars, only those that fit after the summary.")
    recent: list[dict[str, Any]] = Field(description="The items first said within the last "
                                                     "profile.recent_days (30) days, as static.")
    budget_chars: int | None = Field(description="The budget asked for; null when none was.")
    version: int = Field(description="Raised by one on every change.")
    updated_at: datetime = Field(description="When it last changed.")


class ContextIn(Strict):
    query: str = Field(..., min_length=1, max_length=4000, description="What the agent is about to answer.")
    user_id: str = name("The user.")
    entity_id: str | None = optional_name("The entity; omit for the user's own memories and user-wide profile.")
    namespace: str = Field("global", min_length=1, max_length=100, description="The namespace.")
    budget_chars: int = Field(2000, ge=100, le=50_000, strict=True,
                              description="The most characters the context may take, 100–50,000 (a JSON number).")
    as_of: datetime | None = Field(None, description="Build it from what was true at this time (with a time zone), "
                                                     "as POST /search's as_of; the profile (today's knowledge) is "
                                                     "then left out.")
    include_history: bool = Field(False, strict=True, description="Also superseded and consolidated memories; a "
                                                                  "superseded one's line ends with \"(superseded on "
                                                                  "<date>)\" (a JSON boolean).")

    @field_validator("as_of")
    @classmethod
    def as_of_in_utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value)


class ContextMemoryOut(LabelledOut):
    id: uuid.UUID = Field(description="The memory's id.")
    content: str = Field(description="Its text, whole.")
    memory_type: str = Field(description="episodic, working or semantic.")
    created_at: datetime = Field(description="When it was said.")
    score: Score = Field(description="Its search score.")


class ContextOut(Schema):
    context: str = Field(description="The text to inject into the prompt: the profile's lines, then the memories' "
                                     "lines, never past the budget and never saying a sentence twice.")
    chars: int = Field(description="The length of `context`.")
    budget_chars: int = Field(description="The budget asked for.")
    profile: dict[str, Any] | None = Field(description="{entity_id, version, summary, items} of the profile used "
                                                       "(items: the ones that fit); null when there is none.")
    memories: list[ContextMemoryOut] = Field(description="The search results `context` holds a line of, in rank "
                                                         "order.")


# --- reflection and runs -------------------------------------------------------------------------------------

class ReflectIn(Strict):
    entity_id: str | None = optional_name("The entity to reflect on.")
    user_id: str | None = optional_name("The user: alone, the user's memories without an entity; with entity_id, "
                                        "picks the user when the entity spans several.")
    namespace: str = Field("global", min_length=1, max_length=100, description="The namespace.")
    # Also reflect the current session (the default keeps it for the agent, verbatim).
    force: bool = Field(False, strict=True, description="Also reflect the current session (a JSON boolean). Never "
                                                        "downgraded by joining an unforced run.")

    @model_validator(mode="after")
    def names_a_scope(self) -> ReflectIn:
        if not self.entity_id and not self.user_id:
            raise ValueError("give entity_id (an entity) or user_id (the user's memories without an entity)")
        return self


class ReflectQuery(Strict):
    async_: bool = Field(False, alias="async", description="Answer 202 with the run at once instead of waiting.")


class UsageOut(Schema):
    llm_calls: int = Field(description="LLM calls made.")
    prompt_tokens: int = Field(description="Prompt tokens spent.")
    completion_tokens: int = Field(description="Completion tokens spent.")
    cost_usd: float = Field(description="What the calls cost, in US dollars (0 for the built-in engine).")


class ReflectOut(Schema):
    entity_id: str | None = Field(description="The entity reflected on; null when user-wide.")
    user_id: str | None = Field(None, description="The user, for a user-wide reflection only.")
    insights: list[str] = Field(description="The insights written as semantic memories.")
    memories_reviewed: int = Field(description="How many memories were read.")
    new_semantic_memories: int = Field(description="How many semantic memories were written (insights, the digest, "
                                                   "condensed passages).")
    profile_updated: bool = Field(description="Whether the profile changed.")
    run_id: uuid.UUID = Field(description="The reflection run (GET /runs/{run_id}).")
    status: str = Field(description="succeeded (a run that did not succeed answers 503).")
    usage: UsageOut = Field(description="What the run spent on the LLM.")


class RunAcceptedOut(Schema):
    run_id: uuid.UUID = Field(description="The run to follow with GET /runs/{run_id}.")
    status: str = Field(description="pending or running.")


class RunOut(RunSummaryOut):
    user_id: str = Field(description="The user whose memories it works on ('' for a lifecycle run).")
    entity_id: str | None = Field(description="The entity, for a reflection run.")
    namespace: str | None = Field(description="The namespace, when the run is limited to one.")
    model: str = Field(description="The LLM used ('' when none).")
    progress: dict[str, int] = Field(description="{calls_done, calls_planned}: LLM calls made and planned.")
    llm_calls: int = Field(description="LLM calls made.")
    prompt_tokens: int = Field(description="Prompt tokens spent.")
    completion_tokens: int = Field(description="Completion tokens spent.")
    usage: UsageOut = Field(description="What it spent on the LLM: calls, tokens and cost.")
    result: dict[str, Any] | None = Field(description="Once finished: a reflection's answer (as POST /reflect), or "
                                                      "{reviewed, clusters, merged, created, superseded, "
                                                      "omission_checked, omissions, held} (held: the omission check "
                                                      "holds the run's changes for an operator's review); null "
                                                      "before.")


class RunsQuery(Strict):
    user_id: str | None = optional_name("Only this user's runs.")
    entity_id: str | None = optional_name("Only runs about this entity.")
    kind: Literal["clustering", "reflection", "lifecycle"] | None = Field(None, description="Only this kind.")
    status: Literal["pending", "running", "succeeded", "failed", "skipped"] | None = Field(
        None, description="Only this status.")
    cursor: str | None = Field(None, max_length=500, description="`next_cursor` of the previous page.")
    limit: int = Field(50, ge=1, le=200, description="Page size, 1–200.")


class RunsPageOut(Schema):
    runs: list[RunOut] = Field(description="One page, newest first.")
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


# --- erasure and sessions ------------------------------------------------------------------------------------

class ForgetIn(Strict):
    user_id: str | None = optional_name("Forget this user (with entity_id: only the entity's memories of this "
                                        "user).")
    entity_id: str | None = optional_name("Forget this entity.")

    @model_validator(mode="after")
    def names_someone(self) -> ForgetIn:
        if not self.entity_id and not self.user_id:
            raise ValueError("give user_id (forget a user) or entity_id (forget an entity, optionally of one user)")
        return self


class ErasureOut(Schema):
    deleted: int = Field(description="Memories erased as asked.")
    derived_deleted: int = Field(description="Semantic memories built from them, erased too (transitively).")
    returned_to_raw: int = Field(description="Other sources of those semantic memories, made active again.")
    profiles_changed: int = Field(description="Profiles whose items or summary cited them.")
    ledger_rows_scrubbed: int = Field(description="Ledger rows whose text was replaced by [erased].")
    ids: list[str] = Field(description="The ids erased as asked.")
    profiles_deleted: int = Field(0, description="Profiles deleted (POST /forget only).")


class SessionPath(Strict):
    session_id: str = name("The session that ended.")


class SessionEndIn(Strict):
    user_id: str = name("The user whose session it is.")


class SessionEndOut(Schema):
    session_id: str = Field(description="The session that ended.")
    user_id: str = Field(description="The user.")
    queued: bool = Field(description="False when this session had already ended: nothing new was enqueued")
    run_ids: list[uuid.UUID] = Field(description="the forced clustering run the consolidation pass does first; "
                                                 "its reflection runs follow (GET /runs?user_id=…)")


# --- errors --------------------------------------------------------------------------------------------------

class ErrorDetailOut(Schema):
    code: str = Field(description="Stable, for programs: unauthorized, invalid_input, rate_limited, not_found, "
                                  "bad_request, invalid_cursor, ambiguous_entity, conflict, idempotency_conflict, "
                                  "run_in_progress, too_large, method_not_allowed, error, internal_error.")
    message: str = Field(description="For people; may change.")
    details: list[Any] = Field(description="For invalid_input: [{loc, msg, type}], one per problem; for "
                                           "run_in_progress: [{run_id}]; [] otherwise.")


class ErrorOut(Schema):
    """The one shape of every answer that is not a success. A 429, and a 409 run_in_progress, also carry a
    `Retry-After` header (seconds)."""

    error: ErrorDetailOut = Field(description="What went wrong.")
