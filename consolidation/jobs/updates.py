"""Knowledge updates inside a clustering run (ARCHITECTURE.md, "Jobs"): the claims of the run's episodes judged
(`consolidation/domain/contradictions.py`), and what the verdicts write — a whole supersede, a flagged
contradiction, or a retired claim with the remainder of its memory — each in its own short transaction with its
ledger row, the run's lease renewed. The clustering job plans merges around what this module retires.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from consolidation.domain.contradictions import (
    SUPERSEDE,
    Claim,
    ClaimVerdict,
    Retired,
    Updates,
    Verdict,
    claim_pairs,
    claim_verdicts,
    claims_of,
    clauses_ahead,
    features_current,
    memory_features,
    reader_pairs,
    reader_verdicts,
    remainder_of,
    statement_sentences,
    updates_of,
)
from consolidation.jobs.update_judge import Judge
from consolidation.ledger import (
    ledger_row,
    ledger_write,
    ledger_write_all,
    memories_lock_active,
    memory_transition,
    profile_change_record,
)
from consolidation.models import ConsolidationRun, LedgerEntry
from consolidation.runs import run_fence
from consolidation.selectors import ClusteringRow, Loaded
from profiles.services import profile_items_retire
from zeromem.core.adapters.embeddings import embed_texts
from zeromem.core.domain.policy import UpdatesPolicy
from zeromem.core.domain.text import sentences, split_speaker
from zeromem.core.domain.transitions import TransitionRefused
from zeromem.core.events import event_emit, event_emit_all, semantic_event_data
from zeromem.core.services import content_hash, memories_features_store, search_stats_add
from zeromem.core.tasks import memories_parse_on_commit
from zeromem.language.content import text_says_something
from zeromem.language.default import DefaultReader, Thresholds
from zeromem.language.reference import left_out
from zeromem.language.values import normalised
from zeromem.models import Memory, MemoryRelation, MemorySource, MemoryType, RelationType


@dataclass(frozen=True)
class UpdatePlan:
    """What the verdicts mean for this run: decisions (supersedes, flags), retirements, and the memories that
    therefore merge with nothing in this run."""

    decisions: list[Decision]
    retirements: list[Retirement]
    taken: frozenset[int]
    claim_pairs: int


def updates_plan(loaded: Loaded, common: frozenset[str], judge: Judge | None, policy: UpdatesPolicy) -> UpdatePlan:
    """Claims of the episodes, candidate pairs from their index, verdicts under `policy` (the unsure ones to
    `judge` when an LLM is configured), and what they mean for whole memories."""
    claims = user_claims(loaded, common, rules=policy.reader == "rules")
    verdicts: list[ClaimVerdict]
    if policy.reader == "rules":
        found = claim_pairs(claims)
        verdicts = claim_verdicts(
            claims, found, keep_unsure=judge is not None, min_gap=timedelta(hours=policy.min_gap_hours),
            same_attribute=policy.same_attribute, certain_attribute=policy.certain_attribute)
    else:
        reader = DefaultReader(thresholds=Thresholds(min_gap=timedelta(hours=policy.min_gap_hours),
                                                     alike=policy.worded_alike, similar=policy.meant_alike))
        features = [row.features for row in loaded.rows]
        found = reader_pairs(claims, reader, features=features)
        verdicts = reader_verdicts(claims, found, reader, vectors=_whole_claim_vectors(loaded, claims),
                                   alone=_one_sentence(loaded),
                                   keep_unsure=judge is not None, series_gap=timedelta(hours=policy.series_hours),
                                   features=features)
    updates = updates_of(judge(verdicts) if judge else verdicts, [r.content for r in loaded.rows])
    names = common | {normalised(split_speaker(row.content)[0]) for row in loaded.rows} - {""}
    standing = [_retirement(older, retired, loaded.rows[older].content, names)
                for older, retired in updates.retired.items()]
    retirements = [retirement for retirement in standing if retirement is not None]
    return UpdatePlan(decisions_of(updates), retirements, frozenset(updates.superseded) | frozenset(updates.retired),
                      len(found))


@dataclass(frozen=True)
class Decision:
    older: int
    newer: int
    verdict: Verdict
    replaced_values: frozenset[str] = frozenset()  # what profile items built from the older must not state


@dataclass(frozen=True)
class Retirement:
    """Claims of one memory that newer statements replace, while the rest of it stays true: the memory is
    folded into its `remainder` (a semantic memory citing it), and each claim becomes a superseded fact."""

    older: int
    claims: list[Retired]
    remainder: str


def _retirement(older: int, retired: list[Retired], text: str, names: frozenset[str]) -> Retirement | None:
    """The memory without its retired claims, and without what is left of it that leans on another turn and says
    nothing (`left_out`). None where what is left leans and says something ("I've had them for 3 years!" once
    "Their names are …" is retired), or says nothing: such a remainder would point at what it never names, so the
    memory stays as it was said, its claims with it."""
    gone = {r.sentence for r in retired}
    said = statement_sentences(text)
    left = [n for n in range(len(said)) if n not in gone]
    leaning, saying = left_out([said[n] for n in left], names)
    remainder = remainder_of(text, gone | {left[n] for n in leaning})
    if saying or not text_says_something(remainder, names):
        return None
    return Retirement(older, retired, remainder)


def features_parse_missing(loaded: Loaded) -> Parsed:
    """Parse the claims of episodes stored before their features were, or by another version of the reader (in one
    batch); the rows of `loaded` get them, so this run reads them like any other, and the run stores them
    (`features_store`): parsed once a version."""
    reader = DefaultReader()
    missing = [n for n, row in enumerate(loaded.rows)
               if not features_current(row.features, reader) and not row.is_semantic]
    found = memory_features([loaded.rows[n].content for n in missing], [loaded.rows[n].role for n in missing],
                            reader) if missing else []
    for n, features in zip(missing, found, strict=True):
        loaded.rows[n] = replace(loaded.rows[n], features=features)
    return Parsed([loaded.ids[n] for n in missing], [loaded.rows[n].content_hash for n in missing], found)


@dataclass(frozen=True)
class Parsed:
    ids: list[uuid.UUID]
    hashes: list[str]  # the content each was parsed from
    features: list[dict[str, Any]]


def features_store(*, tenant_id: int, parsed: Parsed) -> None:
    if parsed.ids:
        memories_features_store(ids=parsed.ids, hashes=parsed.hashes, features=parsed.features)


def user_claims(loaded: Loaded, common: frozenset[str], *, rules: bool = False) -> list[Claim]:
    """The claims of the episodes (semantic memories state what their sources said; their sources are judged).
    `rules`: as the frozen rules reader finds them."""
    episodes = [n for n, row in enumerate(loaded.rows) if not row.is_semantic]
    if not rules:
        clauses_ahead([loaded.rows[n].content for n in episodes], [loaded.rows[n].role for n in episodes])
    return [claim for index in episodes
            for claim in claims_of(index, loaded.rows[index].content, loaded.rows[index].said_at,
                                   role=loaded.rows[index].role, scope=loaded.items[index].scope,
                                   session=loaded.rows[index].session_id, common_names=common, rules=rules)]


def _whole_claim_vectors(loaded: Loaded, claims: Sequence[Claim]) -> list[np.ndarray | None]:
    """Each memory's stored vector where its one claim is all it claims (a longer turn's vector is about more)."""
    per_memory = Counter(c.memory for c in claims)
    return [loaded.vectors[n] if loaded.vectors is not None and loaded.has_vector[n] and per_memory[n] == 1 else None
            for n in range(len(loaded.rows))]


def _one_sentence(loaded: Loaded) -> list[bool]:
    """Per memory: it says one sentence, so its vector is that sentence's alone (the change head reads no more)."""
    return [len(sentences(split_speaker(row.content)[1])) == 1 for row in loaded.rows]


