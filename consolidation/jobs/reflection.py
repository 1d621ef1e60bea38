"""The reflection job for one scope (an entity, or a user's memories without an entity): batches of inputs go to
the reflection model; what it finds becomes profile items (third-person statements about whom they concern) and
what the episodes said becomes condensed passages (ARCHITECTURE.md, "Jobs").

Calls run with bounded concurrency; each call's result is written in its own transaction that renews the run's
lease, writes the condensed passages (and an insight memory for an item no passage already carries) with their
source links, moves the episodes sent to consolidated (conditional: a memory another writer moved first aborts the
whole call), marks semantic inputs reflected, merges the profiles, charges the tokens and writes the ledger;
events go out after commit. A call that fails (invalid output after one repair) writes nothing but its token
usage: its memories stay as they were.

Small entities of one user share calls (`reflection_user_run_now`): the calls are made first, each subject's part
of a reply is validated on its own, and each entity's run then writes its parts like its own calls' results.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
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
    Filed,
    Insight,
    InvalidOutput,
    Part,
    Reflection,
    Source,
    build_messages,
    file_insights,
    keep_durable,
    pack_calls,
    parse_parts,
    part_keys,
    plan_batches,
    repair_messages,
    supported_by,
)
from consolidation.domain.reflection_rules import reflect_extractive
from consolidation.jobs.findability import Planned
from consolidation.jobs.passages import (
    Passage,
    PassagePlan,
    foreseen_passages,
    passage_grow,
    passages_plan,
    said_alone,
)
from consolidation.jobs.safety import canary_baseline, safety_check
from consolidation.ledger import ledger_write, memory_transition, profile_change_record, semantic_snapshot
from consolidation.models import ConsolidationRun, RunKind, RunStatus
from consolidation.runs import LeaseLost, RunOutcome, run_fence, run_finish, run_in_process, run_policy, run_progress
from consolidation.selectors import (
    MemoryRow,
    ReflectionScope,
    memories_near,
    memory_vectors,
    reflection_candidates,
    reflection_eligible_scopes,
    user_entities,
)
from profiles.services import ProfileItem, profile_merge
from zeromem.core.adapters import llm
from zeromem.core.adapters.embeddings import Vector, embed_texts, embed_texts_reusing
from zeromem.core.domain.entities import extract_entities
from zeromem.core.domain.policy import Policy, PolicyInvalid, ReflectionPolicy
from zeromem.core.domain.text import stems
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.core.events import event_emit, semantic_event_data
from zeromem.core.policies import policy_for
from zeromem.core.selectors import llm_tokens_this_month
from zeromem.core.services import content_hash, llm_usage_add, search_stats_add
from zeromem.core.tasks import memories_parse_on_commit
from zeromem.models import Memory, MemoryKind, MemoryRelation, MemorySource, MemoryState, MemoryType, Tenant

EXTRACTIVE = "builtin:extractive"
SUPPORT_SIMILARITY = 0.6  # cosine at which an earlier memory of the subject may support an item (and shares words)
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
    usage: llm.Usage  # this part's share of the call
    repairs: int = 0
    error: str = ""
    tenant_charged: bool = False  # a shared call is charged to the tenant as it returns, whatever its runs do


def reflect_call(model: str, parts: Sequence[Part]) -> list[CallResult]:
    """One reflection call over one or several subjects' parts, a result per part (no database access: it may
    run in a worker thread). Raises llm.LLMUnavailable / llm.LLMError; when a part of the reply is invalid the
    whole call gets one repair, and a part still invalid after it fails only its subject."""
    if model == EXTRACTIVE:
        return [CallResult(reflect_extractive(part.subject, part.sources), llm.Usage()) for part in parts]
    if llm.is_builtin(model):
        raise llm.LLMError(f"unknown built-in reflection engine {model!r} (known: {EXTRACTIVE})")
    keys = [part.key for part in parts]
    messages = build_messages(parts)
    first = llm.complete(model=model, messages=messages)
    answers = _answers(first.text, keys)
    invalid = [str(answer) for answer in answers.values() if isinstance(answer, InvalidOutput)]
    if not invalid:
        return _results(parts, answers, first.usage, repairs=0)
    repaired = llm.complete(model=model, messages=repair_messages(messages, first.text, "; ".join(invalid)))
    again = _answers(repaired.text, keys)
    merged = {key: again[key] if isinstance(answer, InvalidOutput) else answer for key, answer in answers.items()}
    return _results(parts, merged, first.usage + repaired.usage, repairs=1)


def _answers(text: str, keys: Sequence[str]) -> dict[str, Reflection | InvalidOutput]:
    try:
        return parse_parts(text, keys)
    except InvalidOutput as exc:
        return {key: exc for key in keys}


def _results(parts: Sequence[Part], answers: dict[str, Reflection | InvalidOutput], usage: llm.Usage, *,
             repairs: int) -> list[CallResult]:
    shares = usage.split([len(part.sources) for part in parts])
    return [CallResult(answer, share, repairs) if isinstance(answer, Reflection) else
            CallResult(None, share, repairs, f"invalid output{' after one repair' if repairs else ''}: {answer}")
            for answer, share in zip((answers[part.key] for part in parts), shares, strict=True)]


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
class Digest:
    text: str  # the model's summary, or a fallback saying what was reviewed
    sources: frozenset[uuid.UUID]  # the memories it stands for


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


def call_drafts(insights: Sequence[Insight], fallback: Sequence[Digest], passages: Sequence[Passage],
                embedded: Mapping[str, Vector | None]) -> list[Draft]:
    """What a call writes, in this order, embedded in one call (outside any transaction) unless `embedded`
    already holds the text's vector."""
    wanted: list[Insight | Digest | Passage] = [*insights, *fallback, *passages]
    vectors = embed_texts_reusing([Draft.text_of(what) for what in wanted], embedded)
    return [Draft(what, vector) for what, vector in zip(wanted, vectors, strict=True)]


