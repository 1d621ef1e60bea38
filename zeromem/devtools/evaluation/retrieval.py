"""`manage.py evaluate locomo` (ARCHITECTURE.md, "Quality"): ingest each LoCoMo conversation as one user, measure
retrieval through the product's own search service, run clustering, and measure again with the same service and
parameters.

Measures, per question of categories 1–4 with resolvable evidence:
- recall@k: share of its evidence turns covered by the top k (a semantic memory covers its transitive sources);
- budget recall: the same, over the memories taken in rank order while their total length stays within the
  budget (2,000 characters; a memory that does not fit whole is skipped, the next one may still fit);
- answer hit: at least half of the gold answer's content words (lower-cased, punctuation stripped) appear in
  that same budget of retrieved text;
- text-based budget recall: as budget recall, but an evidence turn counts only when a memory in the budget cites
  it *and* its text keeps at least half of that turn's content words (a memory gets no credit for a turn it
  cites but no longer says);
- evidence_archived_uninformative: evidence turns the run archived as small talk (must stay rare);
- statements_lost: source statements (sentences carrying a value) no active memory states any more and no
  supersede explains (statements.py), with a few under samples.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Sum
from django.db.models.functions import Length

from zeromem.core import services
from zeromem.core.adapters.embeddings import query_cache_stats
from zeromem.core.domain.recall import budget_recall, content_words, within_budget
from zeromem.core.policies import policy_for
from zeromem.core.selectors import MemoryFilter, memories_search
from zeromem.devtools.evaluation import locomo
from zeromem.devtools.evaluation.statements import lost
from zeromem.devtools.evaluation.supersedes import listed, superseded_memories
from zeromem.devtools.evaluation.tenants import evaluation_tenant
from zeromem.models import Memory, MemorySource, Tenant

POOL = 50
KS = (5, 10, 25)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
SUPERSEDES_LISTED = 50
SAMPLES = 5


def answer_hit(answer: str, text: str) -> bool:
    words = content_words(answer)
    if not words:
        return False
    haystack = set(content_words(text))
    return sum(w in haystack for w in words) * 2 >= len(words)


@dataclass
class Scores:
    totals: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    by_category: dict[int, dict[str, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))

    def add(self, category: int, values: dict[str, float]) -> None:
        for key, value in values.items():
            self.totals[key] += value
            self.by_category[category][key] += value

    def mean(self, key: str) -> float:
        return self.totals[key] / self.totals["questions"] if self.totals["questions"] else 0.0


def coverage(tenant_id: int, turn_key: str = "dia_id") -> dict[uuid.UUID, frozenset[str]]:
    """Memory id → the turn ids (`metadata[turn_key]`) it stands for: its own, and transitively its sources'."""
    own = {m: frozenset([d]) if d else frozenset() for m, d in
           Memory.objects.filter(tenant_id=tenant_id).values_list("id", f"metadata__{turn_key}")}
    sources: dict[uuid.UUID, list[uuid.UUID]] = defaultdict(list)
    for memory_id, source_id in MemorySource.objects.filter(memory__tenant_id=tenant_id).values_list(
            "memory_id", "source_memory_id"):
        sources[memory_id].append(source_id)
    resolved: dict[uuid.UUID, frozenset[str]] = {}

    def resolve(memory_id: uuid.UUID, seen: frozenset[uuid.UUID] = frozenset()) -> frozenset[str]:
        if memory_id not in resolved:
            parts = [resolve(s, seen | {memory_id}) for s in sources.get(memory_id, []) if s not in seen]
            resolved[memory_id] = own.get(memory_id, frozenset()).union(*parts)
        return resolved[memory_id]

    return {memory_id: resolve(memory_id) for memory_id in own}


def question_scores(question: locomo.Question, hits: list[Memory], covers: dict[uuid.UUID, frozenset[str]],
                    turn_words: dict[str, frozenset[str]]) -> dict[str, float]:
    evidence = set(question.evidence)
    values: dict[str, float] = {"questions": 1.0}
    for k in KS:
        covered = set().union(*(covers.get(m.id, frozenset()) for m in hits[:k]))
        values[f"recall_at_{k}"] = len(evidence & covered) / len(evidence)
    values["budget_recall"] = budget_recall([(m.id, len(m.content)) for m in hits], covers, evidence)
    budget = [hits[i] for i in within_budget([len(m.content) for m in hits])]
    values["budget_recall_text"] = len(said_again(budget, covers, evidence, turn_words)) / len(evidence)
    values["answer_hit"] = float(answer_hit(question.answer, " ".join(m.content for m in budget)))
    return values


def said_again(budget: list[Memory], covers: dict[uuid.UUID, frozenset[str]], evidence: set[str],
                turn_words: dict[str, frozenset[str]]) -> set[str]:
    """Evidence turns a memory in the budget cites and whose content words it still holds at least half of."""
    found = set()
    for memory in budget:
        words = set(content_words(memory.content))
        for turn in covers.get(memory.id, frozenset()) & evidence:
            wanted = turn_words.get(turn, frozenset())
            if len(wanted & words) * 2 >= len(wanted):
                found.add(turn)
    return found


def measure(tenant_id: int, users: dict[str, locomo.Conversation], progress: Callable[[int], None]) -> Scores:
    covers = coverage(tenant_id)
    scores = Scores()
    search = policy_for(tenant_id=tenant_id).search
    for user_id, conversation in users.items():
        turn_words = {t.dia_id: frozenset(content_words(t.text)) for t in conversation.turns}
        for question in conversation.questions:
            if question.category not in CATEGORIES or not question.evidence:
                continue
            hits = [h.memory for h in memories_search(scope=MemoryFilter(tenant_id=tenant_id, user_id=user_id),
                                                      query=question.question, top_k=POOL, policy=search)]
            scores.add(question.category, question_scores(question, hits, covers, turn_words))
            progress(1)
    return scores


