"""The LLM as a second opinion on knowledge updates (optional): with a model configured for the tenant (the one
reflection uses) and budget left, the statement pairs the rules are unsure about go to it, `update_judging.BATCH`
pairs a call, before the clustering run writes anything. Calls and tokens are charged to the run and the tenant
(purpose "update_judging"). A call that fails, or a reply of the wrong shape, leaves the rules' answer for its
pairs; an unavailable model never fails the run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from decimal import Decimal

from django.db import transaction
from django.db.models import F

from consolidation.domain import update_judging
from consolidation.domain.contradictions import CONTRADICTS, SUPERSEDE, ClaimVerdict, Verdict
from consolidation.domain.insights import InvalidOutput
from consolidation.jobs.reflection import budget_refusal, reflection_model
from consolidation.models import ConsolidationRun
from consolidation.runs import run_progress
from zeromem.core.adapters import llm
from zeromem.core.domain.policy import UpdatesPolicy
from zeromem.core.services import llm_usage_add
from zeromem.models import Tenant

logger = logging.getLogger(__name__)

Judge = Callable[[Sequence[ClaimVerdict]], list[ClaimVerdict]]


@dataclass
class Judging:
    """What one run's judging did: counted into the run's result."""

    sent: int = 0
    decided: int = 0
    failed_calls: int = 0
    usage: llm.Usage = field(default_factory=llm.Usage)


def update_judge(*, run: ConsolidationRun, tenant: Tenant, policy: UpdatesPolicy) -> Judge | None:
    """The judge for this run, or None when no model is configured (the built-in engine) or the budget is spent."""
    model = reflection_model(tenant)
    if llm.is_builtin(model) or budget_refusal(tenant, model):
        return None
    min_gap = timedelta(hours=policy.min_gap_hours)
    return lambda verdicts: judge_unsure(verdicts, model=model, run=run, tenant=tenant, min_gap=min_gap)


def judge_unsure(verdicts: Sequence[ClaimVerdict], *, model: str, run: ConsolidationRun, tenant: Tenant,
                 min_gap: timedelta) -> list[ClaimVerdict]:
    """The verdicts with the unsure ones replaced by the model's answers, where it gave one."""
    unsure = [n for n, v in enumerate(verdicts) if v.verdict.unsure]
    batches = [unsure[i:i + update_judging.BATCH] for i in range(0, len(unsure), update_judging.BATCH)]
    judging = Judging(sent=len(unsure))
    answers: dict[int, update_judging.Judged] = {}

    def call(batch: list[int]) -> llm.Completion:
        return llm.complete(model=model, messages=update_judging.build_messages(_pairs(verdicts, batch)))

    for batch, completion in zip(batches, llm.map_bounded(call, batches), strict=True):
        if isinstance(completion, Exception):
            judging.failed_calls += 1
            logger.warning("update judging call failed, the rules' answers stand: %s", completion)
            continue
        judging.usage += completion.usage
        answers.update(_answers(completion.text, batch))
    judging.decided = len(answers)
    _charge(run, tenant, judging)
    return [_decided(v, answers[n], min_gap) if n in answers else v for n, v in enumerate(verdicts)]


def _pairs(verdicts: Sequence[ClaimVerdict], batch: list[int]) -> list[update_judging.Pair]:
    return [update_judging.Pair(number=position + 1, older=verdicts[n].older.text,
                                older_at=verdicts[n].older.statement.at, newer=verdicts[n].newer.text,
                                newer_at=verdicts[n].newer.statement.at) for position, n in enumerate(batch)]


def _answers(text: str, batch: list[int]) -> dict[int, update_judging.Judged]:
    """Verdict index → the model's answer; nothing for a reply of the wrong shape."""
    try:
        judged = update_judging.parse_reply(text, range(1, len(batch) + 1))
    except InvalidOutput as exc:
        logger.warning("update judging reply ignored, the rules' answers stand: %s", exc)
        return {}
    return {batch[j.number - 1]: j for j in judged}


def _decided(found: ClaimVerdict, judged: update_judging.Judged, min_gap: timedelta) -> ClaimVerdict:
    """The model's answer, except that two statements made within `min_gap` never supersede one another (the rules'
    own condition): the model's "supersede" there is a flag."""
    reason = f"model: {judged.reason}" if judged.reason else "model"
    kind = judged.kind
    if kind == SUPERSEDE and found.newer.statement.at - found.older.statement.at < min_gap:
        kind = CONTRADICTS
    return replace(found, verdict=Verdict(kind, reason, found.verdict.overlap))


def _charge(run: ConsolidationRun, tenant: Tenant, judging: Judging) -> None:
    """The run's counters (incremented: a resumed run keeps what an earlier attempt spent) and the tenant's."""
    usage = judging.usage
    with transaction.atomic():
        ConsolidationRun.objects.filter(pk=run.id).update(
            llm_calls=F("llm_calls") + usage.calls, prompt_tokens=F("prompt_tokens") + usage.prompt_tokens,
            completion_tokens=F("completion_tokens") + usage.completion_tokens,
            cost_usd=F("cost_usd") + Decimal(str(round(usage.cost_usd, 6))))
        run_progress(run_id=run.id, update_judging={"pairs_sent": judging.sent, "pairs_decided": judging.decided,
                                                    "failed_calls": judging.failed_calls, "calls": usage.calls})
        if usage.calls:
            llm_usage_add(tenant_id=tenant.id, purpose="update_judging", usage=usage)