def decisions_of(updates: Updates) -> list[Decision]:
    """Whole-memory supersedes (newest replacement first) and the flagged pairs."""
    decisions = [Decision(older, found.by.memory, found.verdict, updates.superseded_values[older])
                 for older, found in updates.superseded.items()]
    decisions += [Decision(older, newer, verdict) for (older, newer), verdict in updates.flagged.items()]
    return decisions


# --- writing -------------------------------------------------------------------------------------------------

def decisions_write(*, run: ConsolidationRun, worker: str, tenant_id: int, loaded: Loaded,
                    decisions: Sequence[Decision]) -> list[Decision]:
    """Write a chunk of decisions in one transaction and return those written: supersedes (the older statement
    archived with `superseded_by` and `valid_to`, a supersedes relation, `memory.superseded` after commit) and
    flagged contradictions (a contradicts relation for review; a pair flagged before is left alone), each with a
    ledger row holding the evidence.
    1. renew the lease; 2. lock the older statements still active, in id order (one another writer moved first is
    left out); 3. one conditional UPDATE retires them all; 4. relations, ledger rows and events set-based."""
    with transaction.atomic():
        run_fence(run_id=run.id, worker=worker)
        supersedes = [d for d in decisions if d.verdict.kind == SUPERSEDE]
        active = memories_lock_active(tenant_id=tenant_id, memory_ids=[loaded.ids[d.older] for d in supersedes])
        supersedes = [d for d in supersedes if loaded.ids[d.older] in active]
        flags = _not_flagged_before(tenant_id, loaded, [d for d in decisions if d.verdict.kind != SUPERSEDE])
        if supersedes:
            memory_transition(tenant_id=tenant_id, memory_ids=[loaded.ids[d.older] for d in supersedes],
                              operation="supersede", actor=f"run:{run.id}", run_id=run.id,
                              reason="replaced by newer statements (the supersede rows say which)")
            # An older statement stopped being true when the newer one was said, not when this run noticed.
            Memory.objects.bulk_update([Memory(id=loaded.ids[d.older], superseded_by_id=loaded.ids[d.newer],
                                               valid_to=loaded.rows[d.newer].said_at) for d in supersedes],
                                       ["superseded_by", "valid_to"], batch_size=500)
        MemoryRelation.objects.bulk_create([_relation(tenant_id, loaded, d) for d in [*supersedes, *flags]],
                                           ignore_conflicts=True, batch_size=500)
        # A supersede also retires the profile items built from the older statement; its row names their
        # `profile.update` rows, so undoing it puts the items back.
        ledger_write_all([_decision_row(run, tenant_id, loaded, d, _retire_profile_items(
            run, tenant_id, loaded.ids[d.older], d.replaced_values)) for d in supersedes]
                         + [_decision_row(run, tenant_id, loaded, d, []) for d in flags])
        event_emit_all(tenant_id=tenant_id, events=[
            ("memory.superseded", {"memory_id": str(loaded.ids[d.older]), "superseded_by": str(loaded.ids[d.newer]),
                                   "reason": d.verdict.reason}) for d in supersedes])
    return [*supersedes, *flags]


