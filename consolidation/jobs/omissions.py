"""The omission check (issue 34): the retrieval safety net's idea at the level of a statement.

After a clustering run wrote (and its canaries passed), up to `omissions.sample` (policy) statements are sampled
from the memories it merged or archived — one per memory, a sentence carrying a value by spaCy's parse
(`zeromem.language.values`) — and each is searched for with the same search the canaries use (the sentence is
the query; called directly, so nothing records an access). A statement is still stated when an active memory within
the search budget (the 2,000 characters an agent reads) contains every one of its values as it was written; one
that none does is an omission. Before the run the statement's own memory said it word for word, so a statement
missing after the run is one the run lost to search.

The counts land on the run (`omission_checked`, `omissions`; `result.omissions` names the memories whose statement
was lost, by id: never the sentence, which is user content and would outlive an erasure). A run that lost more than
`omissions.max_share` of its sample is `held`: its changes stay written, and wait in the review queue for an
operator to release the run or reject it whole (`consolidation.corrections.review`). Superseded statements leave
search on purpose and are not sampled. Cost: a parse of at most READ_FACTOR × sample sentences (one drawn from each
memory drawn), one search per statement, one query for the texts of every hit, and one for the run's sources.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models.expressions import RawSQL

from consolidation.jobs.findability import SEARCH_DEPTH
from consolidation.models import ConsolidationRun, LedgerEntry, RunKind
from consolidation.runs import run_fence, run_progress
from zeromem.core.domain.policy import OmissionPolicy, Policy, SearchPolicy
from zeromem.core.domain.recall import within_budget
from zeromem.core.domain.text import sentences, split_speaker
from zeromem.core.selectors import MemoryFilter, memories_ranked
from zeromem.language.values import values_of, written_in
from zeromem.models import Memory, MemoryState

# The changes whose sources must still be stated: a merge's members, and the small talk archived (it may have
# carried a date or a name). A supersede or a retired claim takes its statement out of search on purpose.
CHECKED_ACTIONS = ("merge", "archive.uninformative")
# Sentences drawn (one per memory, and parsed) at most per statement sampled: a run that consolidated few statements
# (small talk, mostly) must not parse all it archived looking for one.
READ_FACTOR = 4
# A memory whose stored parse (`default.reading_json`, per clause) read a fact: a PostgreSQL JSON path.
ANY_FACT = "$.claims.*.facts[0]"


@dataclass(frozen=True)
class Statement:
    source: uuid.UUID  # the memory it was said in
    text: str  # the sentence: the query
    values: tuple[str, ...]  # lower-cased (`zeromem.language.values`)


@dataclass(frozen=True)
class Omissions:
    checked: int
    missing: list[uuid.UUID]  # the memories whose sampled statement no active memory states any more
    max_share: float  # the policy's omissions.max_share

    @property
    def share(self) -> float:
        return len(self.missing) / self.checked if self.checked else 0.0

    @property
    def held(self) -> bool:
        return round(self.share, 9) > self.max_share  # one of 20 lost is exactly 0.05, which max_share 0.05 allows

    def as_json(self) -> dict[str, Any]:
        return {"checked": self.checked, "omissions": len(self.missing), "max_share": self.max_share,
                "held": self.held, "missing": [f"memory {m}" for m in self.missing[:10]]}


def run_sources(run_id: uuid.UUID) -> list[uuid.UUID]:
    """The memories the run merged or archived, by its ledger rows that still stand."""
    found: dict[uuid.UUID, None] = {}
    for action, memory_ids, inputs in LedgerEntry.objects.filter(
            run_id=run_id, action__in=CHECKED_ACTIONS, undone_by__isnull=True).values_list(
            "action", "memory_ids", "inputs"):
        ids = [m["id"] for m in inputs.get("members", [])] if action == "merge" else memory_ids
        found.update((uuid.UUID(str(i)), None) for i in ids)
    return list(found)


def sentences_drawn(*, seed: str, memory_ids: Sequence[uuid.UUID], sample: int) -> list[tuple[uuid.UUID, str]]:
    """(memory, one of its sentences) for at most READ_FACTOR × `sample` of the memories, drawn at random (the same
    draw for the same `seed`, so a retried run checks the same statements). Memories whose stored parse found a fact
    come first, with one of those clauses: in chat most sentences state no value (about one in ten on LoCoMo), and
    a blind draw would parse many to find a few. Only the drawn memories' texts are read."""
    draw = random.Random(seed)
    flags = sorted(Memory.objects.filter(id__in=memory_ids).annotate(stated=RawSQL("features @? %s", (ANY_FACT,)))
                   .values_list("id", "stated"), key=lambda row: str(row[0]))
    draw.shuffle(flags)
    chosen = [memory_id for memory_id, _ in sorted(flags, key=lambda row: not row[1])][:READ_FACTOR * sample]
    rows = {memory_id: (content, features) for memory_id, content, features
            in Memory.objects.filter(id__in=chosen).values_list("id", "content", "features")}
    return [(memory_id, draw.choice(said)) for memory_id in chosen if memory_id in rows
            if (said := _clauses_with_facts(*rows[memory_id]) or sentences(split_speaker(rows[memory_id][0])[1]))]


