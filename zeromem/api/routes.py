"""HTTP API under /api/v1/public/memory/v2/ (django-ninja: validation and OpenAPI at …/docs).

Each route parses input (the schemas in `schemas.py`), calls one service or selector, formats the output. Errors
are raised, never answered here: `errors.py` turns them into the one error shape.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import IntegrityError
from django.http import HttpRequest
from django.utils import timezone
from ninja import Path, Query, Router, Status
from ninja.security import HttpBearer

from consolidation.corrections.erasure import memories_erase, memory_correct, scope_erase
from consolidation.corrections.feedback import memory_feedback
from consolidation.corrections.keyed import memory_delete_by_key, memory_put_by_key
from consolidation.jobs.reflection import reflection_answer
from consolidation.models import ACTIVE_STATUSES, ConsolidationRun, RunKind, RunStatus, RunTrigger
from consolidation.selectors import (
    ProvenanceLink,
    RunFilter,
    memory_history,
    reflection_scope_resolve,
    runs_page,
)
from consolidation.triggers import reflection_request, session_end
from profiles.selectors import context_build, profile_get, profile_view
from zeromem.api.errors import ApiError, BadRequest, Conflict, ErrorShapedApi, NotFound
from zeromem.api.schemas import (
    ContextIn,
    ContextOut,
    CorrectIn,
    ErasureOut,
    ErrorOut,
    FeedbackIn,
    FeedbackOut,
    ForgetIn,
    HistoryOut,
    KeyedMemoryIn,
    KeyedOut,
    ListQuery,
    MemoriesIn,
    MemoryDetailOut,
    MemoryKeyQuery,
    MemoryOut,
    PageOut,
    ProfileOut,
    ProfileQuery,
    ReflectIn,
    ReflectOut,
    ReflectQuery,
    RunAcceptedOut,
    RunOut,
    RunsPageOut,
    RunsQuery,
    SearchIn,
    SearchOut,
    SessionEndIn,
    SessionEndOut,
    SessionPath,
    StoredOut,
)
from zeromem.api.scope import key_scope
from zeromem.core import selectors, services
from zeromem.core.access import access_record
from zeromem.core.domain.policy import Policy
from zeromem.core.policies import policy_of
from zeromem.core.ratelimit import rate_limit_check
from zeromem.core.selectors import MemoryFilter
from zeromem.core.tasks import enqueue_on_commit, memories_embed_task, memories_parse_task
from zeromem.models import ApiKey, Memory, MemoryRelation, RelationType


class ApiKeyAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        key = selectors.apikey_authenticate(secret=token)
        if key is not None:
            rate_limit_check(key_prefix=key.prefix)
            services.apikey_touch(key=key)
        return key


api = ErrorShapedApi(title="zeromem", version="2", urls_namespace="memory_v2", auth=ApiKeyAuth())
router = Router()

BODY = (400, 413)  # an unparseable body, a body larger than the server accepts


def errors(*statuses: int) -> dict[int, type[ErrorOut]]:
    """The error answers an operation documents (all in the one shape): 401, 422 and 429 for every keyed route,
    plus the given ones. Errors are answered by the API's exception handler, never validated against these."""
    return {status: ErrorOut for status in sorted({401, 422, 429, *statuses})}


def actor(request: HttpRequest) -> str:
    return f"apikey:{request.auth.prefix}"


def tenant_policy(request: HttpRequest) -> Policy:
    """The key's tenant's policy, from the tenant the key was read with (no query)."""
    return policy_of(request.auth.tenant)


def idempotency_key(request: HttpRequest) -> str | None:
    key = request.headers.get("Idempotency-Key") or None
    if key is not None and (len(key) > 200 or not key.isprintable()):
        raise BadRequest("Idempotency-Key must be at most 200 printable characters")
    return key


# --- memories ------------------------------------------------------------------------------------------------