def _not_flagged_before(tenant_id: int, loaded: Loaded, flags: Sequence[Decision]) -> list[Decision]:
    """The flags whose pair has no contradicts relation yet: one flag is enough."""
    if not flags:
        return []
    existing = set(MemoryRelation.objects.filter(
        tenant_id=tenant_id, relation_type=RelationType.CONTRADICTS,
        from_memory_id__in=[loaded.ids[d.newer] for d in flags], to_memory_id__in=[loaded.ids[d.older] for d in flags],
    ).values_list("from_memory_id", "to_memory_id"))
    return [d for d in flags if (loaded.ids[d.newer], loaded.ids[d.older]) not in existing]


def _relation(tenant_id: int, loaded: Loaded, decision: Decision) -> MemoryRelation:
    supersede = decision.verdict.kind == SUPERSEDE
    return MemoryRelation(tenant_id=tenant_id, from_memory_id=loaded.ids[decision.newer],
                          to_memory_id=loaded.ids[decision.older],
                          relation_type=RelationType.SUPERSEDES if supersede else RelationType.CONTRADICTS,
                          flagged=not supersede, score=decision.verdict.overlap,
                          metadata={"reason": decision.verdict.reason})


def _decision_row(run: ConsolidationRun, tenant_id: int, loaded: Loaded, decision: Decision,
                  profile_entries: list[int]) -> LedgerEntry:
    """The decision's evidence, and the `profile.update` rows of the items it retired."""
    older, newer = loaded.rows[decision.older], loaded.rows[decision.newer]
    supersede = decision.verdict.kind == SUPERSEDE
    return ledger_row(tenant_id=tenant_id, action="supersede" if supersede else "contradiction.flagged",
                      actor=f"run:{run.id}", run_id=run.id, user_id=run.user_id, memory_ids=[older.id, newer.id],
                      inputs={"older": {"id": str(older.id), "content": older.content,
                                        "at": older.created_at.isoformat()},
                              "newer": {"id": str(newer.id), "content": newer.content,
                                        "at": newer.created_at.isoformat()}},
                      reason=decision.verdict.reason, outputs={"profile_entries": profile_entries},
                      scores={"attribute_overlap": round(decision.verdict.overlap, 3)}, undoable=supersede)