def _clauses_with_facts(content: str, features: dict[str, Any] | None) -> list[str]:
    """The memory's clauses its stored parse read a fact from (`default.reading_json`), as they stand in it."""
    claims = (features or {}).get("claims") or {}
    return [clause for clause, reading in claims.items() if (reading or {}).get("facts") and clause in content]


def statements_sampled(*, drawn: Sequence[tuple[uuid.UUID, str]], sample: int) -> list[Statement]:
    """Up to `sample` of the drawn sentences that state a value, parsed `sample` at a time until enough are found."""
    found: list[Statement] = []
    for start in range(0, len(drawn), max(sample, 1)):
        if len(found) >= sample:
            break
        batch = drawn[start:start + sample]
        found += [Statement(memory_id, sentence, tuple(sorted(values))) for (memory_id, sentence), values
                  in zip(batch, values_of([sentence for _, sentence in batch]), strict=True) if values]
    return found[:sample]


def statements_found(*, tenant_id: int, user_id: str, statements: Sequence[Statement],
                     search: SearchPolicy) -> list[bool]:
    """Whether an active memory within each statement's search budget still states it: every search in one read
    transaction, then one query for the texts of all the hits."""
    scope = MemoryFilter(tenant_id=tenant_id, user_id=user_id)
    with transaction.atomic():
        rankings = [memories_ranked(scope=scope, query=s.text, top_k=SEARCH_DEPTH, policy=search) for s in statements]
        read = [[ranking[i][0] for i in within_budget([length for _, length in ranking])] for ranking in rankings]
        texts = dict(Memory.objects.filter(id__in={m for hits in read for m in hits}, state=MemoryState.RAW)
                     .values_list("id", "content"))
    return [any(written_in(s.values, texts.get(hit, "")) for hit in hits)
            for s, hits in zip(statements, read, strict=True)]


def omission_check(*, run: ConsolidationRun, policy: OmissionPolicy, search: SearchPolicy) -> Omissions | None:
    """Measure a clustering run after it wrote; None when the policy turns the check off or it consolidated
    nothing that states a value."""
    if run.kind != RunKind.CLUSTERING or not policy.enabled or not policy.sample:
        return None
    drawn = sentences_drawn(seed=str(run.id), memory_ids=run_sources(run.id), sample=policy.sample)
    statements = statements_sampled(drawn=drawn, sample=policy.sample)
    if not statements:
        return None
    found = statements_found(tenant_id=run.tenant_id, user_id=run.user_id, statements=statements, search=search)
    return Omissions(len(statements), [s.source for s, ok in zip(statements, found, strict=True) if not ok],
                     policy.max_share)


def omissions_record(*, run: ConsolidationRun, worker: str, policy: Policy) -> Omissions | None:
    """Check the run and keep the figures on it; a run that lost more than the tenant allows is held for review
    (only by the run's holder: a worker that lost the run marks nothing)."""
    started = time.perf_counter()
    omissions = omission_check(run=run, policy=policy.omissions, search=policy.search)
    if omissions is None:
        return None
    with transaction.atomic():
        run_fence(run_id=run.id, worker=worker)
        ConsolidationRun.objects.filter(pk=run.id).update(omission_checked=omissions.checked,
                                                          omissions=len(omissions.missing), held=omissions.held)
        run_progress(run_id=run.id, omissions={**omissions.as_json(),
                                               "seconds": round(time.perf_counter() - started, 3)})
    return omissions