@dataclass(frozen=True)
class Plan:
    """What one call's result becomes: the items filed per entity, the condensed passages, for each item the
    passage that already carries it, else the memory it cites that already says it and stays active (both None:
    the item gets an insight memory of its own), and the episodes no passage can say (`said_alone`): they stay
    active, read."""

    filed: list[Filed]
    passages: PassagePlan
    carrier: list[int | None]
    stated_in: list[uuid.UUID | None]
    summary: str
    said_alone: frozenset[uuid.UUID] = frozenset()

    @property
    def own_insights(self) -> list[Insight]:
        return [f.insight for f, c, s in zip(self.filed, self.carrier, self.stated_in, strict=True)
                if c is None and s is None]


def call_plan(scope: ReflectionScope, batch: Batch, reflection: Reflection, *, model: str, known: Sequence[str],
              policy: Policy, neighbours: Sequence[MemoryRow] = (), foreseen: Sequence[Planned] = ()) -> Plan:
    kept = keep_durable(reflection, batch.sources, min_confidence=policy.reflection.min_confidence)
    filed = file_insights(kept, subject=scope.subject, known=known, model_wrote=not llm.is_builtin(model))
    filed = [supported_by(f, memories_near(scope, vector=v, threshold=SUPPORT_SIMILARITY,
                                           excluding=[r.id for r in batch.rows]))
             if v is not None else f for f, v in zip(filed, embed_texts([f.insight.statement for f in filed]),
                                                     strict=True)]
    passages = passages_plan(scope, batch.rows, memory_vectors([r.id for r in batch.rows]), policy=policy,
                             neighbours=neighbours, foreseen=foreseen)
    carriers = [_carrier(f, passages.passages) for f in filed]
    alone = said_alone(batch.rows, passages.passages)
    return Plan(filed, passages, carriers,
                [None if c is not None else _stated_in(f, batch, alone) for f, c in zip(filed, carriers, strict=True)],
                kept.summary, alone)