def _retire_profile_items(run: ConsolidationRun, tenant_id: int, source_id: uuid.UUID,
                          values: frozenset[str]) -> list[int]:
    """Profile items reflection built from a memory whose claim was replaced go with the claim. Returns the ids of
    the `profile.update` rows recorded: the supersede's own row names them, so undoing it puts the items back."""
    return [profile_change_record(change=change, run_id=run.id, actor=f"run:{run.id}",
                                  reason="a newer statement replaced what these items said").id
            for change in profile_items_retire(tenant_id=tenant_id, user_id=run.user_id, source_id=str(source_id),
                                               values=values)]


def _write_retirement(*, run: ConsolidationRun, worker: str, tenant_id: int, loaded: Loaded,
                      retirement: Retirement, vectors: Sequence[list[float] | None]) -> Memory:
    """One transaction: the remainder (what the older memory still says, citing it), one superseded fact per
    retired claim (citing it, `superseded_by` the newer memory, `valid_to` its date, a supersedes relation), the
    older memory consolidated, one ledger row; `memory.superseded` per claim after commit."""
    older = loaded.rows[retirement.older]
    with transaction.atomic():
        run_fence(run_id=run.id, worker=worker)
        remainder = _derived(tenant_id, run.user_id, loaded, retirement.older, retirement.remainder, vectors[0],
                             source_type="remainder", carries_reads=True)
        claims = [_retired_claim(run, tenant_id, loaded, retirement.older, retired, vector)
                  for retired, vector in zip(retirement.claims, vectors[1:], strict=True)]
        profile_entries = _retire_profile_items(run, tenant_id, older.id,
                                                frozenset().union(*(r.replaced_values for r in retirement.claims)))
        memory_transition(tenant_id=tenant_id, memory_ids=[older.id], operation="consolidate",
                          actor=f"run:{run.id}", run_id=run.id, reason="claims retired; the rest kept")
        ledger_write(tenant_id=tenant_id, action="claim.retire", actor=f"run:{run.id}", run_id=run.id,
                     user_id=run.user_id, memory_ids=[older.id, *[c.id for c in claims], remainder.id],
                     inputs={"older": {"id": str(older.id), "content": older.content,
                                       "at": older.said_at.isoformat()},
                             "claims": [{"sentence": r.text, "newer": _said(loaded.rows[r.by.memory]),
                                         "newer_statement": r.by.text, "reason": r.verdict.reason}
                                        for r in retirement.claims]},
                     outputs={"remainder_id": str(remainder.id), "remainder": remainder.content,
                              "claim_ids": [str(c.id) for c in claims], "profile_entries": profile_entries},
                     reason="; ".join(dict.fromkeys(r.verdict.reason for r in retirement.claims)),
                     scores={"claims": len(claims)}, undoable=True)
        event_emit(event="memory.semantic.updated", tenant_id=tenant_id,
                   data={"semantic_id": str(remainder.id), "user_id": run.user_id, "created": True,
                         "source_ids": [str(older.id)], **semantic_event_data(remainder)})
    return remainder


