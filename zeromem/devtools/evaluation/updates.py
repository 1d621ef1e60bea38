"""`manage.py evaluate updates` over ../shared/eval/updates/cases.jsonl (see its README): does clustering
retire a replaced value, keep a still-true one, and let the current value outrank the stale one?"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.utils import timezone

from zeromem.core import services
from zeromem.core.policies import policy_for
from zeromem.core.selectors import MemoryFilter, memories_search
from zeromem.devtools.evaluation.tenants import evaluation_tenant
from zeromem.models import Memory

DEFAULT_PATH = Path(__file__).resolve().parents[4] / "shared" / "eval" / "updates" / "cases.jsonl"


@dataclass(frozen=True)
class CaseResult:
    id: str
    expect: str
    current_above_stale: bool
    stale_superseded: bool
    superseded_any: bool

    @property
    def passed(self) -> bool:
        if self.expect == "supersede":
            return self.current_above_stale and self.stale_superseded
        return not self.superseded_any


def load_cases(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _items(case: dict[str, Any], user_id: str, now: datetime) -> list[services.MemoryInput]:
    """The two statements on their days, filler spread over the period, and a last filler-only session today."""
    def on(days_ago: float, text: str) -> services.MemoryInput:
        day = now - timedelta(days=days_ago)
        return services.MemoryInput(content=text, user_id=user_id, entity_id=case.get("entity_id"),
                                    session_id=f"day-{day.date().isoformat()}", created_at=day)

    span, filler = case["stale_days_ago"], case["filler"]
    items = [on(case["stale_days_ago"], case["stale_text"]), on(case["current_days_ago"], case["current_text"])]
    items += [on(span * (len(filler) - i) / (len(filler) + 1), text) for i, text in enumerate(filler[:-1])]
    return items + [on(0, filler[-1])]


def _first_rank(hits: list[Memory], wanted: Callable[[str], bool]) -> int | None:
    return next((rank for rank, memory in enumerate(hits) if wanted(memory.content.lower())), None)


def evaluate_case(*, tenant_id: int, case: dict[str, Any], cluster: Callable[[int, str], Any]) -> CaseResult:
    user_id = f"{case['id']}-{uuid.uuid4().hex[:6]}"
    ids = services.memories_ingest(tenant_id=tenant_id, items=_items(case, user_id, timezone.now())).ids
    cluster(tenant_id, user_id)
    stale, current = Memory.objects.get(id=ids[0]), Memory.objects.get(id=ids[1])
    hits = [h.memory for h in memories_search(scope=MemoryFilter(tenant_id=tenant_id, user_id=user_id),
                                              query=case["question"], top_k=10,
                                              policy=policy_for(tenant_id=tenant_id).search)]
    current_value, stale_value = str(case["current"]).lower(), str(case["stale"]).lower()
    current_rank = _first_rank(hits, lambda text: current_value in text)
    stale_rank = _first_rank(hits, lambda text: stale_value in text and current_value not in text)
    return CaseResult(
        id=case["id"], expect=case["expect"],
        current_above_stale=current_rank is not None and (stale_rank is None or current_rank < stale_rank),
        stale_superseded=stale.state == "archived" and stale.superseded_by_id is not None,
        superseded_any=any(m.state == "archived" or m.superseded_by_id for m in (stale, current)))


def evaluate_updates(*, cases: list[dict[str, Any]], cluster: Callable[[int, str], Any],
                     report: Callable[[CaseResult], None], reader: str | None = None) -> dict[str, Any]:
    """`reader` names the language reader judging the pairs (`updates.reader`); None keeps the policy's default."""
    tenant = evaluation_tenant("updates", {"updates": {"reader": reader}} if reader else None)
    results = []
    for case in cases:
        results.append(evaluate_case(tenant_id=tenant.id, case=case, cluster=cluster))
        report(results[-1])
    supersede = [r for r in results if r.expect == "supersede"]
    keep = [r for r in results if r.expect != "supersede"]
    return {"cases": len(supersede), "current_above_stale": sum(r.current_above_stale for r in supersede),
            "stale_superseded": sum(r.stale_superseded for r in supersede), "keep_cases": len(keep),
            "false_supersedes": sum(r.superseded_any for r in keep), "passed": sum(r.passed for r in results),
            "total": len(results), "reader": policy_for(tenant_id=tenant.id).updates.reader}
