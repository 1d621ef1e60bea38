"""Window digests: one memory that sums up an operational window (normal, degraded, outage, …). Pure; no Django.

A digest is extractive: a one-line generalisation (the window, its event count and its dominant tags),
then the statements of the window's most important members, near-duplicates collapsed, within a length limit.
Its importance is the mean importance of the window's events (`mean_importance`), so a digest of a quiet window
stays unimportant and one of an outage stays urgent (the few loudest events it quotes would make every digest
look urgent: 0.30 for the normal window of `evaluate opsignals`, 0.98 for its outage, against 0.26 and 0.92 for
their events). A member ranks by the loudest event it stands for. An earlier digest of the window is one of its
members: its headline is not repeated, only its statements count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from consolidation.domain.merging import Member, merge_cluster

DOMINANT = 3  # tags (or names) named in the headline
SOURCE_TYPE = "window_digest"  # a digest's `metadata["source_type"]`


@dataclass(frozen=True)
class Event:
    text: str
    importance: float
    on: date
    labels: tuple[str, ...]  # its tags: what the headline generalises from


@dataclass(frozen=True)
class Digest:
    text: str
    importance: float
    chosen: tuple[int, ...]  # indexes of the events whose statements it carries


def window_digest(window: str, events: Sequence[Event], *, event_count: int, limit: int,
                  importance: float | None = None) -> Digest:
    """The digest of a window from what its memories say (in any order); `event_count` is how many events the
    window covers in all (earlier digests included); `importance` defaults to the mean of the given events'."""
    ranked = sorted(range(len(events)), key=lambda i: (-events[i].importance, i))
    headline = _headline(window, event_count, [e.labels for e in events])
    # Only the loudest can fit: merging more would cost time (its redundancy check is quadratic) for nothing.
    loudest = ranked[:max(limit // 10, 1)]
    chunks = merge_cluster([Member(events[i].text, events[i].on) for i in loudest],
                           limit=max(limit - len(headline) - 1, 80))
    first = chunks[0] if chunks else None
    chosen = tuple(loudest[m] for m in first.members) if first else tuple(ranked[:1])
    body = first.text if first else events[ranked[0]].text
    mean = sum(e.importance for e in events) / len(events) if importance is None else importance
    return Digest(text=f"{headline} {body}".strip(), importance=round(mean, 4), chosen=chosen)


def mean_importance(importances: Sequence[float], *, fallback: float) -> float:
    """The mean of the events' importances (`fallback` when none is known: every event deleted since)."""
    return round(sum(importances) / len(importances), 4) if importances else fallback


def _headline(window: str, count: int, labels: Sequence[tuple[str, ...]]) -> str:
    counts = Counter(label for found in labels for label in dict.fromkeys(found))
    dominant = [label for label, _ in counts.most_common(DOMINANT)]
    return f"{window} window, {count} events" + (f", mostly {', '.join(dominant)}:" if dominant else ":")