@router.post("/memories", response={201: StoredOut, **errors(*BODY, 409, 503)}, summary="Store a batch of memories")
def memories_create(request: HttpRequest, payload: MemoriesIn) -> Status[dict[str, Any]]:
    """The body wraps the list: `{"memories": [...]}`, 1 to ZEROMEMORY_MAX_BATCH (1,000), stored all or nothing. An
    `Idempotency-Key` header replays the first answer (409 idempotency_conflict when reused with another body); the
    same content in the same user and session is stored once anyway. Entities and kind are filled by built-in rules
    when not given. Batches up to ZEROMEMORY_INLINE_EMBED_MAX are embedded in the request; larger ones are stored
    first and embedded by a worker (found by keyword meanwhile). A write that loses to concurrent writes of the
    same memories is run again by the server; 503 `busy` (Retry-After) only when every attempt lost."""
    scope = key_scope(request)
    for memory in payload.memories:
        scope.named_user(memory.user_id)
    # Small batches are embedded in the request; larger ones after commit, by a worker.
    inline = len(payload.memories) <= settings.ZEROMEMORY_INLINE_EMBED_MAX
    result = services.memories_ingest(
        tenant_id=scope.tenant_id, items=[services.MemoryInput(**m.model_dump()) for m in payload.memories],
        embed=inline, idempotency_key=idempotency_key(request))
    if not inline and result.created:
        enqueue_on_commit(memories_embed_task.name, memory_ids=[str(i) for i in result.ids])
    if result.created:  # the language reader's parse, once, by a worker: the request never waits on it
        enqueue_on_commit(memories_parse_task.name, memory_ids=[str(i) for i in result.ids])
    return Status(201, result.as_json())


@router.get("/memories", response={200: PageOut, **errors(400)}, summary="List memories")
def memories_list(request: HttpRequest, filters: Query[ListQuery]) -> dict[str, Any]:
    """Filtered by user, entity, namespace, type, state and creation time; newest first. Follow `next_cursor` for
    the next page (400 invalid_cursor for a cursor this API did not give)."""
    key = key_scope(request)
    scope = MemoryFilter(tenant_id=key.tenant_id, user_id=key.user(filters.user_id), entity_id=filters.entity_id,
                         namespace=filters.namespace,
                         memory_types=[filters.memory_type] if filters.memory_type else None,
                         states=[filters.state] if filters.state else None,
                         created_after=filters.created_after, created_before=filters.created_before)
    page, next_cursor = selectors.memories_page(scope=scope, cursor=filters.cursor, limit=filters.limit)
    return {"memories": page, "next_cursor": next_cursor}


# Registered before /memories/{memory_id}, so "by-key" is never read as a memory id.
@router.put("/memories/by-key", response={200: KeyedOut, 201: KeyedOut, **errors(*BODY, 503)},
            summary="Store or replace the memory of a key")
def memory_put_by_key_view(request: HttpRequest, payload: KeyedMemoryIn) -> Status[dict[str, Any]]:
    """One memory per (user, entity, namespace, key), enforced by the database: 201 `created` when the key held
    nothing; else 200 `replaced`, the key's memory overwritten in place (same id and created_at; new content is
    re-embedded and what consolidation built from the old text is unwound, as PATCH does; every other field is set
    from the body, omitted ones to their defaults), or 200 `unchanged` when it already held exactly this (nothing
    written). Concurrent puts of one key are applied one after the other: the key ends with one memory, the last
    put's. Safe to retry. `created_at` applies to the key's first put only. A put that loses to a concurrent write
    (a delete of the same key between its insert and its lock) is run again by the server; 503 `busy` (Retry-After)
    only when every attempt lost."""
    scope = key_scope(request)
    fields = payload.model_dump()
    key = fields.pop("key")
    item = services.MemoryInput(**{**fields, "user_id": scope.named_user(payload.user_id)})
    put = memory_put_by_key(tenant_id=scope.tenant_id, key=key, item=item, actor=actor(request))
    if put.outcome != "unchanged":
        enqueue_on_commit(memories_parse_task.name, memory_ids=[str(put.memory.id)])
    return Status(201 if put.outcome == "created" else 200, {"outcome": put.outcome, "memory": put.memory})


@router.get("/memories/by-key", response={200: MemoryOut, **errors(400, 404)}, summary="Read the memory of a key")
def memory_read_by_key(request: HttpRequest, address: Query[MemoryKeyQuery]) -> Memory:
    """The memory a key names in its scope; 404 when the key holds none."""
    scope = key_scope(request)
    memory = selectors.memory_by_key(tenant_id=scope.tenant_id, user_id=scope.named_user(address.user_id),
                                     entity_id=address.entity_id, namespace=address.namespace, key=address.key)
    if memory is None:
        raise NotFound("no memory under this key")
    access_record([memory.id])
    return memory


