"""`manage.py evaluate longmemeval` over ../shared/eval/longmemeval/ (see its README): knowledge-update questions,
one user each. Does the current value outrank the stale one in search and in the context an agent gets, and
does clustering retire the stale statement without retiring the current one or anything else?

Every turn is one memory; its metadata keeps the turn key "<session id>:<index>". A memory covers its own turn
and, transitively, its sources' turns (as in retrieval.coverage()). Per question, the older evidence session
holds the STALE evidence turns and the newer one the CURRENT ones (`has_answer: true` turns).
- retired: archived with archive_reason "supersede" (a whole turn, or a claim citing one);
- holds current: covers a current evidence turn and is not retired;
- holds stale: covers a stale evidence turn, unless a retired memory covers one (the stale claim is retired);
- current lost: a statement of a current evidence turn (a sentence carrying a value, statements.py) that no
  active memory states any more and no supersede explains; `statements_lost`: every such statement of every
  turn, with a few under samples.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from profiles.selectors import context_build
from zeromem.core import services
from zeromem.core.policies import policy_for
from zeromem.core.selectors import MemoryFilter, memories_search
from zeromem.devtools.evaluation import retrieval
from zeromem.devtools.evaluation.statements import Statement, lost
from zeromem.devtools.evaluation.supersedes import successor_text, superseded_memories
from zeromem.devtools.evaluation.tenants import evaluation_tenant
from zeromem.models import Memory, MemoryRelation, MemoryType, RelationType

DEFAULT_PATH = Path(__file__).resolve().parents[4] / "shared" / "eval" / "longmemeval"
VARIANTS = ("oracle", "s")
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"
TURN_STEP = timedelta(seconds=10)
POOL = 50
SAMPLES = 5
TOP = 10
BUDGET_CHARS = 2000
NAMESPACE = services.MemoryInput.namespace  # the namespace ingestion stores when none is given ("global")
Progress = Callable[[str, int, int], None]  # (phase, done now, phase total)


@dataclass(frozen=True)
class Turn:
    key: str  # "<session id>:<index>"
    session_id: str
    role: str
    content: str
    at: datetime


@dataclass(frozen=True)
class Question:
    question_id: str
    question: str
    answer: str
    turns: tuple[Turn, ...]
    stale: frozenset[str]  # turn keys of the stale evidence (empty: the question has no stale turn)
    current: frozenset[str]


@dataclass(frozen=True)
class Retired:
    question_id: str
    older: str
    newer: str | None  # the text of what superseded it (superseded_by), if still linked

    def outside(self) -> str:
        return f"{self.question_id}: {self.older!r} → {self.newer!r}"


@dataclass(frozen=True)
class QuestionResult:
    question_id: str
    memories: int
    has_stale: bool
    current_above_stale_before: bool | None  # None: no stale turn, the figure does not apply
    current_above_stale_after: bool | None
    current_only_at_10_before: bool
    current_only_at_10_after: bool
    ctx_current_no_stale_after: bool
    ctx_newest_is_current_after: bool
    stale_retired: bool | None
    current_lost: bool
    false_retirement: bool
    supersedes_outside_evidence: int
    flags: int

    def line(self) -> str:
        def mark(value: bool | None) -> str:
            return "-" if value is None else "y" if value else "n"

        return (f"{self.question_id:>14} above {mark(self.current_above_stale_before)}→"
                f"{mark(self.current_above_stale_after)}  only@10 {mark(self.current_only_at_10_before)}→"
                f"{mark(self.current_only_at_10_after)}  ctx {mark(self.ctx_current_no_stale_after)} "
                f"newest {mark(self.ctx_newest_is_current_after)}  stale retired {mark(self.stale_retired)}  "
                f"lost {mark(self.current_lost)}  false {mark(self.false_retirement)}  "
                f"outside {self.supersedes_outside_evidence}  flags {self.flags}")


# --- data --------------------------------------------------------------------------------------------------

def variant_folder(root: Path, variant: str) -> Path:
    return root / variant


def available(root: Path, variant: str) -> bool:
    folder = variant_folder(root, variant)
    return folder.is_dir() and any(folder.glob("*.json"))


def load(folder: Path) -> list[Question]:
    """The answerable questions (abstention ids `*_abs` skipped) of one variant folder, by file name."""
    raws = (json.loads(path.read_text()) for path in sorted(folder.glob("*.json")))
    return [question_from(raw) for raw in raws if not str(raw["question_id"]).endswith("_abs")]


def session_date(value: str) -> datetime:
    return datetime.strptime(value.strip(), DATE_FORMAT).replace(tzinfo=UTC)


def question_from(raw: dict[str, Any]) -> Question:
    """Sessions in date order, turns dated 10 s apart from the session's date; evidence split by session age."""
    sessions = sorted(zip(raw["haystack_dates"], raw["haystack_session_ids"], raw["haystack_sessions"], strict=True),
                      key=lambda s: session_date(s[0]))
    turns: list[Turn] = []
    evidence: dict[str, frozenset[str]] = {}
    for date, session_id, session in sessions:
        start = session_date(date)
        keys = [f"{session_id}:{index}" for index in range(len(session))]
        turns += [Turn(key=key, session_id=session_id, role=str(t["role"]), content=str(t["content"]),
                       at=start + TURN_STEP * index) for index, (key, t) in enumerate(zip(keys, session, strict=True))]
        evidence[session_id] = frozenset(k for k, t in zip(keys, session, strict=True) if t.get("has_answer"))
    ordered = [s for _, s, _ in sessions if s in set(raw["answer_session_ids"])]
    current = evidence[ordered[-1]] if ordered else frozenset()
    stale = evidence[ordered[0]] if len(ordered) > 1 else frozenset()
    return Question(question_id=str(raw["question_id"]), question=str(raw["question"]), answer=str(raw["answer"]),
                    turns=tuple(turns), stale=stale, current=current)