# An item says nothing new next to a text holding this share of its content words.
CARRIED_SHARE = 0.8


def _carrier(filed: Filed, passages: Sequence[Passage]) -> int | None:
    """The passage that already says what the item says (most of its content words, a passage citing one of its
    sources first): the item then needs no memory of its own."""
    words = stems(filed.insight.statement)
    cited = set(filed.insight.sources)
    ranked = sorted(range(len(passages)), key=lambda i: not cited & set(passages[i].numbers))
    return next((i for i in ranked if len(words & stems(passages[i].text)) >= CARRIED_SHARE * len(words)), None)


def _stated_in(filed: Filed, batch: Batch, alone: frozenset[uuid.UUID]) -> uuid.UUID | None:
    """The memory among the item's sources that already says what it says and stays active: a merged memory the
    item restates, or an episode no passage can say (`alone`: `said_alone`, left active as it was said). The item
    then needs no memory of its own: the profile points at that memory, and the store does not say it twice."""
    words = stems(filed.insight.statement)
    return next((r.id for r in batch.picked(filed.insight.sources)
                 if (r.is_semantic or r.id in alone) and len(words & stems(r.content)) >= CARRIED_SHARE * len(words)),
                None)


def _write_call(*, run: ConsolidationRun, worker: str, scope: ReflectionScope, batch: Batch, result: CallResult,
                model: str, known: Sequence[str], policy: Policy, neighbours: Sequence[MemoryRow] = (),
                foreseen: Sequence[Planned] = ()) -> list[str]:
    """Write one successful call; returns the statements kept. `neighbours`: every memory the run read;
    `foreseen`: what its later calls are expected to write."""
    assert result.reflection is not None
    plan = call_plan(scope, batch, result.reflection, model=model, known=known, policy=policy,
                     neighbours=neighbours, foreseen=foreseen)
    fallback = [] if plan.passages.passages else _fallback(scope, batch, plan.said_alone)
    drafts = call_drafts(plan.own_insights, fallback, plan.passages.new, plan.passages.vectors)
    growth_vectors = embed_texts_reusing([g.text for g in plan.passages.growths], plan.passages.vectors)
    now = timezone.now()
    with transaction.atomic():
        run_fence(run_id=run.id, worker=worker)
        written = [_write_draft(run, scope, batch, draft, model, now) for draft in drafts]
        grown = [Written(memory, before=before) for memory, before in (
            passage_grow(g, batch.picked(g.numbers), vector)
            for g, vector in zip(plan.passages.growths, growth_vectors, strict=True))]
        created = [w.memory for w in written if w.before is None]
        search_stats_add(memory_ids=[m.id for m in created])
        _retire_inputs(run, scope, batch, now, plan.said_alone)
        profile_updated = _merge_profiles(run, scope, batch, plan, _passage_memories(plan, written, grown),
                                          [w for w in written if w.insight is not None])
        _ledger(run, scope, batch, plan, [w.memory for w in [*written, *grown]], model, result, created=created,
                corroborated=[w.before for w in written if w.before is not None],
                grown=[w.before for w in grown if w.before is not None])
        statements = [f.insight.statement for f in plan.filed]
        _charge(run, scope, result, reviewed=len(batch.rows), created=len(created), insights=statements,
                profile_updated=profile_updated)
        for w in [*written, *grown]:
            event_emit(event="memory.semantic.updated", tenant_id=scope.tenant_id, data={
                **semantic_event_data(w.memory), "semantic_id": str(w.memory.id), "user_id": scope.user_id,
                "created": w.before is None, "reflection": True,
                "source_ids": [str(s) for s in w.memory.metadata["source_ids"]]})
    return statements


def _passage_memories(plan: Plan, written: Sequence[Written], grown: Sequence[Written]) -> list[Memory]:
    """The memory each condensed passage of the call ended up in: its own (written last), or the one it grew."""
    own = written[len(written) - len(plan.passages.new):]
    return [(grown if grows else own)[index].memory for grows, index in plan.passages.homes]


