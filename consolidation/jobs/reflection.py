"""The reflection job for one scope (an entity, or a user's memories without an entity): batches of inputs go to
the reflection model; what it finds becomes semantic memories, a digest and profile items (ARCHITECTURE.md, "Jobs").

Calls run with bounded concurrency; each call's result is written in its own transaction that renews the run's
lease, writes the insight memories and the digest with their source links, moves the episodes sent to
consolidated (conditional: a memory another writer moved first aborts the whole call), marks semantic inputs
reflected, merges the profile, charges the tokens and writes the ledger; events go out after commit. A call that
fails (invalid output after one repair) writes nothing but its token usage: its memories stay as they were.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from consolidation.domain import extraction
from consolidation.domain.insights import (
    MEMORY_KIND,
    Candidate,
    Insight,
    InvalidOutput,
    Reflection,
    Source,
    build_messages,
    keep_durable,
    parse_reply,
    plan_batches,
    repair_messages,
)
from consolidation.domain.merging import Member, merge_cluster
from consolidation.domain.reflection_rules import reflect_extractive
from consolidation.jobs.safety import canary_baseline, safety_check
from consolidation.ledger import ledger_write, memory_transition, profile_change_record, semantic_snapshot
from consolidation.models import ConsolidationRun, RunKind, RunStatus
from consolidation.runs import LeaseLost, RunOutcome, run_fence, run_finish, run_in_process, run_progress
from consolidation.selectors import MemoryRow, ReflectionScope, reflection_candidates
from profiles.services import ProfileItem, profile_merge
from zeromem.core.adapters import llm
from zeromem.core.adapters.embeddings import Vector, embed_texts
from zeromem.core.domain.entities import extract_entities
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.core.events import event_emit
from zeromem.core.selectors import llm_tokens_this_month
from zeromem.core.services import content_hash, llm_usage_add, search_stats_add
from zeromem.models import Memory, MemoryKind, MemoryRelation, MemorySource, MemoryState, MemoryType, Tenant

EXTRACTIVE = "builtin:extractive"
Progress = Callable[[int, int], None]  # (calls done, calls planned)


# --- model resolution and budget -----------------------------------------------------------------------------

def reflection_model(tenant: Tenant) -> str:
    """ZEROMEMORY_REFLECTION_MODEL, else the tenant's first allowed model whose provider is configured, else the
    default (the built-in extractive engine unless configured otherwise)."""
    if settings.ZEROMEMORY_REFLECTION_MODEL:
        return str(settings.ZEROMEMORY_REFLECTION_MODEL)
    for model in tenant.allowed_models or []:
        if isinstance(model, str) and model.strip() and llm.model_configured(model.strip()):
            return model.strip()
    return str(settings.ZEROMEMORY_DEFAULT_REFLECTION_MODEL)


def budget_refusal(tenant: Tenant, model: str) -> str:
    """Why this tenant may not spend LLM tokens now ("" when it may). Built-in engines cost nothing."""
    if llm.is_builtin(model) or tenant.monthly_token_budget is None:
        return ""
    used = llm_tokens_this_month(tenant_id=tenant.id)
    if used < tenant.monthly_token_budget:
        return ""
    return (f"monthly token budget exhausted: {used} of {tenant.monthly_token_budget} tokens used this month; "
            f"reflection skipped")


# --- one call ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CallResult:
    reflection: Reflection | None  # None: the call failed and writes nothing
    usage: llm.Usage
    repairs: int = 0
    error: str = ""


def reflect_call(model: str, subject: str, sources: Sequence[Source]) -> CallResult:
    """One reflection call (no database access: it may run in a worker thread). Raises llm.LLMUnavailable /
    llm.LLMError; invalid output gets one repair attempt, then the call fails."""
    if model == EXTRACTIVE:
        return CallResult(reflect_extractive(subject, sources), llm.Usage())
    if llm.is_builtin(model):
        raise llm.LLMError(f"unknown built-in reflection engine {model!r} (known: {EXTRACTIVE})")
    messages = build_messages(subject, sources)
    first = llm.complete(model=model, messages=messages)
    try:
        return CallResult(parse_reply(first.text), first.usage)
    except InvalidOutput as exc:
        repaired = llm.complete(model=model, messages=repair_messages(messages, first.text, str(exc)))
    usage = first.usage + repaired.usage
    try:
        return CallResult(parse_reply(repaired.text), usage, repairs=1)
    except InvalidOutput as exc:
        return CallResult(None, usage, repairs=1, error=f"invalid output after one repair: {exc}")


# --- writing one call's result -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Batch:
    rows: list[MemoryRow]  # the memories sent, in short-id order (short id = position + 1)

    @property
    def sources(self) -> list[Source]:
        return [Source(n, r.content, r.created_at) for n, r in enumerate(self.rows, 1)]

    def row(self, number: int) -> MemoryRow:
        """The memory behind one of the short ids the model sees."""
        return self.rows[number - 1]

    def picked(self, numbers: Sequence[int]) -> list[MemoryRow]:
        return [self.row(n) for n in numbers]

    def ids(self, numbers: Sequence[int]) -> list[uuid.UUID]:
        return [r.id for r in self.picked(numbers)]

    @property
    def episodes(self) -> list[MemoryRow]:
        return [r for r in self.rows if not r.is_semantic]


@dataclass(frozen=True)
class Passage:
    text: str
    numbers: list[int]  # short ids of the episodes it stands for


@dataclass(frozen=True)
class Digest:
    text: str  # the model's summary, or a fallback saying what was reviewed


@dataclass(frozen=True)
class Draft:
    """One semantic memory a call writes: what it states, with the vector of its own text (None: not embedded)."""

    what: Insight | Digest | Passage
    vector: Vector | None

    @staticmethod
    def text_of(what: Insight | Digest | Passage) -> str:
        return what.statement if isinstance(what, Insight) else what.text


@dataclass(frozen=True)
class Written:
    memory: Memory
    insight: Insight | None = None  # the insight the memory states
    before: dict[str, Any] | None = None  # an existing insight corroborated: what an undo puts back


def call_drafts(kept: Reflection, digest: str, passages: Sequence[Passage]) -> list[Draft]:
    """The insights, the digest and the condensed passages, in the order they are written, embedded in one call
    (outside any transaction)."""
    wanted: list[Insight | Digest | Passage] = [*kept.insights, Digest(digest), *passages]
    vectors = embed_texts([Draft.text_of(what) for what in wanted])
    return [Draft(what, vector) for what, vector in zip(wanted, vectors, strict=True)]


def _write_call(*, run: ConsolidationRun, worker: str, scope: ReflectionScope, batch: Batch, result: CallResult,
                model: str) -> list[str]:
    """Write one successful call; returns the statements kept."""
    assert result.reflection is not None
    kept = keep_durable(result.reflection, batch.sources, min_confidence=settings.ZEROMEMORY_REFLECTION_MIN_CONFIDENCE)
    drafts = call_drafts(kept, kept.summary or _fallback_digest(scope, batch), condensed_passages(batch))
    now = timezone.now()
    with transaction.atomic():
        run_fence(run_id=run.id, worker=worker)
        written = [_write_draft(run, scope, batch, draft, model, now) for draft in drafts]
        created = [w.memory for w in written if w.before is None]
        corroborated = [w.before for w in written if w.before is not None]
        search_stats_add(memory_ids=[m.id for m in created])
        _retire_inputs(run, scope, batch, now)
        profile_change = profile_merge(
            tenant_id=scope.tenant_id, user_id=scope.user_id, entity_id=scope.entity_id, namespace=scope.namespace,
            items=_profile_items(scope, batch, written), summary=kept.summary,
            summary_source_ids=[str(r.id) for r in batch.rows])
        if profile_change is not None:
            profile_change_record(change=profile_change, run_id=run.id, actor=f"run:{run.id}")
        profile_updated = profile_change is not None
        _ledger(run, scope, batch, kept, [w.memory for w in written], model, result, created=created,
                corroborated=corroborated)
        _charge(run, scope, result, reviewed=len(batch.rows), created=len(created),
                insights=[i.statement for i in kept.insights], profile_updated=profile_updated)
        for memory in (w.memory for w in written):
            event_emit(event="memory.semantic.updated", tenant_id=scope.tenant_id, data={
                "semantic_id": str(memory.id), "user_id": scope.user_id, "created": memory in created,
                "reflection": True,
                "source_ids": [str(s) for s in memory.metadata["source_ids"]]})
    return [i.statement for i in kept.insights]


def _write_draft(run: ConsolidationRun, scope: ReflectionScope, batch: Batch, draft: Draft, model: str,
                 now: datetime) -> Written:
    what = draft.what
    if isinstance(what, Insight):
        return _insight_memory(run, scope, batch, what, draft.vector, model, now)
    if isinstance(what, Digest):
        rows = batch.rows
        tags, extra = ["reflection", "digest"], {"model": model}
    else:
        rows = batch.picked(what.numbers)
        tags, extra = ["reflection", "condensed"], {}
    return Written(_semantic(run, scope, batch, content=what.text, vector=draft.vector, now=now,
                             sources=[r.id for r in rows], kind=MemoryKind.OBSERVATION,
                             importance=max(r.importance for r in rows), confidence=0.7, tags=tags, extra=extra))


def _profile_items(scope: ReflectionScope, batch: Batch, written: Sequence[Written]) -> list[ProfileItem]:
    return [ProfileItem(w.insight.category, w.insight.subject or scope.subject, w.insight.statement,
                        w.insight.confidence, tuple(str(x) for x in batch.ids(w.insight.sources)), str(w.memory.id))
            for w in written if w.insight is not None]


def condensed_passages(batch: Batch) -> list[Passage]:
    """What the batch's episodes say, condensed the way clustering merges (redundant sentences and small talk
    dropped, relative dates anchored), in passages of at most ZEROMEMORY_MERGED_MAX_CHARS characters. The
    episodes leave search once reflected; a summary and a few insights alone would lose what they said, and
    the retrieval safety net would undo the run."""
    numbers = [n for n, r in enumerate(batch.rows, 1) if not r.is_semantic]
    if not numbers:
        return []
    members = [Member(r.content, r.created_at.date()) for r in batch.picked(numbers)]
    chunks = merge_cluster(members, limit=settings.ZEROMEMORY_MERGED_MAX_CHARS)
    return [Passage(chunk.text, [numbers[m] for m in chunk.members]) for chunk in chunks]


def _fallback_digest(scope: ReflectionScope, batch: Batch) -> str:
    first = min(r.created_at for r in batch.rows).date().isoformat()
    last = max(r.created_at for r in batch.rows).date().isoformat()
    return f"{scope.subject}: {len(batch.rows)} memories from {first} to {last} reviewed; nothing durable found."


def _insight_memory(run: ConsolidationRun, scope: ReflectionScope, batch: Batch, insight: Insight,
                    vector: Vector | None, model: str, now: datetime) -> Written:
    """A new insight memory (before = None), or the active one that already states exactly this, which gains
    the new sources (before = what an undo puts back)."""
    existing = (Memory.objects.select_for_update()
                .filter(tenant_id=scope.tenant_id, user_id=scope.user_id, entity_id=scope.entity_id,
                        namespace=scope.namespace, memory_type=MemoryType.SEMANTIC, state=MemoryState.RAW,
                        content_hash=content_hash(insight.statement), tags__contains=["insight"]).first())
    if existing is not None:
        return Written(existing, insight, _corroborate(existing, batch, batch.ids(insight.sources),
                                                       insight.confidence))
    memory = _semantic(run, scope, batch, content=insight.statement, vector=vector, now=now,
                       sources=batch.ids(insight.sources), kind=MEMORY_KIND[insight.category], importance=0.8,
                       confidence=insight.confidence, tags=["reflection", "insight", insight.category],
                       extra={"category": insight.category, "subject": insight.subject, "model": model})
    return Written(memory, insight)


def _corroborate(memory: Memory, batch: Batch, sources: Sequence[uuid.UUID], confidence: float) -> dict[str, Any]:
    """Add the new sources to an existing insight; returns its fields before, and the links added."""
    cited = set(sources)
    linked = set(MemorySource.objects.filter(memory=memory).values_list("source_memory_id", flat=True))
    rows = [r for r in batch.rows if r.id in cited]
    before = {"id": str(memory.id), "added_source_ids": [str(r.id) for r in rows if r.id not in linked],
              **semantic_snapshot(memory, ["metadata", "corroboration_count", "confidence"])}
    MemorySource.objects.bulk_create([MemorySource(memory=memory, source_id=r.id, source_memory_id=r.id,
                                                   source_content_hash=r.content_hash) for r in rows],
                                     ignore_conflicts=True)
    ids = list(dict.fromkeys([*memory.metadata.get("source_ids", []), *(str(r.id) for r in rows)]))
    memory.metadata = {**memory.metadata, "source_ids": ids, "source_count": len(ids)}
    memory.corroboration_count, memory.confidence = len(ids), max(memory.confidence, confidence)
    memory.save(update_fields=["metadata", "corroboration_count", "confidence", "updated_at"])
    return before


def _semantic(run: ConsolidationRun, scope: ReflectionScope, batch: Batch, *, content: str,
              vector: Vector | None, now: datetime, sources: Sequence[uuid.UUID], kind: str, importance: float,
              confidence: float, tags: list[str], extra: dict[str, Any]) -> Memory:
    cited = set(sources)
    rows = [r for r in batch.rows if r.id in cited]
    memory = Memory.objects.create(
        tenant_id=scope.tenant_id, user_id=scope.user_id, entity_id=scope.entity_id, namespace=scope.namespace,
        window=batch.rows[0].window, memory_type=MemoryType.SEMANTIC, kind=kind, content=content,
        content_hash=content_hash(content), embedding=vector, entities=extract_entities(content)[:50], tags=tags,
        importance=importance, confidence=confidence, corroboration_count=len(rows), created_at=now,
        valid_from=min(r.created_at for r in rows), reflected_at=now,
        metadata={"source_type": "consolidated", "source_count": len(rows), "run_id": str(run.id),
                  "source_ids": [str(r.id) for r in rows], **extra})
    MemorySource.objects.bulk_create([MemorySource(memory=memory, source_id=r.id, source_memory_id=r.id,
                                                   source_content_hash=r.content_hash) for r in rows])
    return memory


def _retire_inputs(run: ConsolidationRun, scope: ReflectionScope, batch: Batch, now: Any) -> None:
    """Episodes sent → consolidated; semantic inputs sent → reflected (they stay active). All or nothing."""
    episodes = [r.id for r in batch.episodes]
    semantic = [r.id for r in batch.rows if r.is_semantic]
    if episodes:
        memory_transition(tenant_id=scope.tenant_id, memory_ids=episodes, operation="consolidate",
                          actor=f"run:{run.id}", run_id=run.id, reason="reflected into semantic memories")
    marked = (Memory.objects.filter(id__in=semantic, state=MemoryState.RAW, reflected_at__isnull=True)
              .update(reflected_at=now))
    if marked != len(semantic):
        raise TransitionRefused("a semantic input changed while it was being reflected; nothing of this call "
                                "was written")


def _ledger(run: ConsolidationRun, scope: ReflectionScope, batch: Batch, kept: Reflection, written: list[Memory],
            model: str, result: CallResult, *, created: list[Memory], corroborated: list[dict[str, Any]]) -> None:
    ledger_write(
        tenant_id=scope.tenant_id, action="reflection", actor=f"run:{run.id}", run_id=run.id, user_id=scope.user_id,
        memory_ids=[r.id for r in batch.rows],
        inputs={"entity_id": scope.entity_id, "namespace": scope.namespace, "model": model,
                "sent": [{"id": str(r.id), "content_hash": r.content_hash} for r in batch.rows]},
        outputs={"semantic_ids": [str(m.id) for m in written], "created_ids": [str(m.id) for m in created],
                 "corroborated": corroborated,
                 "items": [{"category": i.category, "statement": i.statement, "confidence": i.confidence,
                            "source_ids": [str(x) for x in batch.ids(i.sources)]} for i in kept.insights],
                 "summary": kept.summary},
        reason="reflection over the entity's unreflected memories",
        scores={"prompt_tokens": result.usage.prompt_tokens, "completion_tokens": result.usage.completion_tokens,
                "repairs": result.repairs})


def _charge(run: ConsolidationRun, scope: ReflectionScope, result: CallResult, *, reviewed: int = 0,
            created: int = 0, insights: Sequence[str] = (), profile_updated: bool = False) -> None:
    """Counters of the run (incremented, so a retried run keeps what earlier attempts wrote) and the tenant."""
    usage = result.usage
    ConsolidationRun.objects.filter(pk=run.id).update(
        reviewed=F("reviewed") + reviewed, created=F("created") + created, llm_calls=F("llm_calls") + usage.calls,
        prompt_tokens=F("prompt_tokens") + usage.prompt_tokens,
        completion_tokens=F("completion_tokens") + usage.completion_tokens,
        cost_usd=F("cost_usd") + Decimal(str(round(usage.cost_usd, 6))))
    current = ConsolidationRun.objects.select_for_update().get(pk=run.id).result
    run_progress(run_id=run.id, calls_done=current.get("calls_done", 0) + 1,
                 insights=[*current.get("insights", []), *insights],
                 profile_updated=bool(current.get("profile_updated")) or profile_updated,
                 repairs=current.get("repairs", 0) + result.repairs,
                 failed_calls=current.get("failed_calls", 0) + (result.reflection is None),
                 errors=[*current.get("errors", []), *([result.error] if result.error else [])][-20:])
    llm_usage_add(tenant_id=scope.tenant_id, purpose="reflection", usage=usage)


def _record_failed_call(run: ConsolidationRun, worker: str, scope: ReflectionScope, result: CallResult) -> None:
    with transaction.atomic():
        run_fence(run_id=run.id, worker=worker)
        _charge(run, scope, result)


# --- running -------------------------------------------------------------------------------------------------

def scope_of(run: ConsolidationRun) -> ReflectionScope:
    return ReflectionScope(run.tenant_id, run.user_id, run.entity_id, run.namespace or "global")


def plan_reflection(scope: ReflectionScope, *, force: bool) -> list[Batch]:
    recent, size = settings.ZEROMEMORY_REFLECTION_WINDOW, settings.ZEROMEMORY_REFLECTION_BATCH
    max_calls = settings.ZEROMEMORY_REFLECTION_MAX_CALLS
    rows = reflection_candidates(scope, force=force, limit=recent + size * max_calls)
    plan = plan_batches([Candidate(r.created_at, r.importance, r.window) for r in rows], recent=recent,
                        size=size, min_remaining=settings.ZEROMEMORY_REFLECTION_MIN_REMAINING, max_calls=max_calls)
    return [Batch(sorted([rows[i] for i in indexes], key=lambda r: r.created_at)) for indexes in plan]


def reflection_execute(*, run: ConsolidationRun, worker: str, force: bool = False,
                       progress: Progress | None = None) -> ConsolidationRun:
    """Do the work of a claimed reflection run and close it. Raises llm.LLMUnavailable (the run stays claimed:
    the caller releases it for a retry, or fails it); a lost lease stops the run without closing it."""
    tenant = Tenant.objects.get(id=run.tenant_id)
    scope = scope_of(run)
    model = reflection_model(tenant)
    ConsolidationRun.objects.filter(pk=run.id).update(model=model)
    refusal = budget_refusal(tenant, model)
    if refusal:
        return run_finish(run_id=run.id, worker=worker, status=RunStatus.SKIPPED, error=refusal)
    batches = plan_reflection(scope, force=force)
    with transaction.atomic():
        run_progress(run_id=run.id, calls_planned=run.result.get("calls_done", 0) + len(batches),
                     entity_id=scope.entity_id, user_id=scope.user_id)
    rows = [row for batch in batches for row in batch.rows]
    baseline = canary_baseline(run=run, consolidating=[r for r in rows if not r.is_semantic], neighbours=rows)
    try:
        if settings.ZEROMEMORY_EXTRACTION_PHASE and not llm.is_builtin(model):
            _extraction_phase(run, worker, scope, model, rows)
        _write_all(run, worker, scope, model, batches, progress)
        failure = safety_check(run=run, worker=worker, baseline=baseline)
    except LeaseLost:
        return ConsolidationRun.objects.get(pk=run.id)
    except llm.LLMUnavailable:
        raise
    except llm.LLMError as exc:
        return run_finish(run_id=run.id, worker=worker, status=RunStatus.FAILED, error=str(exc))
    if failure:
        return run_finish(run_id=run.id, worker=worker, status=RunStatus.FAILED, error=failure)
    return _finish(run, worker)


def _write_all(run: ConsolidationRun, worker: str, scope: ReflectionScope, model: str, batches: list[Batch],
               progress: Progress | None) -> None:
    concurrency = 1 if llm.is_builtin(model) else None
    results = llm.map_bounded(lambda b: reflect_call(model, scope.subject, b.sources), batches,
                              concurrency=concurrency)
    for done, (batch, result) in enumerate(zip(batches, results, strict=True), 1):
        if isinstance(result, Exception):
            raise result
        if result.reflection is None:
            _record_failed_call(run, worker, scope, result)
        else:
            try:
                _write_call(run=run, worker=worker, scope=scope, batch=batch, result=result, model=model)
            except TransitionRefused:
                _record_failed_call(run, worker, scope, CallResult(None, result.usage, result.repairs,
                                                                   "another writer moved these memories first"))
        if progress:
            progress(done, len(batches))


# --- the optional extraction phase ---------------------------------------------------------------------------

def _extraction_phase(run: ConsolidationRun, worker: str, scope: ReflectionScope, model: str,
                      rows: list[MemoryRow]) -> None:
    """Kind, entities and typed relations for this run's inputs, 10 memories a call (counted apart from the
    reflection calls). An invalid reply changes nothing."""
    chunks = [rows[i:i + extraction.BATCH] for i in range(0, len(rows), extraction.BATCH)]

    def call(chunk: list[MemoryRow]) -> llm.Completion:
        return llm.complete(model=model, messages=extraction.build_messages(Batch(chunk).sources))

    for chunk, completion in zip(chunks, llm.map_bounded(call, chunks), strict=True):
        if isinstance(completion, Exception):
            raise completion
        try:
            labels, relations = extraction.parse_reply(completion.text, range(1, len(chunk) + 1))
        except InvalidOutput:
            labels, relations = [], []
        with transaction.atomic():
            run_fence(run_id=run.id, worker=worker)
            _write_labels(run, scope, Batch(chunk), labels, relations)
            _charge_extraction(run, scope, completion.usage, labelled=len(labels), related=len(relations))


def _write_labels(run: ConsolidationRun, scope: ReflectionScope, batch: Batch, labels: list[extraction.Labels],
                  relations: list[extraction.Relation]) -> None:
    changes = []
    for label in labels:
        memory = Memory.objects.get(id=batch.row(label.number).id)
        entities = list(dict.fromkeys([*memory.entities, *label.entities]))[:50]
        if (memory.kind, memory.entities) != (label.kind, entities):
            changes.append({"id": str(memory.id), "kind": [memory.kind, label.kind], "added_entities":
                            [e for e in entities if e not in memory.entities]})
            Memory.objects.filter(id=memory.id).update(kind=label.kind, entities=entities)
    for relation in relations:
        MemoryRelation.objects.get_or_create(
            tenant_id=scope.tenant_id, from_memory_id=batch.row(relation.source).id,
            to_memory_id=batch.row(relation.target).id, relation_type=relation.type,
            defaults={"metadata": {"source": "llm", "run_id": str(run.id)}})
    if changes or relations:
        ledger_write(tenant_id=scope.tenant_id, action="extraction", actor=f"run:{run.id}", run_id=run.id,
                     user_id=scope.user_id, memory_ids=[r.id for r in batch.rows],
                     inputs={"changes": changes}, reason="LLM extraction phase: kind, entities, relations",
                     outputs={"relations": [{"from": str(batch.row(r.source).id),
                                             "to": str(batch.row(r.target).id), "type": r.type}
                                            for r in relations]})


def _charge_extraction(run: ConsolidationRun, scope: ReflectionScope, usage: llm.Usage, *, labelled: int,
                       related: int) -> None:
    current = ConsolidationRun.objects.select_for_update().get(pk=run.id).result
    run_progress(run_id=run.id, **{key: int(current.get(key, 0)) + value for key, value in (
        ("extraction_calls", usage.calls), ("extraction_prompt_tokens", usage.prompt_tokens),
        ("extraction_completion_tokens", usage.completion_tokens), ("labelled", labelled),
        ("relations_proposed", related))})
    llm_usage_add(tenant_id=scope.tenant_id, purpose="extraction", usage=usage)


def _finish(run: ConsolidationRun, worker: str) -> ConsolidationRun:
    current = ConsolidationRun.objects.get(pk=run.id)
    calls, failed = current.result.get("calls_done", 0), current.result.get("failed_calls", 0)
    status = RunStatus.FAILED if calls and failed == calls else RunStatus.SUCCEEDED
    error = "; ".join(current.result.get("errors", [])[-3:]) if status == RunStatus.FAILED else ""
    return run_finish(run_id=run.id, worker=worker, status=status, error=error)


def reflection_execute_or_fail(*, run: ConsolidationRun, worker: str, force: bool = False,
                               progress: Progress | None = None) -> ConsolidationRun:
    """In-process execution (CLI, admin, per-user task): an unavailable LLM fails the run with the reason, marked
    so the caller's task can retry later (`RunOutcome.llm_unavailable`)."""
    try:
        return reflection_execute(run=run, worker=worker, force=force, progress=progress)
    except llm.LLMUnavailable as exc:
        return run_finish(run_id=run.id, worker=worker, status=RunStatus.FAILED, error=f"LLM unavailable: {exc}",
                          llm_unavailable=True)


def reflection_run_now(*, scope: ReflectionScope, trigger: str, force: bool = False,
                       progress: Progress | None = None, wait_seconds: float = 3600) -> RunOutcome:
    """Reflect one scope in this process, or join the same reflection already under way."""
    return run_in_process(
        tenant_id=scope.tenant_id, user_id=scope.user_id, kind=RunKind.REFLECTION, trigger=trigger,
        entity_id=scope.entity_id, namespace=scope.namespace, wait_seconds=wait_seconds, force=force,
        execute=lambda run, worker: reflection_execute_or_fail(run=run, worker=worker, force=run.force,
                                                               progress=progress))


def reflection_answer(run: ConsolidationRun) -> dict[str, Any]:
    """The reflect endpoint's answer for a finished run (ARCHITECTURE.md, "Jobs")."""
    answer: dict[str, Any] = {
        "entity_id": run.entity_id, "insights": list(run.result.get("insights", [])),
        "memories_reviewed": run.reviewed, "new_semantic_memories": run.created,
        "profile_updated": bool(run.result.get("profile_updated", False)),
        "run_id": str(run.id), "status": run.status}
    if run.entity_id is None:
        answer["user_id"] = run.user_id
    return answer
