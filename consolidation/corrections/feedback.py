"""Agent feedback on a memory: its reward moves, with a ledger row."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.db.models import F

from consolidation.ledger import ledger_write
from zeromem.models import Memory


def memory_feedback(*, tenant_id: int, memory_id: uuid.UUID, useful: bool, actor: str, step: float) -> float:
    """Move the memory's reward a `step` share of the way towards +1 (useful) or −1 (not): bounded in [−1, 1],
    big moves early, small ones once it is settled. Consolidation reads it into stability. Returns the new
    reward; raises Memory.DoesNotExist for a memory outside the tenant."""
    target = 1.0 if useful else -1.0
    with transaction.atomic():
        updated = Memory.objects.filter(tenant_id=tenant_id, id=memory_id).update(
            reward_score=F("reward_score") + step * (target - F("reward_score")))
        if not updated:
            raise Memory.DoesNotExist(f"memory {memory_id} does not exist in this tenant")
        memory = Memory.objects.get(id=memory_id)
        ledger_write(tenant_id=tenant_id, action="feedback", actor=actor, user_id=memory.user_id,
                     memory_ids=[memory_id], inputs={"useful": useful},
                     outputs={"reward_score": round(memory.reward_score, 4)}, reason="agent feedback")
    return float(memory.reward_score)