def turn_items(user_id: str, question: Question) -> list[services.MemoryInput]:
    return [services.MemoryInput(content=t.content, user_id=user_id, entity_id="user" if t.role == "user" else None,
                                 role=t.role, session_id=t.session_id, created_at=t.at,
                                 metadata={"source": "longmemeval", "turn": t.key})
            for t in question.turns]


def batches(items: list[services.MemoryInput], size: int = 200) -> Iterable[list[services.MemoryInput]]:
    return (items[i:i + size] for i in range(0, len(items), size))


# --- measures ----------------------------------------------------------------------------------------------

def coverage(tenant_id: int) -> dict[uuid.UUID, frozenset[str]]:
    """Memory id → turn keys it stands for: its own, and transitively its sources'."""
    return retrieval.coverage(tenant_id, turn_key="turn")


@dataclass(frozen=True)
class Holders:
    """Which memories hold a question's current or stale evidence, at one moment."""

    question: Question
    covers: Mapping[uuid.UUID, frozenset[str]]
    retired: frozenset[uuid.UUID]
    stale_retired: bool

    def turns(self, memory: Memory) -> frozenset[str]:
        return self.covers.get(memory.id, frozenset())

    def current(self, memory: Memory) -> bool:
        return memory.id not in self.retired and bool(self.turns(memory) & self.question.current)

    def stale(self, memory: Memory) -> bool:
        return not self.stale_retired and bool(self.turns(memory) & self.question.stale)


def first_rank(memories: list[Memory], wanted: Callable[[Memory], bool]) -> int | None:
    return next((rank for rank, memory in enumerate(memories) if wanted(memory)), None)


def current_above_stale(hits: list[Memory], holders: Holders) -> bool:
    current, stale = first_rank(hits, holders.current), first_rank(hits, holders.stale)
    return current is not None and (stale is None or current < stale)


def current_only(memories: list[Memory], holders: Holders) -> bool:
    return any(holders.current(m) for m in memories) and not any(holders.stale(m) for m in memories)


def seen_date(memory: Memory) -> datetime:
    """The date an agent sees for a memory."""
    return memory.valid_from or memory.created_at


def newest_is_current(memories: list[Memory], holders: Holders) -> bool:
    """Among the memories holding evidence, the newest holds current (a tie: one holds current, none stale)."""
    evidence = [m for m in memories if holders.current(m) or holders.stale(m)]
    if not evidence:
        return False
    newest = max(seen_date(m) for m in evidence)
    tied = [m for m in evidence if seen_date(m) == newest]
    return current_only(tied, holders)


def search(tenant_id: int, user_id: str, query: str) -> list[Memory]:
    return [h.memory for h in memories_search(scope=MemoryFilter(tenant_id=tenant_id, user_id=user_id),
                                              query=query, top_k=POOL, policy=policy_for(tenant_id=tenant_id).search)]


def context_memories(tenant_id: int, user_id: str, query: str) -> list[Memory]:
    context = context_build(tenant_id=tenant_id, user_id=user_id, entity_id=None, namespace=NAMESPACE, query=query,
                            budget_chars=BUDGET_CHARS, policy=policy_for(tenant_id=tenant_id))
    return [hit.memory for hit in context.hits]


def current_lost(tenant_id: int, user_id: str, question: Question, gone: list[Statement]) -> bool:
    """Is a statement of a current evidence turn among the lost ones?"""
    current = set(Memory.objects.filter(tenant_id=tenant_id, user_id=user_id, memory_type=MemoryType.EPISODIC,
                                        metadata__turn__in=sorted(question.current)).values_list("id", flat=True))
    return any(s.memory_id in current for s in gone)


def flags(tenant_id: int, user_id: str | None = None) -> int:
    relations = MemoryRelation.objects.filter(tenant_id=tenant_id, relation_type=RelationType.CONTRADICTS,
                                              flagged=True)
    return relations.filter(from_memory__user_id=user_id).count() if user_id else relations.count()


# --- one question, then all ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Before:
    above: bool
    only_at_10: bool