@router.delete("/memories/by-key", response={200: ErasureOut, **errors(400, 503)},
               summary="Erase the memory of a key")
def memory_erase_by_key(request: HttpRequest, address: Query[MemoryKeyQuery]) -> dict[str, Any]:
    """Erases the key's memory as DELETE /memories/{id} does. Idempotent: a key that holds nothing (never put, or
    already erased) answers 200 with `deleted: 0`."""
    scope = key_scope(request)
    return memory_delete_by_key(tenant_id=scope.tenant_id, user_id=scope.named_user(address.user_id),
                                entity_id=address.entity_id, namespace=address.namespace, key=address.key,
                                actor=actor(request)).as_json()


@router.get("/memories/{memory_id}", response={200: MemoryDetailOut, **errors(404)}, summary="Read one memory")
def memories_read(request: HttpRequest, memory_id: uuid.UUID) -> Memory:
    """One memory with its sources, the memories a semantic memory was built from (a deleted source keeps its id
    and content hash). 404 for an id unknown in the key's tenant."""
    memory = key_scope(request).memory(memory_id)
    memory.sources = [{"source_memory_id": link.source_memory_id, "source_content_hash": link.source_content_hash,
                       "deleted": link.source is None, "content": link.source.content if link.source else None,
                       "state": link.source.state if link.source else None}
                      for link in selectors.memory_sources(memory=memory)]
    access_record([memory.id])
    return memory


@router.post("/search", response={200: SearchOut, **errors(*BODY)}, summary="Search memories")
def memories_search(request: HttpRequest, payload: SearchIn) -> dict[str, Any]:
    """Lexical first: BM25 over a candidate pool from the full-text and vector indexes, fused with cosine
    similarity. Active (raw) memories only unless `states` says otherwise: current knowledge.

    `as_of` answers what was true at that time, by the statements' own dates (valid_from ≤ as_of < valid_to),
    superseded statements included; `include_history` adds superseded and consolidated memories. Every result
    carries its `state`, `valid_from`, `valid_to`, `superseded_by` and `consolidated_at`."""
    key = key_scope(request)
    scope = MemoryFilter(tenant_id=key.tenant_id, user_id=key.user(payload.user_id), entity_id=payload.entity_id,
                         namespace=payload.namespace, memory_types=payload.memory_types, states=payload.states,
                         as_of=payload.as_of, include_history=payload.include_history)
    search = tenant_policy(request).search
    hits = selectors.memories_search(scope=scope, query=payload.query, top_k=payload.top_k, policy=search,
                                     min_score=search.min_score)
    access_record(h.memory.id for h in hits)
    return {"results": [{"memory": h.memory, "score": h.score, "bm25": h.bm25, "cosine": h.cosine,
                         "earlier_than": h.earlier_than, **validity(h.memory)} for h in hits]}


def validity(memory: Memory) -> dict[str, Any]:
    """The labels a history-aware read puts on each memory."""
    return {"state": memory.state, "valid_from": memory.valid_from or memory.created_at,
            "valid_to": memory.valid_to, "superseded_by": memory.superseded_by_id,
            "consolidated_at": memory.consolidated_at}


@router.get("/memories/{memory_id}/history", response={200: HistoryOut, **errors(404)},
            summary="Trace a memory's history")
def memory_history_view(request: HttpRequest, memory_id: uuid.UUID) -> dict[str, Any]:
    """Where a memory came from and what happened to it: its provenance (what it was built from, transitively),
    the memories built from it, what superseded it or what it superseded (and every other relation), the ledger
    trail of every change that named it, and the runs behind those changes with the retrieval safety net's
    figures. 404 for an id unknown to the key."""
    history = memory_history(memory=key_scope(request).memory(memory_id))
    memory = history.memory
    superseded_by = memory.superseded_by
    return {
        "memory": memory,
        "sources": [provenance_json(link) for link in history.sources],
        "cited_by": [history_memory_json(m) for m in history.cited_by],
        "superseded_by": history_memory_json(superseded_by) if superseded_by else None,
        "supersedes": [history_memory_json(r.to_memory) for r in history.relations
                       if r.relation_type == RelationType.SUPERSEDES and r.from_memory_id == memory.id],
        "relations": [relation_json(r, memory.id) for r in history.relations],
        "ledger": [{"id": e.id, "action": e.action, "actor": e.actor, "run_id": e.run_id, "reason": e.reason,
                    "created_at": e.created_at, "undoable": e.undoable, "undone": e.undone_by_id is not None}
                   for e in history.ledger],
        "runs": [{"run_id": run.id, "kind": run.kind, "status": run.status, "trigger": run.trigger,
                  "created_at": run.created_at, "started_at": run.started_at, "finished_at": run.finished_at,
                  "error": run.error, "canaries": run.result.get("canaries") or None} for run in history.runs],
    }


