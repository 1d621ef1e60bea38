"""What clustering retired as superseded, and what replaced it: the list longmemeval, locomo and opsignals report."""

from __future__ import annotations

from zeromem.core.domain.transitions import SUPERSEDED
from zeromem.models import Memory, MemoryState


def superseded_memories(*, tenant_id: int, user_id: str | None = None) -> list[Memory]:
    """The memories archived as superseded (of one user, or of the whole tenant), oldest first."""
    memories = Memory.objects.filter(tenant_id=tenant_id, state=MemoryState.ARCHIVED, archive_reason=SUPERSEDED)
    if user_id is not None:
        memories = memories.filter(user_id=user_id)
    return list(memories.select_related("superseded_by").order_by("created_at", "id"))


def successor_text(memory: Memory) -> str | None:
    """The text of what superseded the memory, if it is still linked."""
    return memory.superseded_by.content if memory.superseded_by else None