def measure_before(tenant_id: int, user_id: str, question: Question,
                   covers: Mapping[uuid.UUID, frozenset[str]]) -> Before:
    holders = Holders(question, covers, frozenset(), stale_retired=False)
    hits = search(tenant_id, user_id, question.question)
    return Before(above=current_above_stale(hits, holders), only_at_10=current_only(hits[:TOP], holders))


def measure_after(tenant_id: int, user_id: str, question: Question, covers: Mapping[uuid.UUID, frozenset[str]],
                  before: Before, memories: int, gone: list[Statement]) -> tuple[QuestionResult, list[Retired]]:
    """1. the retired memories and what they cover; 2. search and context through the product; 3. the figures
    (`gone`: the user's lost statements)."""
    retired = superseded_memories(tenant_id=tenant_id, user_id=user_id)
    retired_turns = frozenset().union(*(covers.get(m.id, frozenset()) for m in retired))
    stale_retired = bool(retired_turns & question.stale)
    holders = Holders(question, covers, frozenset(m.id for m in retired), stale_retired)
    hits = search(tenant_id, user_id, question.question)
    context = context_memories(tenant_id, user_id, question.question)
    outside = [Retired(question.question_id, m.content, successor_text(m))
               for m in retired if not covers.get(m.id, frozenset()) & question.stale]
    has_stale = bool(question.stale)
    result = QuestionResult(
        question_id=question.question_id, memories=memories, has_stale=has_stale,
        current_above_stale_before=before.above if has_stale else None,
        current_above_stale_after=current_above_stale(hits, holders) if has_stale else None,
        current_only_at_10_before=before.only_at_10, current_only_at_10_after=current_only(hits[:TOP], holders),
        ctx_current_no_stale_after=current_only(context, holders),
        ctx_newest_is_current_after=newest_is_current(context, holders),
        stale_retired=stale_retired if has_stale else None,
        current_lost=current_lost(tenant_id, user_id, question, gone),
        false_retirement=bool(retired_turns & question.current),
        supersedes_outside_evidence=len(outside), flags=flags(tenant_id, user_id))
    return result, outside


def evaluate_longmemeval(*, questions: list[Question], cluster: Callable[[int, str], Any], progress: Progress,
                         report: Callable[[str], None]) -> dict[str, Any]:
    """1. ingest every question's turns as its own user; 2. measure search; 3. cluster every user; 4. measure
    search, context and what was retired. Returns the figures (see the module's docstring)."""
    started = time.perf_counter()
    tenant = evaluation_tenant("longmemeval")
    users = {f"lme-{q.question_id}": q for q in questions}
    items = [item for user_id, q in users.items() for item in turn_items(user_id, q)]
    services.memories_import(tenant_id=tenant.id, batches=batches(items),
                             progress=lambda n: progress("ingest", n, len(items)))
    counts = {user_id: Memory.objects.filter(tenant_id=tenant.id, user_id=user_id).count() for user_id in users}
    covers = coverage(tenant.id)
    before = {}
    for user_id, question in users.items():
        before[user_id] = measure_before(tenant.id, user_id, question, covers)
        progress("search before", 1, len(users))
    for user_id in users:
        cluster(tenant.id, user_id)
        progress("clustering", 1, len(users))
    covers = coverage(tenant.id)
    results: list[QuestionResult] = []
    outside: list[Retired] = []
    gone: list[str] = []
    for user_id, question in users.items():
        lost_here = lost(tenant.id, user_id)
        result, retired = measure_after(tenant.id, user_id, question, covers, before[user_id], counts[user_id],
                                        lost_here)
        results.append(result)
        outside += retired
        gone += [f"{question.question_id}: {s.text}" for s in lost_here]
        progress("search after", 1, len(users))
        report(result.line())
    return {**figures(results, outside, flags(tenant.id), started), "statements_lost": len(gone),
            "samples": {"statements_lost": gone[:SAMPLES]}}


def share(values: list[bool | None]) -> float | None:
    applicable = [v for v in values if v is not None]
    return round(sum(applicable) / len(applicable), 4) if applicable else None


def figures(results: list[QuestionResult], outside: list[Retired], flag_count: int, started: float) -> dict[str, Any]:
    def column(name: str) -> list[bool | None]:
        return [getattr(r, name) for r in results]

    return {
        "questions": len(results),
        "memories": sum(r.memories for r in results),
        **{name: share(column(name)) for name in (
            "current_above_stale_before", "current_above_stale_after", "current_only_at_10_before",
            "current_only_at_10_after", "ctx_current_no_stale_after", "ctx_newest_is_current_after",
            "stale_retired")},
        "current_lost": sum(r.current_lost for r in results),
        "false_retirements": sum(r.false_retirement for r in results),
        "supersedes_outside_evidence": len(outside),
        "supersedes_outside_evidence_list": [asdict(r) for r in outside],
        "flags": flag_count,
        "seconds": round(time.perf_counter() - started, 1),
        "per_question": [asdict(r) for r in results],
    }