def _said(row: ClusteringRow) -> dict[str, str]:
    return {"id": str(row.id), "content": row.content, "at": row.said_at.isoformat()}


def _retired_claim(run: ConsolidationRun, tenant_id: int, loaded: Loaded, older: int, retired: Retired,
                   vector: list[float] | None) -> Memory:
    newer = loaded.rows[retired.by.memory]
    claim = _derived(tenant_id, run.user_id, loaded, older, retired.text, vector, source_type="claim")
    memory_transition(tenant_id=tenant_id, memory_ids=[claim.id], operation="supersede", actor=f"run:{run.id}",
                      run_id=run.id, reason=retired.verdict.reason)
    # The claim stopped being true when the newer statement was made, not when this run noticed.
    Memory.objects.filter(id=claim.id).update(superseded_by_id=newer.id, valid_to=newer.said_at)
    MemoryRelation.objects.create(tenant_id=tenant_id, from_memory_id=newer.id, to_memory_id=claim.id,
                                  relation_type=RelationType.SUPERSEDES, flagged=False,
                                  score=retired.verdict.overlap,
                                  metadata={"reason": retired.verdict.reason, "statement": retired.by.text})
    event_emit(event="memory.superseded", tenant_id=tenant_id,
               data={"memory_id": str(claim.id), "superseded_by": str(newer.id), "source_id": str(loaded.ids[older]),
                     "reason": retired.verdict.reason})
    return claim


def _derived(tenant_id: int, user_id: str, loaded: Loaded, source: int, text: str, vector: list[float] | None, *,
             source_type: str, carries_reads: bool = False) -> Memory:
    """A semantic memory holding part of one memory's text, dated as that memory, citing it. The one that stays
    active in its place (`carries_reads`) is as accessible as it was and carries its reads over."""
    row = loaded.rows[source]
    reads = {"activation": row.activation, "access_count": row.access_count} if carries_reads else {}
    namespace, entity_id, window = loaded.items[source].scope
    lowered = text.lower()
    memory = Memory.objects.create(
        tenant_id=tenant_id, user_id=user_id, namespace=namespace, entity_id=entity_id, window=window,
        memory_type=MemoryType.SEMANTIC, embedding=vector, created_at=timezone.now(), content=text,
        content_hash=content_hash(text), importance=row.importance, kind=row.kind, confidence=row.confidence,
        role=row.role, entities=[e for e in row.entities if e.lower() in lowered], tags=list(row.tags),
        valid_from=row.said_at, metadata={"source_type": source_type, "source_count": 1}, **reads)
    MemorySource.objects.create(memory=memory, source_id=row.id, source_memory_id=row.id,
                                source_content_hash=row.content_hash)
    search_stats_add(memory_ids=[memory.id])
    memories_parse_on_commit([memory.id])
    return memory


def retirement_vectors(retirements: Sequence[Retirement]) -> list[list[list[float] | None]]:
    """Per retirement: the remainder's vector, then one per retired claim (one embedding call for all)."""
    texts = [[r.remainder, *[c.text for c in r.claims]] for r in retirements]
    flat = iter(embed_texts([t for group in texts for t in group]))
    return [[next(flat) for _ in group] for group in texts]


def retirement_write(run: ConsolidationRun, worker: str, tenant_id: int, loaded: Loaded, retirement: Retirement,
                vectors: list[list[float] | None]) -> int:
    try:
        _write_retirement(run=run, worker=worker, tenant_id=tenant_id, loaded=loaded, retirement=retirement,
                          vectors=vectors)
    except TransitionRefused:
        return 0  # another writer moved the memory first: nothing of it was written
    return len(retirement.claims)