def store_size(tenant_id: int) -> tuple[int, int]:
    active = Memory.objects.filter(tenant_id=tenant_id, state="raw")
    return active.count(), active.aggregate(chars=Sum(Length("content")))["chars"] or 0


def turn_items(user_id: str, conversation: locomo.Conversation) -> Iterable[list[services.MemoryInput]]:
    items = [services.MemoryInput(content=t.text, user_id=user_id, entity_id=t.speaker, role=t.speaker,
                                  session_id=f"session-{t.session}", created_at=t.at,
                                  metadata={"dia_id": t.dia_id, "source": "locomo"})
             for t in conversation.turns]
    return (items[i:i + 200] for i in range(0, len(items), 200))


def evaluate_locomo(*, conversations: list[locomo.Conversation], cluster: Callable[[int, str], Any],
                    progress: Callable[[str, int, int], None]) -> dict[str, Any]:
    """1. ingest; 2. measure; 3. cluster every user; 4. measure again. Returns the figures of ARCHITECTURE.md,
    "Quality", and how the searches' queries were embedded: by the model, or from the query cache (the second pass
    asks the same questions again, but 1,536 of them outlast the default cache of 1,024)."""
    started, queries = time.perf_counter(), query_cache_stats()
    tenant = evaluation_tenant("locomo")
    users = {f"locomo-{c.sample_id}": c for c in conversations}
    turns = sum(len(c.turns) for c in conversations)
    questions = sum(1 for c in conversations for q in c.questions if q.category in CATEGORIES and q.evidence)
    for user_id, conversation in users.items():
        services.memories_import(tenant_id=tenant.id, batches=turn_items(user_id, conversation),
                                 progress=lambda n: progress("ingest", n, turns))
    active_before, chars_before = store_size(tenant.id)
    before = measure(tenant.id, users, lambda n: progress("search before", n, questions))
    for user_id in users:
        cluster(tenant.id, user_id)
        progress("clustering", 1, len(users))
    active_after, chars_after = store_size(tenant.id)
    after = measure(tenant.id, users, lambda n: progress("search after", n, questions))
    result = _figures(tenant, before, after, (active_before, chars_before, active_after, chars_after), started)
    during = query_cache_stats().since(queries)
    return {**result, **archived_evidence(tenant.id, users), **supersedes(tenant.id, turns),
            **statements_lost(tenant.id), "query_embeddings": during.misses, "query_cache_hits": during.hits}


def statements_lost(tenant_id: int) -> dict[str, Any]:
    gone = lost(tenant_id)
    return {"statements_lost": len(gone), "samples": {"statements_lost": [s.text for s in gone[:SAMPLES]]}}


def supersedes(tenant_id: int, turns: int) -> dict[str, Any]:
    """What clustering retired as superseded on casual chat, where nearly every supersede is a wrong one."""
    retired = superseded_memories(tenant_id=tenant_id)
    return {"supersedes": len(retired),
            "supersedes_per_1000_turns": round(len(retired) * 1000 / turns, 2) if turns else 0.0,
            "supersedes_list": listed(retired[:SUPERSEDES_LISTED])}


def archived_evidence(tenant_id: int, users: dict[str, locomo.Conversation]) -> dict[str, Any]:
    """How many evidence turns (categories 1–4) clustering archived as small talk, of how many."""
    evidence = {(user_id, e) for user_id, c in users.items() for q in c.questions if q.category in CATEGORIES
                for e in q.evidence}
    archived = list(Memory.objects.filter(tenant_id=tenant_id, archive_reason="uninformative").values_list(
        "user_id", "metadata__dia_id"))
    hit = sum(1 for key in archived if key in evidence)
    return {"archived_uninformative": len(archived), "evidence_turns": len(evidence),
            "evidence_archived_uninformative": hit,
            "evidence_archived_uninformative_share": round(hit / len(evidence), 4) if evidence else 0.0}


def _figures(tenant: Tenant, before: Scores, after: Scores, sizes: tuple[int, int, int, int],
             started: float) -> dict[str, Any]:
    active_before, chars_before, active_after, chars_after = sizes
    semantic = Memory.objects.filter(tenant=tenant, memory_type="semantic")
    sources = MemorySource.objects.filter(memory__tenant=tenant).count()
    result: dict[str, Any] = {
        "questions": int(before.totals["questions"]),
        "active_before": active_before, "active_after": active_after,
        "active_ratio": round(active_after / active_before, 4) if active_before else None,
        "chars_before": chars_before, "chars_after": chars_after,
        "chars_ratio": round(chars_after / chars_before, 4) if chars_before else None,
        "memories_per_cluster": round(sources / semantic.count(), 2) if semantic.exists() else 0.0,
    }
    for key in [f"recall_at_{k}" for k in KS] + ["budget_recall", "budget_recall_text", "answer_hit"]:
        result[f"{key}_before"] = round(before.mean(key), 4)
        result[f"{key}_after"] = round(after.mean(key), 4)
    result["by_category"] = {
        CATEGORIES[c]: {f"{key}_{when}": round(s.by_category[c][key] / s.by_category[c]["questions"], 4)
                        for when, s in (("before", before), ("after", after))
                        for key in ("recall_at_10", "budget_recall", "budget_recall_text", "answer_hit")}
        for c in sorted(before.by_category)}
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result