def _write_draft(run: ConsolidationRun, scope: ReflectionScope, batch: Batch, draft: Draft, model: str,
                 now: datetime) -> Written:
    what = draft.what
    if isinstance(what, Insight):
        return _insight_memory(run, scope, batch, what, draft.vector, model, now)
    if isinstance(what, Digest):
        rows = [r for r in batch.rows if r.id in what.sources]
        tags, extra = ["reflection", "digest"], {"model": model}
    else:
        rows = batch.picked(what.numbers)
        tags, extra = ["reflection", "condensed"], {}
    return Written(_semantic(run, scope, batch, content=what.text, vector=draft.vector, now=now,
                             sources=[r.id for r in rows], kind=MemoryKind.OBSERVATION,
                             importance=max(r.importance for r in rows), confidence=0.7, tags=tags, extra=extra))


def _merge_profiles(run: ConsolidationRun, scope: ReflectionScope, batch: Batch, plan: Plan,
                    passages: Sequence[Memory], insights: Sequence[Written]) -> bool:
    """Merge the items into the profile of the entity each is about (the scope's own first, which also takes the
    summary); returns whether the scope's own profile changed. An item's memory is the semantic memory it restates,
    the passage that carries it, or its insight memory."""
    own = iter(insights)
    by_entity: dict[str | None, list[ProfileItem]] = {None: []}
    for filed, carrier, stated_in in zip(plan.filed, plan.carrier, plan.stated_in, strict=True):
        memory = stated_in or (next(own).memory if carrier is None else passages[carrier]).id
        by_entity.setdefault(filed.entity, []).append(_profile_item(filed.insight, filed.support, batch, memory))
    changed = False
    for entity, items in by_entity.items():
        change = profile_merge(
            tenant_id=scope.tenant_id, user_id=scope.user_id, entity_id=scope.entity_id if entity is None else entity,
            namespace=scope.namespace, items=items, summary=plan.summary if entity is None else "",
            summary_source_ids=[str(r.id) for r in batch.rows] if entity is None and plan.summary else ())
        if change is not None:
            profile_change_record(change=change, run_id=run.id, actor=f"run:{run.id}")
            changed = changed or entity is None
    return changed


def _profile_item(insight: Insight, support: Sequence[str], batch: Batch, memory: uuid.UUID) -> ProfileItem:
    rows = batch.picked(insight.sources)
    return ProfileItem(insight.category, insight.subject, insight.statement, insight.confidence,
                       tuple(dict.fromkeys([*(str(r.id) for r in rows), *support])), str(memory),
                       said_from=min(r.created_at for r in rows), said_last=max(r.created_at for r in rows))


def _fallback(scope: ReflectionScope, batch: Batch, alone: frozenset[uuid.UUID]) -> list[Digest]:
    """A call without passages: a digest of what was reviewed, citing the batch but the episodes said alone (it
    does not say what they said); none when no episode is left for it to stand for."""
    rows = [r for r in batch.rows if r.id not in alone]
    if all(r.is_semantic for r in rows):
        return []
    first, last = (f(r.created_at for r in rows).date().isoformat() for f in (min, max))
    text = f"{scope.subject}: {len(rows)} memories from {first} to {last} reviewed; nothing durable found."
    return [Digest(text, frozenset(r.id for r in rows))]


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
    memories_parse_on_commit([memory.id])
    return memory


def _retire_inputs(run: ConsolidationRun, scope: ReflectionScope, batch: Batch, now: Any,
                   alone: frozenset[uuid.UUID]) -> None:
    """Episodes sent → consolidated; semantic inputs and the episodes said `alone` → reflected (they stay active,
    never sent again). All or nothing."""
    episodes = [r.id for r in batch.episodes if r.id not in alone]
    kept = [r.id for r in batch.rows if r.is_semantic or r.id in alone]
    if episodes:
        memory_transition(tenant_id=scope.tenant_id, memory_ids=episodes, operation="consolidate",
                          actor=f"run:{run.id}", run_id=run.id, reason="reflected into semantic memories")
    marked = (Memory.objects.filter(id__in=kept, state=MemoryState.RAW, reflected_at__isnull=True)
              .update(reflected_at=now))
    if marked != len(kept):
        raise TransitionRefused("an input kept active changed while it was being reflected; nothing of this call "
                                "was written")


