"""Profile reads, and the context an agent injects into its prompt: the profile plus the best search results."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings

from profiles.models import MemoryProfile
from zeromem.core.domain.recall import relevant_excerpt
from zeromem.core.selectors import MemoryFilter, SearchHit, memories_search

PROFILE_SHARE = 0.5  # at most this share of the budget goes to the profile; search results get the rest
EXCERPT_CHARS = 300  # a longer memory shows its sentences relevant to the query, so more results fit


def profile_get(*, tenant_id: int, user_id: str, entity_id: str | None, namespace: str) -> MemoryProfile | None:
    return MemoryProfile.objects.filter(tenant_id=tenant_id, user_id=user_id, entity_id=entity_id or "",
                                        namespace=namespace).first()


@dataclass
class Context:
    text: str
    profile: MemoryProfile | None
    profile_items: list[dict[str, Any]] = field(default_factory=list)
    hits: list[SearchHit] = field(default_factory=list)


def context_build(*, tenant_id: int, user_id: str, entity_id: str | None, namespace: str, query: str,
                  budget_chars: int, top_k: int = 30, as_of: datetime | None = None,
                  include_history: bool = False) -> Context:
    """Profile summary and items (most confident first) within PROFILE_SHARE of the budget, then search results in
    rank order; every piece is taken whole or not at all, so the text never exceeds `budget_chars`.

    `as_of`: the memories true at that time (see `MemoryFilter`), and no profile: a profile is today's knowledge.
    `include_history`: superseded and consolidated memories too; a superseded one's line says since when it no
    longer holds."""
    profile = None if as_of else profile_get(tenant_id=tenant_id, user_id=user_id, entity_id=entity_id,
                                             namespace=namespace)
    lines: list[str] = []
    used = 0

    def take(line: str, limit: int) -> bool:
        nonlocal used
        if used + len(line) + 1 > limit:
            return False
        lines.append(line)
        used += len(line) + 1
        return True

    items = _profile_lines(profile, take, int(budget_chars * PROFILE_SHARE)) if profile else []
    hits = memories_search(scope=MemoryFilter(tenant_id=tenant_id, user_id=user_id, entity_id=entity_id,
                                              namespace=namespace, as_of=as_of, include_history=include_history),
                           query=query, top_k=top_k, min_score=settings.ZEROMEMORY_SEARCH_MIN_SCORE)
    taken: list[SearchHit] = []
    for hit in hits:
        shown = {h.memory.id for h in taken}  # "earlier" only names a newer statement the context holds
        if take(_memory_line(hit, query, labelled=include_history, newer_shown=hit.earlier_than in shown),
                budget_chars):
            taken.append(hit)
    return Context(text="\n".join(lines), profile=profile, profile_items=items, hits=taken)


def _memory_line(hit: SearchHit, query: str, *, labelled: bool, newer_shown: bool) -> str:
    """"- [date it was said] text", the text cut to its relevant sentences; a statement a newer result in the
    context replaces says it is earlier."""
    memory = hit.memory
    said = (memory.valid_from or memory.created_at).date().isoformat()
    line = f"- [{said}] {relevant_excerpt(memory.content, query, limit=EXCERPT_CHARS)}"
    if labelled and memory.superseded_by_id is not None and memory.valid_to is not None:
        return line + f" (superseded on {memory.valid_to.date().isoformat()})"
    return line + (" (earlier; a newer statement above replaces it)" if newer_shown else "")


def _profile_lines(profile: MemoryProfile, take: Any, limit: int) -> list[dict[str, Any]]:
    if profile.summary:
        take(f"Summary: {profile.summary}", limit)
    items = sorted(profile.preferences + profile.behaviors + profile.facts,
                   key=lambda item: -float(item.get("confidence", 0)))
    return [item for item in items if take(f"* {item['category']}: {item['statement']}", limit)]
