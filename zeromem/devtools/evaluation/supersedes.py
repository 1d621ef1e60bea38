"""What clustering retired as superseded, and what replaced it: the list longmemeval, locomo and opsignals report."""

from __future__ import annotations

from django.db.models import QuerySet

from zeromem.core.domain.transitions import SUPERSEDED
from zeromem.models import Memory, MemoryState


def superseded_count(*, tenant_id: int, user_id: str) -> int:
    return _superseded(tenant_id, user_id).count()


def superseded_memories(*, tenant_id: int, user_id: str | None = None) -> list[Memory]:
    """The memories archived as superseded (of one user, or of the whole tenant), oldest first."""
    return list(_superseded(tenant_id, user_id).select_related("superseded_by").order_by("created_at", "id"))


def successor_text(memory: Memory) -> str | None:
    """The text of what superseded the memory, if it is still linked."""
    return memory.superseded_by.content if memory.superseded_by else None


def listed(memories: list[Memory]) -> list[dict[str, str | None]]:
    """Each retired memory as the evaluations list it: whose, its text, and what replaced it."""
    return [{"user_id": m.user_id, "older": m.content, "newer": successor_text(m)} for m in memories]


def _superseded(tenant_id: int, user_id: str | None) -> QuerySet[Memory]:
    memories = Memory.objects.filter(tenant_id=tenant_id, state=MemoryState.ARCHIVED, archive_reason=SUPERSEDED)
    return memories if user_id is None else memories.filter(user_id=user_id)