def _ledger(run: ConsolidationRun, scope: ReflectionScope, batch: Batch, plan: Plan, written: list[Memory],
            model: str, result: CallResult, *, created: list[Memory], corroborated: list[dict[str, Any]],
            grown: list[dict[str, Any]]) -> None:
    ledger_write(
        tenant_id=scope.tenant_id, action="reflection", actor=f"run:{run.id}", run_id=run.id, user_id=scope.user_id,
        # What it wrote too: an erasure scrubs the text the rows hold (a grown passage's earlier text) by these.
        memory_ids=[*(r.id for r in batch.rows), *(m.id for m in written)],
        inputs={"entity_id": scope.entity_id, "namespace": scope.namespace, "model": model,
                "sent": [{"id": str(r.id), "content_hash": r.content_hash} for r in batch.rows]},
        outputs={"semantic_ids": [str(m.id) for m in written], "created_ids": [str(m.id) for m in created],
                 "corroborated": corroborated, "grown": grown, "said_alone": [str(m) for m in plan.said_alone],
                 "items": [{"category": f.insight.category, "statement": f.insight.statement,
                            "confidence": f.insight.confidence, "entity_id": f.entity or scope.entity_id,
                            "source_ids": [str(x) for x in batch.ids(f.insight.sources)]} for f in plan.filed],
                 "summary": plan.summary},
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
    if not result.tenant_charged:
        llm_usage_add(tenant_id=scope.tenant_id, purpose="reflection", usage=usage)


def _record_failed_call(run: ConsolidationRun, worker: str, scope: ReflectionScope, result: CallResult) -> None:
    with transaction.atomic():
        run_fence(run_id=run.id, worker=worker)
        _charge(run, scope, result)


# --- running -------------------------------------------------------------------------------------------------

def scope_of(run: ConsolidationRun) -> ReflectionScope:
    return ReflectionScope(run.tenant_id, run.user_id, run.entity_id, run.namespace or "global")


def plan_reflection(scope: ReflectionScope, *, force: bool, policy: ReflectionPolicy) -> list[Batch]:
    recent, size, max_calls = policy.window, policy.batch, policy.max_calls
    rows = reflection_candidates(scope, force=force, limit=recent + size * max_calls)
    plan = plan_batches([Candidate(r.created_at, r.importance, r.window) for r in rows], recent=recent,
                        size=size, min_remaining=policy.min_remaining, max_calls=max_calls)
    return [Batch(sorted([rows[i] for i in indexes], key=lambda r: r.written)) for indexes in plan]


Answered = list[tuple[Batch, CallResult | Exception]]  # batches whose shared calls were already made


def reflection_execute(*, run: ConsolidationRun, worker: str, force: bool = False,
                       progress: Progress | None = None, answered: Answered | None = None) -> ConsolidationRun:
    """Do the work of a claimed reflection run and close it. Raises llm.LLMUnavailable (the run stays claimed:
    the caller releases it for a retry, or fails it); a lost lease stops the run without closing it.
    `answered`: the run's batches with the results of the calls it shared with other entities of the user
    (`reflection_user_run_now`); without it the run plans and calls for itself."""
    tenant = Tenant.objects.get(id=run.tenant_id)
    try:
        policy = run_policy(run)
    except PolicyInvalid as invalid:
        return run_finish(run_id=run.id, worker=worker, status=RunStatus.FAILED, error=str(invalid))
    scope = scope_of(run)
    model = reflection_model(tenant)
    ConsolidationRun.objects.filter(pk=run.id).update(model=model)
    if answered is not None and not _still_unreflected(answered):
        answered = None  # another run wrote while this one waited: plan afresh
    refusal = budget_refusal(tenant, model) if answered is None else ""  # shared calls are paid already
    if refusal:
        return run_finish(run_id=run.id, worker=worker, status=RunStatus.SKIPPED, error=refusal)
    batches = (plan_reflection(scope, force=force, policy=policy.reflection) if answered is None
               else [batch for batch, _ in answered])
    with transaction.atomic():
        run_progress(run_id=run.id, calls_planned=run.result.get("calls_done", 0) + len(batches),
                     entity_id=scope.entity_id, user_id=scope.user_id)
    rows = [row for batch in batches for row in batch.rows]
    baseline = canary_baseline(run=run, consolidating=[r for r in rows if not r.is_semantic], neighbours=rows,
                               policy=policy)
    try:
        if policy.reflection.extraction_phase and not llm.is_builtin(model):
            _extraction_phase(run, worker, scope, model, rows)
        results = _own_calls(model, scope, batches) if answered is None else [result for _, result in answered]
        _write_all(run, worker, scope, model, list(zip(batches, results, strict=True)), progress, policy)
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


def _still_unreflected(answered: Answered) -> bool:
    """Whether every memory the shared calls were made for is still waiting for reflection."""
    rows = [r for batch, _ in answered for r in batch.rows]
    pending = Memory.objects.filter(id__in=[r.id for r in rows], state=MemoryState.RAW, reflected_at__isnull=True)
    return pending.count() == len(rows)


def _own_calls(model: str, scope: ReflectionScope, batches: list[Batch]) -> list[CallResult | Exception]:
    """One call per batch, this scope alone in each."""
    concurrency = 1 if llm.is_builtin(model) else None
    calls = llm.map_bounded(lambda b: reflect_call(model, [Part("A", scope.subject, tuple(b.sources))])[0],
                            batches, concurrency=concurrency)
    return list(calls)


def _write_all(run: ConsolidationRun, worker: str, scope: ReflectionScope, model: str, answered: Answered,
               progress: Progress | None, policy: Policy) -> None:
    known = user_entities(tenant_id=scope.tenant_id, user_id=scope.user_id, namespace=scope.namespace)
    neighbours = [row for batch, _ in answered for row in batch.rows]
    foreseen = [foreseen_passages(batch.rows, policy.merging.max_chars)
                if isinstance(result, CallResult) and result.reflection else []
                for batch, result in answered]
    for done, (batch, result) in enumerate(answered, 1):
        if isinstance(result, Exception):
            raise result
        if result.reflection is None:
            _record_failed_call(run, worker, scope, result)
        else:
            try:
                _write_call(run=run, worker=worker, scope=scope, batch=batch, result=result, model=model,
                            known=known, policy=policy, neighbours=neighbours,
                            foreseen=[p for later in foreseen[done:] for p in later])
            except TransitionRefused:
                _record_failed_call(run, worker, scope, CallResult(None, result.usage, result.repairs,
                                                                   "another writer moved these memories first"))
        if progress:
            progress(done, len(answered))


# --- calls shared by the entities of one user --------------------------------------------------------------------

def reflection_user_run_now(*, tenant_id: int, user_id: str, trigger: str, force: bool = False,
                            wait_seconds: float = 3600) -> list[RunOutcome]:
    """Reflect every eligible scope of one user (the thresholds apply; `force` only lets the runs read the
    current session too), one run each, one after the other. With an LLM, the scopes share calls (up to
    the policy's reflection.shared_call memories a call, at most reflection.batch of one scope): the calls are made
    first, then each run writes its parts. One user's memories never share a prompt with another user's."""
    policy = policy_for(tenant_id=tenant_id)
    scopes = reflection_eligible_scopes(policies={tenant_id: policy}, tenant_id=tenant_id, user_id=user_id)
    answered = shared_calls(tenant_id=tenant_id, scopes=scopes, force=force, policy=policy.reflection)
    return [reflection_run_now(scope=scope, trigger=trigger, force=force, wait_seconds=wait_seconds,
                               answered=answered.get(scope)) for scope in scopes]


def shared_calls(*, tenant_id: int, scopes: list[ReflectionScope], force: bool, policy: ReflectionPolicy
                 ) -> dict[ReflectionScope, Answered]:
    """Each scope's batches with their results; empty when there is nothing to share (one scope, a built-in
    engine, or a spent budget: each run then plans and calls for itself)."""
    tenant = Tenant.objects.get(id=tenant_id)
    model = reflection_model(tenant)
    if len(scopes) < 2 or llm.is_builtin(model) or budget_refusal(tenant, model):
        return {}
    plans = [plan_reflection(scope, force=force, policy=policy) for scope in scopes]
    rows = [[row for batch in plan for row in batch.rows] for plan in plans]
    calls = [[(piece.scope, Batch(sorted((rows[piece.scope][i] for i in piece.indexes),
                                         key=lambda r: r.written))) for piece in call]
             for call in pack_calls([_positions(plan) for plan in plans],
                                    per_call=policy.shared_call, per_scope=policy.batch)]

    def call(pieces: list[tuple[int, Batch]]) -> list[CallResult]:
        keys = part_keys(len(pieces))
        results = reflect_call(model, [Part(key, scopes[s].subject, tuple(batch.sources))
                                       for key, (s, batch) in zip(keys, pieces, strict=True)])
        # Paid now, even if a run never writes its part (joined, skipped, replanned): the tenant's usage is true.
        llm_usage_add(tenant_id=tenant_id, purpose="reflection", usage=sum((r.usage for r in results), llm.Usage()))
        return [replace(r, tenant_charged=True) for r in results]

    answered: dict[ReflectionScope, Answered] = {scope: [] for scope in scopes}
    for pieces, results in zip(calls, llm.map_bounded(call, calls), strict=True):
        for index, (s, batch) in enumerate(pieces):
            answered[scopes[s]].append((batch, results if isinstance(results, Exception) else results[index]))
    return answered


def _positions(plan: list[Batch]) -> list[list[int]]:
    """Each batch as positions in the plan's rows laid end to end (a piece of a call never crosses a batch, so
    never a window)."""
    starts = [sum(len(b.rows) for b in plan[:i]) for i in range(len(plan))]
    return [list(range(start, start + len(batch.rows))) for start, batch in zip(starts, plan, strict=True)]


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
                               progress: Progress | None = None, answered: Answered | None = None
                               ) -> ConsolidationRun:
    """In-process execution (CLI, admin, per-user task): an unavailable LLM fails the run with the reason, marked
    so the caller's task can retry later (`RunOutcome.llm_unavailable`)."""
    try:
        return reflection_execute(run=run, worker=worker, force=force, progress=progress, answered=answered)
    except llm.LLMUnavailable as exc:
        return run_finish(run_id=run.id, worker=worker, status=RunStatus.FAILED, error=f"LLM unavailable: {exc}",
                          llm_unavailable=True)


def reflection_run_now(*, scope: ReflectionScope, trigger: str, force: bool = False,
                       progress: Progress | None = None, wait_seconds: float = 3600,
                       answered: Answered | None = None) -> RunOutcome:
    """Reflect one scope in this process, or join the same reflection already under way. `answered` (shared
    calls made for this scope) is used only by a run of the same `force` as the plan it came from."""
    return run_in_process(
        tenant_id=scope.tenant_id, user_id=scope.user_id, kind=RunKind.REFLECTION, trigger=trigger,
        entity_id=scope.entity_id, namespace=scope.namespace, wait_seconds=wait_seconds, force=force,
        execute=lambda run, worker: reflection_execute_or_fail(
            run=run, worker=worker, force=run.force, progress=progress,
            answered=answered if run.force == force else None))


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