def provenance_json(link: ProvenanceLink) -> dict[str, Any]:
    source = link.source
    return {"source_memory_id": link.source_memory_id, "cited_by": link.cited_by, "depth": link.depth,
            "source_content_hash": link.source_content_hash, "deleted": source is None,
            "content": source.content if source else None, "memory_type": source.memory_type if source else None,
            "state": source.state if source else None, "created_at": source.created_at if source else None}


def history_memory_json(memory: Memory) -> dict[str, Any]:
    return {"id": memory.id, "content": memory.content, "memory_type": memory.memory_type, "state": memory.state,
            "created_at": memory.created_at, "valid_to": memory.valid_to}


def relation_json(relation: MemoryRelation, memory_id: uuid.UUID) -> dict[str, Any]:
    outgoing = relation.from_memory_id == memory_id
    return {"relation_type": relation.relation_type, "direction": "outgoing" if outgoing else "incoming",
            "memory": history_memory_json(relation.to_memory if outgoing else relation.from_memory),
            "flagged": relation.flagged, "reason": str(relation.metadata.get("reason", "")),
            "created_at": relation.created_at}


@router.delete("/memories/{memory_id}", response={200: ErasureOut, **errors(404, 503)}, summary="Erase one memory")
def memory_erase(request: HttpRequest, memory_id: uuid.UUID) -> dict[str, Any]:
    """The memory and everything built from it: the semantic memories citing it are erased too (their other
    sources become active again), profile items citing them are removed and their text is scrubbed from the
    ledger and run results. Answers the counts."""
    scope = key_scope(request)
    scope.memory(memory_id)
    return memories_erase(tenant_id=scope.tenant_id, memory_ids=[memory_id], actor=actor(request),
                          reason="erasure request").as_json()


@router.patch("/memories/{memory_id}", response={200: MemoryOut, **errors(*BODY, 404, 409, 503)},
              summary="Correct a memory")
def memory_update(request: HttpRequest, memory_id: uuid.UUID, payload: CorrectIn) -> Memory:
    """New content: re-embedded, search counters updated, what was built from the old text unwound, a ledger row
    with the old and new hash, `memory.updated`. 409 when the same content is already stored in the memory's
    session."""
    scope = key_scope(request)
    scope.memory(memory_id)
    try:
        memory_correct(tenant_id=scope.tenant_id, memory_id=memory_id, content=payload.content,
                       actor=actor(request))
    except IntegrityError as exc:  # the session's unique content hash: not a conflict anywhere else
        raise Conflict("the same content is already stored in this memory's session") from exc
    return Memory.objects.get(id=memory_id)


@router.post("/memories/{memory_id}/feedback", response={200: FeedbackOut, **errors(*BODY, 404)},
             summary="Say whether a memory helped")
def memory_feedback_view(request: HttpRequest, memory_id: uuid.UUID, payload: FeedbackIn) -> dict[str, Any]:
    """`{"useful": true|false}` moves the memory's reward a share of the way towards +1 or −1 (the tenant's
    policy's lifecycle.feedback_step, 0.2 by default); consolidation reads it into stability."""
    scope = key_scope(request)
    scope.memory(memory_id)
    reward = memory_feedback(tenant_id=scope.tenant_id, memory_id=memory_id, useful=payload.useful,
                             actor=actor(request), step=tenant_policy(request).lifecycle.feedback_step)
    return {"id": memory_id, "reward_score": reward}


# --- profiles and context ------------------------------------------------------------------------------------

