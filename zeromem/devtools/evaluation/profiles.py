"""`manage.py evaluate profiles`: every LoCoMo speaker gets a profile through the weekly reflection path (the
thresholds, the current-session rule and shared calls apply), every profile item links back to LoCoMo turn ids
through the memories it cites, and the items read as statements about the speaker.

The measures use fixed definitions of their own, not the reflection code's decisions: an item is in the third
person when it has no first- or second-person pronoun (I, me, my, we, our, you, your) outside quotation marks and
no speaker label."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from consolidation.jobs.reflection import reflection_user_run_now
from consolidation.selectors import reflection_eligible_scopes
from profiles.models import MemoryProfile
from zeromem.core import services
from zeromem.core.policies import policies_for
from zeromem.devtools.evaluation import locomo
from zeromem.devtools.evaluation.retrieval import turn_items
from zeromem.devtools.evaluation.tenants import evaluation_tenant
from zeromem.models import Memory


def evaluate_profiles(*, conversations: list[locomo.Conversation], progress: Callable[[str], None]
                      ) -> dict[str, Any]:
    started = time.perf_counter()
    tenant = evaluation_tenant("profiles")
    speakers = {(f"locomo-{c.sample_id}", t.speaker) for c in conversations for t in c.turns}
    for conversation in conversations:
        services.memories_import(tenant_id=tenant.id, batches=turn_items(f"locomo-{conversation.sample_id}",
                                                                         conversation))
    runs = []
    scopes = reflection_eligible_scopes(policies=policies_for(tenant_ids=[tenant.id]), tenant_id=tenant.id)
    for user_id in sorted({scope.user_id for scope in scopes}):
        for outcome in reflection_user_run_now(tenant_id=tenant.id, user_id=user_id, trigger="cli"):
            runs.append(outcome.run)
            progress(f"{user_id} / {outcome.run.entity_id}: {outcome.run.status}, {outcome.run.reviewed} turns "
                     f"reflected, {len(outcome.run.result.get('insights', []))} insights")
    turn_of = dict(Memory.objects.filter(tenant=tenant).exclude(metadata__dia_id=None)
                   .values_list("id", "metadata__dia_id"))
    items = [item for profile in MemoryProfile.objects.filter(tenant=tenant)
             for item in profile.preferences + profile.behaviors + profile.facts]
    linked = [item for item in items if item["source_ids"]
              and all(turn_of.get(uuid.UUID(s)) for s in item["source_ids"])]
    profiles = list(MemoryProfile.objects.filter(tenant=tenant))
    with_items = {(p.user_id, p.entity_id) for p in profiles if p.preferences or p.behaviors or p.facts}
    reflected = Memory.objects.filter(tenant=tenant, state="consolidated").exclude(memory_type="semantic").count()
    created = sum(run.created for run in runs)
    return {
        "conversations": len(conversations), "speakers": len(speakers), "runs": len(runs),
        "failed_runs": sum(run.status != "succeeded" for run in runs),
        "speakers_with_profile": len(with_items & speakers), "profile_items": len(items),
        "items_linked_to_turns": len(linked), "turns_reflected": sum(run.reviewed for run in runs),
        "items_per_profile": round(len(items) / len(with_items), 1) if with_items else 0.0,
        "third_person_share": share(items, lambda i: third_person(i["statement"])),
        "multi_source_share": share(items, lambda i: len(i["source_ids"]) >= 2),
        "summary_chars_max": max((len(p.summary) for p in profiles), default=0),
        "new_semantic_per_reflected": round(created / reflected, 3) if reflected else 0.0,
        "not_third_person": [i["statement"] for i in items if not third_person(i["statement"])][:10],
        "example": next(({"speaker": p.entity_id, "summary": p.summary,
                          "items": [{"statement": i["statement"], "turns": [turn_of.get(uuid.UUID(s))
                                                                            for s in i["source_ids"]]}
                                    for i in (p.preferences + p.behaviors + p.facts)[:5]]}
                         for p in MemoryProfile.objects.filter(tenant=tenant).order_by("id")), None),
        "seconds": round(time.perf_counter() - started, 1),
    }


_QUOTED = re.compile(r'"[^"]*"|“[^”]*”')
_FIRST_OR_SECOND_PERSON = re.compile(r"\b(?:i|me|my|we|our|you|your)\b", re.I)
_SPEAKER_LABEL = re.compile(r"^\s*[A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,3}:\s")


def third_person(statement: str) -> bool:
    unquoted = _QUOTED.sub(" ", statement)
    return not (_FIRST_OR_SECOND_PERSON.search(unquoted) or _SPEAKER_LABEL.match(statement))


def share(items: list[dict[str, Any]], test: Callable[[dict[str, Any]], bool]) -> float:
    return round(sum(map(test, items)) / len(items), 3) if items else 0.0
