"""The retrieval safety net (issue 9): a clustering or reflection run must never make retrieval worse.

Before a run writes, the canaries of its user are measured: the operator's (admin → Canaries: a query and the
memories it must find) and up to the policy's `canaries.sample` sampled from the memories the run is about to
consolidate (query = the memory's most distinctive phrase, expected = that memory). After the run writes, the
same canaries are measured again with the same search. Measure = budget recall (ARCHITECTURE.md, "Quality"): a semantic
memory covers what it cites, transitively. When the mean drops by more than `canaries.max_drop`, the
run's changes are undone through the ledger and the run fails with the figures. Canary searches call the
search selector directly, so they record no access. A clustering run the canaries pass then goes through the
omission check (`consolidation.jobs.omissions`): the same idea statement by statement; a run that lost statements
is held for review rather than undone.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from consolidation.corrections.revert import run_revert
from consolidation.jobs.findability import SEARCH_DEPTH, canary_query
from consolidation.jobs.omissions import omissions_record
from consolidation.models import Canary, ConsolidationRun
from consolidation.runs import run_fence, run_progress
from consolidation.selectors import MemoryRow, provenance
from zeromem.core.domain.policy import CanaryPolicy, Policy, SearchPolicy
from zeromem.core.domain.recall import budget_recall, document_frequency
from zeromem.core.selectors import MemoryFilter, memories_ranked


@dataclass(frozen=True)
class Probe:
    query: str
    expected: frozenset[uuid.UUID]
    label: str  # "canary <id>" (configured in the admin) or "memory <id>" (sampled); never the query text,
    # which is user content and would outlive an erasure in the run's result


@dataclass(frozen=True)
class Baseline:
    probes: list[Probe]
    before: list[float]
    policy: Policy  # the run's: the searches after it writes rank as the searches before did

    @property
    def mean(self) -> float:
        return sum(self.before) / len(self.before)


def canary_probes(*, run: ConsolidationRun, consolidating: Sequence[MemoryRow],
                  neighbours: Sequence[MemoryRow], policy: CanaryPolicy) -> list[Probe]:
    """The operator's canaries for the run's user, and a sample of the memories about to be consolidated, each
    queried by its rarest phrase among `neighbours` (the memories the run read)."""
    configured = [Probe(c.query, frozenset(uuid.UUID(str(i)) for i in c.expected_memory_ids), f"canary {c.id}")
                  for c in Canary.objects.filter(tenant_id=run.tenant_id, user_id=run.user_id, active=True)[:100]
                  if c.expected_memory_ids]
    frequency = document_frequency(r.content for r in neighbours)
    pool = sorted(consolidating, key=lambda r: str(r.id))
    random.Random(str(run.id)).shuffle(pool)  # the same sample when a run is retried
    sampled: list[Probe] = []
    for row in pool:
        if len(sampled) >= sample_size(len(consolidating), policy):
            break
        phrase = canary_query(row.content, frequency)
        if phrase:
            sampled.append(Probe(phrase, frozenset([row.id]), f"memory {row.id}"))
    return configured + sampled


def sample_size(consolidated: int, policy: CanaryPolicy) -> int:
    """Canaries sampled for a run that consolidates this many memories: proportional (one per memory, at most
    `policy.sample`), none below `policy.min_consolidated` — a tiny run is not worth 40 searches."""
    if consolidated < policy.min_consolidated:
        return 0
    return min(policy.sample, consolidated)


def probe_recalls(*, tenant_id: int, user_id: str, probes: Sequence[Probe], search: SearchPolicy) -> list[float]:
    """Budget recall of each probe: every search in one read transaction, then one provenance query for all
    the hits. The newer-first reordering is left out (`memories_ranked`): it costs more than the search on a
    small run, and the before and after rankings are compared with the same function."""
    scope = MemoryFilter(tenant_id=tenant_id, user_id=user_id)
    with transaction.atomic():
        rankings = [memories_ranked(scope=scope, query=probe.query, top_k=SEARCH_DEPTH, policy=search)
                    for probe in probes]
        covers = provenance(list({memory_id for ranking in rankings for memory_id, _ in ranking}))
    return [budget_recall(ranking, covers, probe.expected) for probe, ranking in zip(probes, rankings, strict=True)]


def canary_baseline(*, run: ConsolidationRun, consolidating: Sequence[MemoryRow],
                    neighbours: Sequence[MemoryRow], policy: Policy) -> Baseline:
    """Measure before the run writes; no canaries when the run's policy turns the net off or there is nothing to
    guard (the baseline still carries the policy the omission check reads after the run)."""
    if not policy.canaries.enabled or not consolidating:
        return Baseline([], [], policy)
    probes = canary_probes(run=run, consolidating=consolidating, neighbours=neighbours, policy=policy.canaries)
    return Baseline(probes, probe_recalls(tenant_id=run.tenant_id, user_id=run.user_id, probes=probes,
                                          search=policy.search) if probes else [], policy)


@dataclass(frozen=True)
class Verdict:
    canaries: int
    before: float
    after: float
    worse: list[str]  # labels of the canaries whose recall dropped
    max_drop: float  # the policy's canaries.max_drop

    @property
    def drop(self) -> float:
        return self.before - self.after

    @property
    def failed(self) -> bool:
        # Rounded: 1.0 - 0.95 is 0.05000000000000004 in floating point, and one canary of 20 lost is a drop of
        # exactly 0.05, which "more than max_drop" allows.
        return round(self.drop, 9) > self.max_drop

    def as_json(self) -> dict[str, Any]:
        return {"canaries": self.canaries, "recall_before": round(self.before, 4),
                "recall_after": round(self.after, 4), "max_drop": self.max_drop,
                "failed": self.failed, "worse": self.worse[:10]}

    def reason(self, undone: int, refused: Sequence[str]) -> str:
        text = (f"retrieval safety net: budget recall over {self.canaries} canaries fell from {self.before:.3f} to "
                f"{self.after:.3f} (more than {self.max_drop}); {undone} change(s) of this "
                f"run were undone through the ledger")
        if refused:
            text += f"; {len(refused)} could not be undone: " + "; ".join(refused[:3])
        return text + ". Worse: " + ", ".join(self.worse[:5])


def canary_verdict(*, run: ConsolidationRun, baseline: Baseline) -> Verdict:
    after = probe_recalls(tenant_id=run.tenant_id, user_id=run.user_id, probes=baseline.probes,
                          search=baseline.policy.search)
    worse = [p.label for p, b, a in zip(baseline.probes, baseline.before, after, strict=True) if a < b]
    return Verdict(len(after), baseline.mean, sum(after) / len(after), worse, baseline.policy.canaries.max_drop)


def safety_check(*, run: ConsolidationRun, worker: str, baseline: Baseline | None) -> str | None:
    """After the run wrote: measure again, keep the figures on the run, and undo the run's changes when
    retrieval got worse; a run that stands goes through the omission check (which may hold it for review).
    Returns the reason the run fails, or None."""
    if baseline is None:
        return None
    failure = _canaries_check(run=run, worker=worker, baseline=baseline) if baseline.probes else None
    if failure is None:
        omissions_record(run=run, worker=worker, policy=baseline.policy)
    return failure


def _canaries_check(*, run: ConsolidationRun, worker: str, baseline: Baseline) -> str | None:
    verdict = canary_verdict(run=run, baseline=baseline)
    with transaction.atomic():
        run_progress(run_id=run.id, canaries=verdict.as_json())
    if not verdict.failed:
        return None
    run_fence(run_id=run.id, worker=worker)  # only the run's holder undoes its work
    undone = run_revert(run_id=run.id, actor=f"safety-net:run:{run.id}",
                        reason=f"retrieval safety net: canary recall {verdict.before:.3f} → {verdict.after:.3f}")
    return verdict.reason(undone.undone, undone.refused)