@router.get("/profile", response={200: ProfileOut, **errors(404)}, summary="Read a profile")
def profile_read(request: HttpRequest, filters: Query[ProfileQuery]) -> dict[str, Any]:
    """What reflection learnt about a user and entity (omit entity_id for the user-wide profile): preferences,
    behaviors, facts and a summary. 404 until a reflection has written one.

    `static` and `recent` hold the items strongest first (weight, else confidence), split by when each was first
    said: within the last 30 days (the tenant's policy's profile.recent_days) is recent. With `budget_chars`, the
    summary and then the strongest items that fit, each whole, never past the budget (the summary is "" when it
    does not fit); preferences, behaviors and facts stay whole."""
    scope = key_scope(request)
    profile = profile_get(tenant_id=scope.tenant_id, user_id=scope.named_user(filters.user_id),
                          entity_id=filters.entity_id, namespace=filters.namespace)
    if profile is None:
        raise NotFound("no profile for this user/entity yet")
    view = profile_view(profile=profile, budget_chars=filters.budget_chars, now=timezone.now(),
                        recent_days=tenant_policy(request).profile.recent_days)
    return {"user_id": profile.user_id, "entity_id": profile.entity_id or None, "namespace": profile.namespace,
            "preferences": profile.preferences, "behaviors": profile.behaviors, "facts": profile.facts,
            "summary": view.summary, "static": view.static, "recent": view.recent,
            "budget_chars": filters.budget_chars, "version": profile.version, "updated_at": profile.updated_at}


@router.post("/context", response={200: ContextOut, **errors(*BODY)}, summary="Build the context for a prompt")
def context(request: HttpRequest, payload: ContextIn) -> dict[str, Any]:
    """What an agent injects into its prompt: the profile's summary and items (most confident first, at most half
    the budget), then the best search results in rank order, each taken whole, never past `budget_chars`. No
    sentence appears twice: an item the summary already says is left out, and a memory shows only its sentences
    not said above (one with none left is left out, of `memories` too).

    `as_of` builds it from what was true at that time (as POST /search), without the profile (today's knowledge);
    `include_history` adds superseded and consolidated memories, a superseded one's line saying since when it no
    longer holds."""
    scope = key_scope(request)
    built = context_build(tenant_id=scope.tenant_id, user_id=scope.named_user(payload.user_id),
                          entity_id=payload.entity_id, namespace=payload.namespace, query=payload.query,
                          budget_chars=payload.budget_chars, policy=tenant_policy(request), as_of=payload.as_of,
                          include_history=payload.include_history)
    profile = built.profile
    access_record(h.memory.id for h in built.hits)
    return {"context": built.text, "chars": len(built.text), "budget_chars": payload.budget_chars,
            "profile": None if profile is None else {
                "entity_id": profile.entity_id or None, "version": profile.version, "summary": profile.summary,
                "items": built.profile_items},
            "memories": [{"id": h.memory.id, "content": h.memory.content, "memory_type": h.memory.memory_type,
                          "created_at": h.memory.created_at, "score": h.score, "earlier_than": h.earlier_than,
                          **validity(h.memory)}
                         for h in built.hits]}


# --- reflection and runs -------------------------------------------------------------------------------------

@router.post("/reflect", response={200: ReflectOut, 202: RunAcceptedOut, **errors(*BODY, 404, 409, 503)},
             summary="Reflect now")
def reflect(request: HttpRequest, payload: ReflectIn, options: Query[ReflectQuery]) -> Status[dict[str, Any]]:
    """Reflect on an entity (or, with user_id alone, on the user's memories without an entity) now, without the
    threshold; `"force": true` also reflects the current session. A request meeting a run of the same scope joins
    it; a forced one never gets an unforced result (the run is upgraded, or a forced run follows it).

    200 with the result when the run ends within ZEROMEMORY_REFLECT_WAIT_SECONDS; 202 `{run_id, status}` when no
    worker claims the run within 2 s, past the wait, or at once with `?async=1`. 404: no memories for this scope;
    400: the entity spans several users (pass user_id); 409 with Retry-After: a clustering run held the user's
    memories for the whole wait; 503: the run failed (the LLM down, the budget spent)."""
    key = key_scope(request)
    scope = reflection_scope_resolve(tenant_id=key.tenant_id, namespace=payload.namespace,
                                     entity_id=payload.entity_id, user_id=key.user(payload.user_id))
    run = reflection_request(scope=scope, trigger=RunTrigger.API, force=payload.force,
                             wait_seconds=0.0 if options.async_ else settings.ZEROMEMORY_REFLECT_WAIT_SECONDS)
    if options.async_ or run.status in ACTIVE_STATUSES:
        return Status(202, {"run_id": run.id, "status": run.status})
    if run.status != RunStatus.SUCCEEDED:
        raise ApiError(503, "error", f"reflection {run.status}: {run.error or 'no reason recorded'} (run {run.id})")
    return Status(200, {**reflection_answer(run), "usage": usage_json(run)})


