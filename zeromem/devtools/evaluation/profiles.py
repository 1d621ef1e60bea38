"""`manage.py evaluate profiles`: every LoCoMo speaker gets a profile through the weekly reflection path (the
thresholds and the current-session rule apply), and every profile item links back to LoCoMo turn ids through
the memories it cites."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from consolidation.jobs.reflection import reflection_run_now
from consolidation.selectors import reflection_eligible_scopes
from profiles.models import MemoryProfile
from zeromem.core import services
from zeromem.devtools.evaluation import locomo
from zeromem.devtools.evaluation.retrieval import turn_items
from zeromem.models import Memory


def evaluate_profiles(*, conversations: list[locomo.Conversation], progress: Callable[[str], None]
                      ) -> dict[str, Any]:
    started = time.perf_counter()
    tenant = services.tenant_get_or_create(name=f"evaluate-profiles-{uuid.uuid4().hex[:8]}")
    speakers = {(f"locomo-{c.sample_id}", t.speaker) for c in conversations for t in c.turns}
    for conversation in conversations:
        services.memories_import(tenant_id=tenant.id, batches=turn_items(f"locomo-{conversation.sample_id}",
                                                                         conversation))
    runs = []
    for scope in reflection_eligible_scopes(tenant_id=tenant.id):
        runs.append(reflection_run_now(scope=scope, trigger="cli").run)
        progress(f"{scope.user_id} / {scope.entity_id}: {runs[-1].status}, {runs[-1].reviewed} turns reflected, "
                 f"{len(runs[-1].result.get('insights', []))} insights")
    turn_of = dict(Memory.objects.filter(tenant=tenant).exclude(metadata__dia_id=None)
                   .values_list("id", "metadata__dia_id"))
    items = [item for profile in MemoryProfile.objects.filter(tenant=tenant)
             for item in profile.preferences + profile.behaviors + profile.facts]
    linked = [item for item in items if item["source_ids"]
              and all(turn_of.get(uuid.UUID(s)) for s in item["source_ids"])]
    with_items = {(p.user_id, p.entity_id) for p in MemoryProfile.objects.filter(tenant=tenant)
                  if p.preferences or p.behaviors or p.facts}
    return {
        "conversations": len(conversations), "speakers": len(speakers), "runs": len(runs),
        "failed_runs": sum(run.status != "succeeded" for run in runs),
        "speakers_with_profile": len(with_items & speakers), "profile_items": len(items),
        "items_linked_to_turns": len(linked), "turns_reflected": sum(run.reviewed for run in runs),
        "example": next(({"speaker": p.entity_id, "summary": p.summary,
                          "items": [{"statement": i["statement"], "turns": [turn_of.get(uuid.UUID(s))
                                                                            for s in i["source_ids"]]}
                                    for i in (p.preferences + p.behaviors + p.facts)[:5]]}
                         for p in MemoryProfile.objects.filter(tenant=tenant).order_by("id")), None),
        "seconds": round(time.perf_counter() - started, 1),
    }
