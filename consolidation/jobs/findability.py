"""Whether a reflection call's episodes can still be found once its passages stand for them.

Once reflected, an episode leaves search and the passage citing it answers for it. A passage that packs several
topics leaves fewer memories, but for what one of its episodes said it can rank below a near twin elsewhere in the
user's memories (another entity saying the same sentence with other values), and the episode is lost to search —
the retrieval safety net then undoes the whole run. So a call's plan is checked before anything is written: each
episode is searched by the query a canary would use (`canary_query`), once as the store is and once as it would be
with the plan written — the same candidates ranked again with the episodes out of search and the planned passages
in (`pool_ranked`). An episode found now and not then is lost.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from django.db import transaction

from consolidation.domain.merging import MIN_SUBSTANCE, is_low_signal, sentences, split_speaker, substance
from consolidation.selectors import provenance
from zeromem.core.adapters.embeddings import Vector
from zeromem.core.domain.policy import SearchPolicy
from zeromem.core.domain.recall import BUDGET_CHARS, budget_recall, distinctive_phrase, prefix_recall
from zeromem.core.selectors import MemoryFilter, RankingPool, Unwritten, pool_ranked, ranking_pool, texts_lexemes

SEARCH_DEPTH = 25  # hits fetched per search; the 2,000-character budget rarely reaches further
# Characters of other hits a mixed passage must leave room for ahead of it: the run's later calls write passages
# that may rank above it, and a passage reached only at the end of the budget drops out for one of them.
MIXED_SLACK = 200


def canary_query(content: str, frequency: Mapping[str, int]) -> str | None:
    """What a memory is searched by to check that it can still be found: its rarest run of words among its
    neighbours' (`frequency`, `document_frequency` of their texts), taken from its informative sentences; None
    when they say too little to be worth guarding."""
    text = informative_text(content)
    return distinctive_phrase(text, frequency) if substance(text) >= MIN_SUBSTANCE else None


def informative_text(content: str) -> str:
    """The sentences of a memory that say something (greetings, thanks and compliments are not worth guarding:
    consolidation drops them on purpose, as it drops a text that says too little — `substance`)."""
    _, body = split_speaker(content)
    return " ".join(s for s in sentences(body) if not is_low_signal(s))


@dataclass(frozen=True)
class Planned:
    """A passage as a plan would leave it: its key (the earlier passage it grows, else an id of its own), its
    text and vector, the episodes of the plan it cites, and the text of the earlier passage it grows."""

    key: uuid.UUID
    text: str
    vector: Vector | None
    cites: frozenset[uuid.UUID]
    replaces: str | None = None


class Findability:
    """Which episodes the plans of one call would lose to search. Each query is searched once (two statements);
    every plan then ranks the same candidates again, with one statement for the planned texts' lexemes and one
    for provenance. Nothing is written."""

    def __init__(self, *, tenant_id: int, user_id: str, search: SearchPolicy) -> None:
        self.scope, self.search = MemoryFilter(tenant_id=tenant_id, user_id=user_id), search
        self.pools: dict[str, RankingPool] = {}

    def lost(self, queries: Mapping[uuid.UUID, str], *, gone: Collection[uuid.UUID], planned: Sequence[Planned],
             mixed: Collection[uuid.UUID] = ()) -> set[uuid.UUID]:
        """The episodes (`queries`: each one's canary query) a search of the user finds within the budget now but
        would not once the memories `gone` leave search and the `planned` passages are written; an episode in
        `mixed` must be reached with MIXED_SLACK characters of the budget to spare."""
        if not queries:
            return set()
        lexemes = texts_lexemes([*(p.text for p in planned), *(p.replaces for p in planned if p.replaces)])
        replaced = iter(lexemes[len(planned):])  # the replaced texts' lexemes, in the order of `planned`
        added = [Unwritten(p.key, len(p.text), p.vector, own, next(replaced) if p.replaces else None)
                 for p, own in zip(planned, lexemes, strict=False)]
        with transaction.atomic():  # one snapshot for every search
            for query in set(queries.values()) - set(self.pools):
                self.pools[query] = ranking_pool(scope=self.scope, query=query, policy=self.search)
            now = {e: pool_ranked(self.pools[q], top_k=SEARCH_DEPTH) for e, q in queries.items()}
            then = {e: pool_ranked(self.pools[q], top_k=SEARCH_DEPTH, gone=gone, added=added)
                    for e, q in queries.items()}
            covers = dict(provenance(list({m for ranking in (*now.values(), *then.values()) for m, _ in ranking})))
        for p in planned:
            covers[p.key] = covers.get(p.key, frozenset([p.key])) | p.cites
        return {e for e in queries if _found(then[e], covers, e, slack=e in mixed) < budget_recall(now[e], covers, [e])}


def _found(hits: Sequence[tuple[uuid.UUID, int]], covers: Mapping[uuid.UUID, frozenset[uuid.UUID]],
           episode: uuid.UUID, *, slack: bool) -> float:
    if slack:
        return prefix_recall(hits, covers, [episode], budget=BUDGET_CHARS - MIXED_SLACK)
    return budget_recall(hits, covers, [episode])