@router.get("/runs", response={200: RunsPageOut, **errors(400)}, summary="List runs")
def runs_list(request: HttpRequest, filters: Query[RunsQuery]) -> dict[str, Any]:
    """The tenant's runs, newest first: follow what a session end, a reflect request or the schedules started.
    Each carries its `usage` (LLM calls, tokens, cost)."""
    key = key_scope(request)
    scope = RunFilter(tenant_id=key.tenant_id, user_id=key.user(filters.user_id), entity_id=filters.entity_id,
                      kind=filters.kind, status=filters.status)
    page, next_cursor = runs_page(scope=scope, cursor=filters.cursor, limit=filters.limit)
    return {"runs": [run_json(run) for run in page], "next_cursor": next_cursor}


@router.get("/runs/{run_id}", response={200: RunOut, **errors(404)}, summary="Read a run")
def run_read(request: HttpRequest, run_id: uuid.UUID) -> dict[str, Any]:
    """Any run of the tenant: status, progress (`calls_done` / `calls_planned`), tokens, `usage` (LLM calls, tokens,
    cost), error, and the result once finished."""
    return run_json(key_scope(request).run(run_id))


def run_json(run: ConsolidationRun) -> dict[str, Any]:
    finished = run.status not in ACTIVE_STATUSES
    return {"run_id": run.id, "kind": run.kind, "status": run.status, "user_id": run.user_id,
            "entity_id": run.entity_id, "namespace": run.namespace, "trigger": run.trigger, "model": run.model,
            "created_at": run.created_at, "started_at": run.started_at, "finished_at": run.finished_at,
            "progress": {"calls_done": int(run.result.get("calls_done", 0)),
                         "calls_planned": int(run.result.get("calls_planned", 0))},
            "llm_calls": run.llm_calls, "prompt_tokens": run.prompt_tokens,
            "completion_tokens": run.completion_tokens, "usage": usage_json(run), "error": run.error,
            "result": run_result(run) if finished else None}


def usage_json(run: ConsolidationRun) -> dict[str, Any]:
    return {"llm_calls": run.llm_calls, "prompt_tokens": run.prompt_tokens,
            "completion_tokens": run.completion_tokens, "cost_usd": float(run.cost_usd)}


def run_result(run: ConsolidationRun) -> dict[str, Any]:
    if run.kind == RunKind.REFLECTION:
        return reflection_answer(run)
    return {"reviewed": run.reviewed, "clusters": run.clusters, "merged": run.merged, "created": run.created,
            "superseded": run.superseded, "omission_checked": run.omission_checked, "omissions": run.omissions,
            "held": run.held}


# --- erasure and sessions ------------------------------------------------------------------------------------

@router.post("/forget", response={200: ErasureOut, **errors(*BODY, 503)}, summary="Forget a user or an entity")
def forget(request: HttpRequest, payload: ForgetIn) -> dict[str, Any]:
    """`{"user_id"}` forgets a user, `{"entity_id"}` (optionally with user_id) an entity: every memory about them,
    what was derived from them, their profiles, and their text in ledger rows and run results."""
    scope = key_scope(request)
    return scope_erase(tenant_id=scope.tenant_id, actor=actor(request), user_id=scope.user(payload.user_id),
                       entity_id=payload.entity_id)


@router.post("/sessions/{session_id}/end", response={202: SessionEndOut, **errors(*BODY)}, summary="End a session")
def session_end_view(request: HttpRequest, path: Path[SessionPath], payload: SessionEndIn) -> Status[dict[str, Any]]:
    """The first time, enqueues one consolidation pass for the user (a forced clustering run, then reflection of
    the entities that became eligible) and answers that clustering run; again later, `queued: false` and
    `run_ids: []` (nothing runs twice)."""
    scope = key_scope(request)
    ended = session_end(tenant_id=scope.tenant_id, user_id=scope.named_user(payload.user_id),
                        session_id=path.session_id)
    return Status(202, {"session_id": path.session_id, "user_id": payload.user_id, "queued": ended.queued,
                        "run_ids": list(ended.run_ids)})


api.add_router("/", router)
