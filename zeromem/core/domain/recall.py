"""Budget recall (ARCHITECTURE.md, "Quality") and canary phrases. Pure: shared by `evaluate` and the retrieval
safety net.

Budget recall takes hits in rank order while their total length stays within the budget (a hit that does not
fit whole is skipped, the next one may still fit), so one huge memory cannot cover a session for free.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

from zeromem.core.domain.text import QUERY_STOP_WORDS, plain_words, sentences, stems

BUDGET_CHARS = 2000
Key = TypeVar("Key", bound=Hashable)


def content_words(text: str) -> list[str]:
    return [w for w in plain_words(text) if w not in QUERY_STOP_WORDS]


def relevant_excerpt(text: str, query: str, *, limit: int) -> str:
    """A long text cut down to its sentences that share most words with the query, in their own order, joined
    by " … " within `limit` characters: both sides of an update fit a context budget. A text within the limit,
    or one no sentence of which shares a word with the query, comes back whole or cut at the limit."""
    if len(text) <= limit:
        return text
    parts = [part for line in text.split("\n") for part in sentences(line)]
    wanted = stems(query)
    shared = [len(stems(part) & wanted) for part in parts]
    chosen: list[int] = []
    used = 0
    for index in sorted(range(len(parts)), key=lambda i: (-shared[i], i)):
        if shared[index] and used + len(parts[index]) + 3 <= limit:
            chosen.append(index)
            used += len(parts[index]) + 3
    if not chosen:
        return text[:limit - 1].rstrip() + "…"
    return " … ".join(parts[i] for i in sorted(chosen))


def within_budget(lengths: Sequence[int], budget: int = BUDGET_CHARS) -> list[int]:
    """Indexes of the hits taken, in rank order."""
    taken, used = [], 0
    for index, length in enumerate(lengths):
        if used + length <= budget:
            taken.append(index)
            used += length
    return taken


def budget_recall(hits: Sequence[tuple[Key, int]], covers: Mapping[Key, Iterable[Hashable]],
                  expected: Iterable[Hashable], budget: int = BUDGET_CHARS) -> float:
    """Share of `expected` covered by the hits (id, length) taken within the budget; `covers[id]` is what a hit
    stands for (itself and, transitively, its sources)."""
    wanted = set(expected)
    if not wanted:
        return 0.0
    covered: set[Hashable] = set()
    for index in within_budget([length for _, length in hits], budget):
        covered.update(covers.get(hits[index][0], ()))
    return len(wanted & covered) / len(wanted)


def prefix_recall(hits: Sequence[tuple[Key, int]], covers: Mapping[Key, Iterable[Hashable]],
                  expected: Iterable[Hashable], budget: int = BUDGET_CHARS) -> float:
    """As `budget_recall`, but reading the hits strictly in rank order until one does not fit (none skipped): a
    hit it finds stays found when other hits come before it within what is left of the budget."""
    wanted = set(expected)
    if not wanted:
        return 0.0
    covered: set[Hashable] = set()
    used = 0
    for key, length in hits:
        used += length
        if used > budget:
            break
        covered.update(covers.get(key, ()))
    return len(wanted & covered) / len(wanted)


def document_frequency(texts: Iterable[str]) -> Counter[str]:
    return Counter(word for text in texts for word in set(content_words(text)))


def distinctive_phrase(text: str, frequency: Mapping[str, int], *, words: int = 8,
                       min_content_words: int = 3) -> str | None:
    """The run of `words` consecutive words of `text` that is rarest among its neighbours (sum of 1/document
    frequency of its content words), or None when the text has too few content words to be told apart."""
    tokens = text.split()
    if len(content_words(text)) < min_content_words:
        return None

    def rarity(window: Sequence[str]) -> float:
        return sum(1.0 / max(1, frequency.get(word, 1)) for word in content_words(" ".join(window)))

    size = min(words, len(tokens))
    best = max(range(len(tokens) - size + 1), key=lambda start: (rarity(tokens[start:start + size]), -start))
    return " ".join(tokens[best:best + size]).strip(" .,;:!?\"'")
