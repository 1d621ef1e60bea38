"""Profile reads, and the context an agent injects into its prompt: the profile plus the best search results."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from profiles.models import MemoryProfile
from zeromem.core.domain.policy import Policy
from zeromem.core.domain.recall import relevant_excerpt
from zeromem.core.domain.text import normalised_sentence, sentences
from zeromem.core.selectors import MemoryFilter, SearchHit, memories_search

PROFILE_SHARE = 0.5  # at most this share of the budget goes to the profile; search results get the rest
EXCERPT_CHARS = 300  # a longer memory shows its sentences relevant to the query, so more results fit

Item = dict[str, Any]  # a profile item as stored: {category, statement, confidence, first_seen, last_seen, ...}


def profile_get(*, tenant_id: int, user_id: str, entity_id: str | None, namespace: str) -> MemoryProfile | None:
    return MemoryProfile.objects.filter(tenant_id=tenant_id, user_id=user_id, entity_id=entity_id or "",
                                        namespace=namespace).first()


@dataclass(frozen=True)
class ProfileView:
    """What GET /profile shows within a budget: the summary ("" when it did not fit) and the items taken,
    strongest first, split into the long-standing and the recently said."""

    summary: str
    static: list[Item]
    recent: list[Item]


def profile_view(*, profile: MemoryProfile, budget_chars: int | None, now: datetime, recent_days: int
                 ) -> ProfileView:
    """The summary, then the strongest items (`weight`, else `confidence`; the latest seen first on a tie), each
    taken whole or not at all and counted as its text plus a line break, never past `budget_chars` (None: all of
    them). An item first said (`valid_from`, else `first_seen`) within `recent_days` (the policy's
    profile.recent_days) of `now` is recent, an older one static."""
    room = sys.maxsize if budget_chars is None else budget_chars
    summary = profile.summary if profile.summary and len(profile.summary) + 1 <= room else ""
    taken = _fitting(_strongest_first(_items(profile)), room - (len(summary) + 1 if summary else 0))
    since = now - timedelta(days=recent_days)
    return ProfileView(summary=summary, static=[i for i in taken if first_said(i) < since],
                       recent=[i for i in taken if first_said(i) >= since])


def _items(profile: MemoryProfile) -> list[Item]:
    return [*profile.preferences, *profile.behaviors, *profile.facts]


def _strongest_first(items: list[Item]) -> list[Item]:
    return sorted(items, key=lambda i: (item_weight(i), _moment(i["last_seen"])), reverse=True)


def item_weight(item: Item) -> float:
    """How strongly an item counts: its weight (its confidence, lowered once a newer item replaced it); items
    written before weights existed carry only their confidence."""
    weight = item.get("weight")
    return float(item.get("confidence", 0) if weight is None else weight)


def first_said(item: Item) -> datetime:
    """When an item was first said (items written before `valid_from` existed: when the profile learnt it)."""
    return _moment(item.get("valid_from") or item["first_seen"])


def _moment(iso: str) -> datetime:
    moment = datetime.fromisoformat(iso)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _fitting(items: Iterable[Item], room: int) -> list[Item]:
    """The items, in order, each whole or not at all, while its statement and a line break fit in `room`."""
    taken = []
    for item in items:
        size = len(item["statement"]) + 1
        if size <= room:
            taken.append(item)
            room -= size
    return taken


@dataclass
class Context:
    text: str
    profile: MemoryProfile | None
    profile_items: list[Item] = field(default_factory=list)
    hits: list[SearchHit] = field(default_factory=list)


Take = Callable[[str, int], bool]  # append a line if it fits within the limit; whether it did


def context_build(*, tenant_id: int, user_id: str, entity_id: str | None, namespace: str, query: str,
                  budget_chars: int, policy: Policy, top_k: int = 30, as_of: datetime | None = None,
                  include_history: bool = False) -> Context:
    """Profile summary and items (strongest first) within PROFILE_SHARE of the budget, then search results in
    rank order; every piece is taken whole or not at all, so the text never exceeds `budget_chars`. No sentence is
    said twice: the summary is composed from the strongest items and reflection's passages repeat what items say,
    so an item already said is skipped and a memory shows only its sentences not yet said (none left: skipped,
    and not in `hits`).

    `as_of`: the memories true at that time (see `MemoryFilter`), and no profile: a profile is today's knowledge.
    `include_history`: superseded and consolidated memories too; a superseded one's line says since when it no
    longer holds."""
    profile = None if as_of else profile_get(tenant_id=tenant_id, user_id=user_id, entity_id=entity_id,
                                             namespace=namespace)
    lines: list[str] = []
    used = 0
    said: set[str] = set()  # the normalised sentences the context holds

    def take(line: str, limit: int) -> bool:
        nonlocal used
        if used + len(line) + 1 > limit:
            return False
        lines.append(line)
        used += len(line) + 1
        return True

    items = _profile_lines(profile, take, said, int(budget_chars * PROFILE_SHARE)) if profile else []
    hits = memories_search(scope=MemoryFilter(tenant_id=tenant_id, user_id=user_id, entity_id=entity_id,
                                              namespace=namespace, as_of=as_of, include_history=include_history),
                           query=query, top_k=top_k, policy=policy.search, min_score=policy.search.min_score)
    taken: list[SearchHit] = []
    for hit in hits:
        excerpt, fresh = _unsaid_excerpt(hit.memory.content, query, said)
        shown = {h.memory.id for h in taken}  # "earlier" only names a newer statement the context holds
        if excerpt and take(_memory_line(hit, excerpt, labelled=include_history,
                                         newer_shown=hit.earlier_than in shown), budget_chars):
            taken.append(hit)
            said.update(key for s in fresh if s in excerpt for key in _said_in(s))
    return Context(text="\n".join(lines), profile=profile, profile_items=items, hits=taken)


def _unsaid_excerpt(content: str, query: str, said: set[str]) -> tuple[str, list[str]]:
    """The memory's sentences not said yet, cut to those relevant to the query when long, and those sentences;
    ("", []) when every sentence is said."""
    parts = _sentences_of(content)
    fresh = [s for s in parts if normalised_sentence(s) not in said]
    if not fresh:
        return "", []
    text = content if len(fresh) == len(parts) else " ".join(fresh)
    return relevant_excerpt(text, query, limit=EXCERPT_CHARS), fresh


def _sentences_of(text: str) -> list[str]:
    # Split as relevant_excerpt splits, so a sentence it shows is one of these.
    return [part for line in text.split("\n") for part in sentences(line)]


def _said_in(text: str) -> set[str]:
    """The normalised sentences a text puts in the context, each also without a heading before a colon: a summary
    opens with one ("alice, 2024-05-02 to 2024-05-09: The deploy failed."), and what follows is said too."""
    return {normalised_sentence(part) for s in _sentences_of(text) for part in (s, s.partition(": ")[2]) if part}


def _memory_line(hit: SearchHit, excerpt: str, *, labelled: bool, newer_shown: bool) -> str:
    """"- [date it was said] excerpt"; a statement a newer result in the context replaces says it is earlier."""
    memory = hit.memory
    said = (memory.valid_from or memory.created_at).date().isoformat()
    line = f"- [{said}] {excerpt}"
    if labelled and memory.superseded_by_id is not None and memory.valid_to is not None:
        return line + f" (superseded on {memory.valid_to.date().isoformat()})"
    return line + (" (earlier; a newer statement above replaces it)" if newer_shown else "")


def _profile_lines(profile: MemoryProfile, take: Take, said: set[str], limit: int) -> list[Item]:
    """The summary, then the most confident items whose statement is not said yet; answers the items taken."""
    if profile.summary and take(f"Summary: {profile.summary}", limit):
        said.update(_said_in(profile.summary))
    taken = []
    for item in _strongest_first(_items(profile)):
        statement = {normalised_sentence(s) for s in _sentences_of(item["statement"])}
        if not statement <= said and take(f"* {item['category']}: {item['statement']}", limit):
            taken.append(item)
            said.update(_said_in(item["statement"]))
    return taken
