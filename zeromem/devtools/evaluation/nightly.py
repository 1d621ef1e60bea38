"""`manage.py evaluate nightly`: a year of nights. Each conversation (a LoCoMo conversation, a LongMemEval question)
is one user replayed in date order on a simulated clock: its turns arrive session by session through the import
service, and at each night's scheduled time runs what beat would run then (consolidation/schedules.py) — the daily
clustering fan-out for the users it finds due (`users_with_eligible_memories`, the recency window and the current
session as configured, never forced) and, on the weekly reflection's day, the reflection of every eligible scope.
Later nights thus fold what earlier nights wrote. With `lifecycle`, the daily lifecycle (decay, retention, purge)
runs too, at its own time. A raw store (every arrived turn, never clustered) is the reference. After the last night
the store lives `idle_nights` more calendar nights with no new input.

Nights replayed: for each session day, the night after it, the first night its turns are past the recency window,
and the first weekly-reflection night after that. The other calendar nights of the span bring nothing new to a
run; the idle nights check that such a night changes nothing (`idle_changes`).

Figures (totals over the data):
- `evidence_survival`: share of the evidence turns arrived so far still stated by an active memory (a memory that
  covers the turn, directly or through its sources, and keeps at least half of its content words: `said_again`);
  LoCoMo: the questions' evidence turns, LongMemEval: the current-value turns. `_min` over nights, `_idle` after;
- `budget_recall_*`, `answer_hit_*`: as `evaluate locomo`, raw store vs the store after the last night, over the
  questions whose evidence has arrived by then;
- `active_ratio`, `chars_ratio`: active memories and their characters after the last night ÷ the raw store's;
- `idle_changes`: memories created, retired, or changed (state or text) and relations written on idle nights
  after the first one (0: the store is a fixed point);
- `statements_lost`: the largest count over nights of source statements no active memory states and no retirement
  explains (statements.py); `_idle`: after the idle nights;
- `supersedes`: memories clustering retired as superseded by the end, with `supersedes_per_1000_turns` (of the raw
  store) and the first of them under `supersedes_list`, as `evaluate locomo` reports them; each night's row counts
  its user's so far.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from datetime import time as clock_time
from typing import Any
from unittest import mock

from django.db.models import Sum
from django.db.models.functions import Length
from django.utils import timezone

from consolidation.jobs.clustering import clustering_run_now
from consolidation.jobs.lifecycle import lifecycle_run_now
from consolidation.jobs.reflection import reflection_user_run_now
from consolidation.models import RunTrigger
from consolidation.schedules import SCHEDULES, Schedule
from consolidation.selectors import reflection_eligible_scopes, users_with_eligible_memories
from zeromem.core import services
from zeromem.core.domain.recall import budget_recall, content_words, within_budget
from zeromem.core.policies import policies_for, policy_for
from zeromem.core.selectors import MemoryFilter, memories_search
from zeromem.devtools.evaluation import locomo, longmemeval, retrieval, statements
from zeromem.devtools.evaluation.supersedes import listed, superseded_count, superseded_memories
from zeromem.devtools.evaluation.tenants import evaluation_tenant
from zeromem.models import Memory, MemoryRelation, MemoryState

CLUSTERING_TASK = "consolidation.clustering_fan_out"
REFLECTION_TASK = "consolidation.reflection_fan_out"
LIFECYCLE_TASK = "consolidation.lifecycle_fan_out"
IDLE_NIGHTS = 365
SAMPLES = 5
# The figures a run reports first (and the JSON always holds; LongMemEval adds current-above-stale).
HEADLINE = ("nights", "statements_lost", "evidence_survival", "budget_recall_raw", "budget_recall_after",
            "answer_hit_raw", "answer_hit_after", "active_ratio", "chars_ratio", "idle_nights", "idle_changes",
            "current_above_stale_before", "current_above_stale_after")
Say = Callable[[str], None]


# --- the simulated clock and beat's schedule -------------------------------------------------------------------

class Clock:
    """The wall clock every `timezone.now()` reads while `running` (the product reads time only through it)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    @contextmanager
    def running(self) -> Iterator[Clock]:
        with mock.patch.object(timezone, "now", lambda: self.now):
            yield self


@dataclass(frozen=True)
class Beat:
    """When beat starts the clustering and reflection fan-outs (UTC), read from the product's schedules."""

    clustering: clock_time
    reflection: clock_time
    reflection_weekday: int  # Python's: Monday 0 … Sunday 6
    lifecycle: clock_time | None = None  # None: the daily lifecycle (decay, retention, purge) is left out

    @classmethod
    def of(cls, schedules: Sequence[Schedule] = SCHEDULES, *, lifecycle: bool = False) -> Beat:
        by_task = {s.task: s for s in schedules}
        daily, weekly, decay = by_task[CLUSTERING_TASK], by_task[REFLECTION_TASK], by_task[LIFECYCLE_TASK]
        return cls(clustering=_at(daily), reflection=_at(weekly),
                   reflection_weekday=(int(weekly.day_of_week) - 1) % 7,  # crontab: 0 = Sunday
                   lifecycle=_at(decay) if lifecycle else None)

    def night_after(self, moment: datetime) -> datetime:
        """The first clustering fan-out strictly after `moment`."""
        night = datetime.combine(moment.date(), self.clustering, tzinfo=UTC)
        return night if night > moment else night + timedelta(days=1)

    def reflects(self, night: datetime) -> bool:
        return night.weekday() == self.reflection_weekday

    def reflection_at(self, night: datetime) -> datetime:
        return datetime.combine(night.date(), self.reflection, tzinfo=UTC)


def _at(schedule: Schedule) -> clock_time:
    return clock_time(int(schedule.hour), int(schedule.minute))


def calendar(times: Sequence[datetime], *, window: timedelta, beat: Beat) -> list[datetime]:
    """The nights worth replaying for turns said at `times`: for each session day, the night after it, the first
    night its turns are past the recency window, and the first reflection night from then on."""
    last_of_day: dict[Any, datetime] = {}
    for moment in times:
        last_of_day[moment.date()] = max(moment, last_of_day.get(moment.date(), moment))
    nights: set[datetime] = set()
    for last in last_of_day.values():
        aged = beat.night_after(last + window)
        reflection = aged + timedelta(days=(beat.reflection_weekday - aged.weekday()) % 7)
        nights |= {beat.night_after(last), aged, reflection}
    return sorted(nights)


# --- what is replayed ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Probe:
    """A question asked of the store: its gold answer and the turn keys of its evidence."""

    question: str
    answer: str
    evidence: frozenset[str]


@dataclass(frozen=True)
class Replayed:
    """One user's data: its turns as import items (dated, in order, their turn key in metadata[turn_key]), the
    questions, the turns whose survival is measured, and (LongMemEval) the question for current-above-stale."""

    user_id: str
    items: tuple[services.MemoryInput, ...]
    probes: tuple[Probe, ...]
    turn_key: str
    survivors: frozenset[str]
    texts: Mapping[str, str]
    lme: longmemeval.Question | None = None

    def key(self, item: services.MemoryInput) -> str:
        return str(item.metadata[self.turn_key])


def from_locomo(conversation: locomo.Conversation) -> Replayed:
    user_id = f"locomo-{conversation.sample_id}"
    probes = tuple(Probe(q.question, q.answer, frozenset(q.evidence)) for q in conversation.questions
                   if q.category in retrieval.CATEGORIES and q.evidence)
    items = tuple(item for batch in retrieval.turn_items(user_id, conversation) for item in batch)
    return Replayed(user_id=user_id, items=items, probes=probes, turn_key="dia_id",
                    survivors=frozenset().union(*(p.evidence for p in probes)),
                    texts={t.dia_id: t.text for t in conversation.turns})


def from_longmemeval(question: longmemeval.Question) -> Replayed:
    user_id = f"lme-{question.question_id}"
    probe = Probe(question.question, question.answer, question.current)
    return Replayed(user_id=user_id, items=tuple(longmemeval.turn_items(user_id, question)), probes=(probe,),
                    turn_key="turn", survivors=question.current, texts={t.key: t.content for t in question.turns},
                    lme=question)


# --- one night -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NightRuns:
    clustering: tuple[str, ...]  # each run's status
    reflection: tuple[str, ...]
    lifecycle: tuple[str, ...] = ()


def night_run(*, tenant_id: int, user_id: str, night: datetime, beat: Beat, clock: Clock) -> NightRuns:
    """What beat runs for this user (alone in its tenant) on this night, in this process: when asked for, the
    tenant's lifecycle at its time; the clustering fan-out's selection at the clustering time, each due user's run
    as its task runs it (unforced); on the reflection day, at the reflection time, the user's eligible scopes as
    the weekly fan-out's task reflects them."""
    decayed: tuple[str, ...] = ()
    if beat.lifecycle is not None:
        clock.now = datetime.combine(night.date(), beat.lifecycle, tzinfo=UTC)
        decayed = (lifecycle_run_now(tenant_id=tenant_id, trigger=RunTrigger.BEAT).run.status,)
    clock.now = night
    due = [u for t, u, _ in users_with_eligible_memories(now=night) if t == tenant_id and u == user_id]
    clustered = tuple(clustering_run_now(tenant_id=tenant_id, user_id=u, trigger=RunTrigger.BEAT).run.status
                      for u in due)
    reflected: tuple[str, ...] = ()
    if beat.reflects(night):
        clock.now = beat.reflection_at(night)
        scopes = reflection_eligible_scopes(policies=policies_for(tenant_ids=[tenant_id]), tenant_id=tenant_id,
                                            user_id=user_id)
        if scopes:
            outcomes = reflection_user_run_now(tenant_id=tenant_id, user_id=user_id, trigger=RunTrigger.BEAT)
            reflected = tuple(o.run.status for o in outcomes)
    return NightRuns(clustered, reflected, decayed)


def arrive(*, tenant_id: int, items: Sequence[services.MemoryInput], clock: Clock) -> None:
    """Import items session by session, the clock at each session's last turn (the API's import service)."""
    sessions: dict[str | None, list[services.MemoryInput]] = {}
    for item in items:
        sessions.setdefault(item.session_id, []).append(item)
    for session in sessions.values():
        clock.now = max(i.created_at or clock.now for i in session)
        services.memories_import(tenant_id=tenant_id, batches=[session])


# --- measures --------------------------------------------------------------------------------------------------

def store_size(tenant_id: int, user_id: str) -> tuple[int, int]:
    active = Memory.objects.filter(tenant_id=tenant_id, user_id=user_id, state=MemoryState.RAW)
    return active.count(), active.aggregate(chars=Sum(Length("content")))["chars"] or 0


def stated(tenant_id: int, replayed: Replayed, turns: frozenset[str]) -> set[str]:
    """The turns an active memory still states (covers, and keeps half their content words)."""
    covers = retrieval.coverage(tenant_id, turn_key=replayed.turn_key)
    active = list(Memory.objects.filter(tenant_id=tenant_id, user_id=replayed.user_id, state=MemoryState.RAW))
    words = {t: frozenset(content_words(replayed.texts[t])) for t in turns}
    return retrieval.said_again(active, covers, set(turns), words)


@dataclass
class Recall:
    questions: int = 0
    budget_recall: float = 0.0
    answer_hit: float = 0.0

    def add(self, hits: list[Memory], covers: Mapping[uuid.UUID, frozenset[str]], probe: Probe) -> None:
        self.questions += 1
        self.budget_recall += budget_recall([(m.id, len(m.content)) for m in hits], covers, probe.evidence)
        budget = [hits[i] for i in within_budget([len(m.content) for m in hits])]
        self.answer_hit += retrieval.answer_hit(probe.answer, " ".join(m.content for m in budget))

    def mean(self, total: float) -> float | None:
        return round(total / self.questions, 4) if self.questions else None


def recall_of(tenant_id: int, replayed: Replayed, probes: Sequence[Probe], into: Recall) -> None:
    """The questions asked through the product's search, as `evaluate locomo` asks them."""
    covers = retrieval.coverage(tenant_id, turn_key=replayed.turn_key)
    scope = MemoryFilter(tenant_id=tenant_id, user_id=replayed.user_id)
    policy = policy_for(tenant_id=tenant_id).search
    for probe in probes:
        hits = [h.memory for h in memories_search(scope=scope, query=probe.question, top_k=retrieval.POOL,
                                                  policy=policy)]
        into.add(hits, covers, probe)


@dataclass(frozen=True)
class Snapshot:
    memories: Mapping[uuid.UUID, tuple[str, str]]  # id → (state, text)
    relations: int


def snapshot(tenant_id: int, user_id: str) -> Snapshot:
    rows = Memory.objects.filter(tenant_id=tenant_id, user_id=user_id).values_list("id", "state", "content")
    relations = MemoryRelation.objects.filter(tenant_id=tenant_id, from_memory__user_id=user_id).count()
    return Snapshot({i: (state, text) for i, state, text in rows}, relations)


def changes(before: Snapshot, after: Snapshot) -> int:
    """Memories created, deleted or changed (state or text), and relations written, from one snapshot to the next."""
    ids = before.memories.keys() | after.memories.keys()
    return (sum(before.memories.get(i) != after.memories.get(i) for i in ids)
            + max(0, after.relations - before.relations))


# --- a whole replay --------------------------------------------------------------------------------------------

@dataclass
class Totals:
    nights: int = 0
    raw: list[int] = field(default_factory=lambda: [0, 0])
    after: list[int] = field(default_factory=lambda: [0, 0])
    survivors: int = 0
    stated: int = 0
    stated_idle: int = 0
    survival_min: float | None = None
    statements_lost_idle: int = 0
    idle_nights: int = 0
    idle_changes: int = 0
    recall_raw: Recall = field(default_factory=Recall)
    recall_after: Recall = field(default_factory=Recall)
    above_before: list[bool] = field(default_factory=list)
    above_after: list[bool] = field(default_factory=list)
    per_night: list[dict[str, Any]] = field(default_factory=list)
    lost_samples: dict[str, list[str]] = field(default_factory=dict)  # per user, after its latest night that lost any
    lost_idle_samples: list[str] = field(default_factory=list)
    evidence_samples: list[str] = field(default_factory=list)  # evidence turns no active memory states
    idle_changed_nights: list[dict[str, Any]] = field(default_factory=list)  # the idle nights that changed any
    supersedes: list[dict[str, Any]] = field(default_factory=list)  # after each user's last night


def evaluate_nightly(*, replayed: Sequence[Replayed], nights: int = 0, idle_nights: int = IDLE_NIGHTS,
                     lifecycle: bool = False, say: Say) -> dict[str, Any]:
    """Each user in a tenant of its own (its calendar is its own, and the lifecycle works tenant-wide): 1. replay
    its nights on the simulated clock (beat's jobs as scheduled, with the lifecycle when asked), a raw store fed
    the same turns; 2. ask the questions of both stores; 3. `idle_nights` more nights without input. Returns the
    figures of the module's docstring."""
    started = time.perf_counter()
    beat, totals = Beat.of(lifecycle=lifecycle), Totals()
    clock = Clock(timezone.now())
    with clock.running():
        for one in replayed:
            tenant, raw = evaluation_tenant("nightly"), evaluation_tenant("unclustered")
            window = timedelta(hours=policy_for(tenant_id=tenant.id).clustering.recency_window_hours)
            last = _replay(one, tenant.id, raw.id, nights, window, beat, clock, totals, say)
            _compare(one, tenant.id, raw.id, totals)
            _idle(one, tenant.id, last, idle_nights, beat, clock, totals, say)
    return {"lifecycle": lifecycle, **_figures(totals, replayed, round(time.perf_counter() - started, 1))}


def _replay(one: Replayed, tenant_id: int, raw_id: int, cap: int, window: timedelta, beat: Beat, clock: Clock,
            totals: Totals, say: Say) -> datetime:
    """The user's nights; returns the last one. Each arrived turn also goes to the raw store."""
    schedule = calendar([i.created_at for i in one.items if i.created_at], window=window, beat=beat)
    schedule = schedule[:cap or None]
    pending, arrived = list(one.items), 0
    for number, night in enumerate(schedule, 1):
        due = [i for i in pending if i.created_at and i.created_at < night]
        pending = [i for i in pending if not (i.created_at and i.created_at < night)]
        arrived += len(due)
        arrive(tenant_id=tenant_id, items=due, clock=clock)
        arrive(tenant_id=raw_id, items=due, clock=clock)
        runs = night_run(tenant_id=tenant_id, user_id=one.user_id, night=night, beat=beat, clock=clock)
        row = _night_row(one, tenant_id, raw_id, night, runs, arrived, totals)
        totals.per_night.append(row)
        say(f"{one.user_id} night {number}/{len(schedule)} {night:%a %Y-%m-%d %H:%M}: +{len(due)} turns, "
            f"clustering {','.join(runs.clustering) or '-'}, reflection {','.join(runs.reflection) or '-'}"
            f"{', lifecycle ' + ','.join(runs.lifecycle) if runs.lifecycle else ''}; "
            f"active {row['active']}/{row['raw']}, chars {row['chars']}/{row['raw_chars']}, evidence survival "
            f"{row['evidence_survival']}, statements lost {row['statements_lost']}, supersedes {row['supersedes']}")
    totals.nights += len(schedule)
    return schedule[-1] if schedule else clock.now


def _arrived(one: Replayed, tenant_id: int) -> frozenset[str]:
    keys = Memory.objects.filter(tenant_id=tenant_id, user_id=one.user_id).values_list(
        f"metadata__{one.turn_key}", flat=True)
    return frozenset(str(k) for k in keys if k)


def _night_row(one: Replayed, tenant_id: int, raw_id: int, night: datetime, runs: NightRuns, arrived: int,
               totals: Totals) -> dict[str, Any]:
    active, chars = store_size(tenant_id, one.user_id)
    raw_active, raw_chars = store_size(raw_id, one.user_id)
    survivors = one.survivors & _arrived(one, raw_id)
    survival = round(len(stated(tenant_id, one, survivors)) / len(survivors), 4) if survivors else None
    if survival is not None:
        totals.survival_min = survival if totals.survival_min is None else min(totals.survival_min, survival)
    lost = statements.lost(tenant_id, one.user_id)
    if lost:
        totals.lost_samples[one.user_id] = [s.text for s in lost[:SAMPLES]]
    return {"user": one.user_id, "night": night.isoformat(), "arrived": arrived, "active": active, "raw": raw_active,
            "chars": chars, "raw_chars": raw_chars, "evidence_survival": survival, "statements_lost": len(lost),
            "supersedes": superseded_count(tenant_id=tenant_id, user_id=one.user_id),
            "clustering": list(runs.clustering), "reflection": list(runs.reflection), "lifecycle": list(runs.lifecycle)}


def _compare(one: Replayed, tenant_id: int, raw_id: int, totals: Totals) -> None:
    """After the user's last night: sizes, survival and the questions against the raw store."""
    for kept, size in ((totals.raw, store_size(raw_id, one.user_id)), (totals.after, store_size(tenant_id,
                                                                                                   one.user_id))):
        kept[0] += size[0]
        kept[1] += size[1]
    arrived = _arrived(one, raw_id)
    survivors = one.survivors & arrived
    still = stated(tenant_id, one, survivors)
    totals.survivors += len(survivors)
    totals.stated += len(still)
    totals.evidence_samples += [one.texts[t] for t in sorted(survivors - still)][:SAMPLES]
    totals.supersedes += listed(superseded_memories(tenant_id=tenant_id, user_id=one.user_id))
    probes = [p for p in one.probes if p.evidence <= arrived]
    recall_of(raw_id, one, probes, totals.recall_raw)
    recall_of(tenant_id, one, probes, totals.recall_after)
    if one.lme is not None and one.lme.stale and one.lme.current <= arrived:
        question = one.lme
        before = longmemeval.measure_before(raw_id, one.user_id, question, longmemeval.coverage(raw_id))
        result, _ = longmemeval.measure_after(tenant_id, one.user_id, question, longmemeval.coverage(tenant_id),
                                              before, 0, statements.lost(tenant_id, one.user_id))
        totals.above_before.append(before.above)
        totals.above_after.append(bool(result.current_above_stale_after))


def _idle(one: Replayed, tenant_id: int, last: datetime, idle_nights: int, beat: Beat, clock: Clock, totals: Totals,
          say: Say) -> None:
    """`idle_nights` calendar nights after the last one with no input; what changes after the first is counted
    (the first may still do what the last night's schedule left: a reflection, the last session aging)."""
    previous = snapshot(tenant_id, one.user_id)
    changed = 0
    for day in range(1, idle_nights + 1):
        night_run(tenant_id=tenant_id, user_id=one.user_id, night=last + timedelta(days=day), beat=beat, clock=clock)
        now = snapshot(tenant_id, one.user_id)
        count = changes(previous, now)
        if count:
            totals.idle_changed_nights.append({"user": one.user_id, "idle_night": day, "changes": count})
        changed += count if day > 1 else 0
        previous = now
    totals.idle_nights = idle_nights
    totals.idle_changes += changed
    survivors = one.survivors & _arrived(one, tenant_id)
    totals.stated_idle += len(stated(tenant_id, one, survivors))
    lost = statements.lost(tenant_id, one.user_id)
    totals.statements_lost_idle += len(lost)
    totals.lost_idle_samples += [s.text for s in lost[:SAMPLES]]
    say(f"{one.user_id}: {idle_nights} idle nights, {changed} changes after the first; statements lost {len(lost)}")


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _share(values: list[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _figures(totals: Totals, replayed: Sequence[Replayed], seconds: float) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "nights": totals.nights, "users": len(replayed),
        "statements_lost": _lost_over_nights(totals), "statements_lost_idle": totals.statements_lost_idle,
        "evidence_survival": _ratio(totals.stated, totals.survivors),
        "evidence_survival_min": totals.survival_min,
        "evidence_survival_idle": _ratio(totals.stated_idle, totals.survivors),
        "evidence_turns": totals.survivors,
        "questions": totals.recall_raw.questions,
        "budget_recall_raw": totals.recall_raw.mean(totals.recall_raw.budget_recall),
        "budget_recall_after": totals.recall_after.mean(totals.recall_after.budget_recall),
        "answer_hit_raw": totals.recall_raw.mean(totals.recall_raw.answer_hit),
        "answer_hit_after": totals.recall_after.mean(totals.recall_after.answer_hit),
        "active_raw": totals.raw[0], "active_after": totals.after[0],
        "active_ratio": _ratio(totals.after[0], totals.raw[0]),
        "chars_raw": totals.raw[1], "chars_after": totals.after[1],
        "chars_ratio": _ratio(totals.after[1], totals.raw[1]),
        "idle_nights": totals.idle_nights, "idle_changes": totals.idle_changes,
        "supersedes": len(totals.supersedes),
        "supersedes_per_1000_turns": round(len(totals.supersedes) * 1000 / totals.raw[0], 2) if totals.raw[0] else 0.0,
        "supersedes_list": totals.supersedes[:retrieval.SUPERSEDES_LISTED],
        "idle_changed_nights": totals.idle_changed_nights[:SAMPLES * 4],
        "seconds": seconds, "per_night": totals.per_night,
        "samples": {"statements_lost": [t for texts in totals.lost_samples.values() for t in texts][:SAMPLES * 4],
                    "statements_lost_idle": totals.lost_idle_samples[:SAMPLES * 4],
                    "evidence_not_stated": totals.evidence_samples[:SAMPLES * 4]},
    }
    if any(r.lme is not None for r in replayed):
        figures["current_above_stale_before"] = _share(totals.above_before)
        figures["current_above_stale_after"] = _share(totals.above_after)
    return figures


def _lost_over_nights(totals: Totals) -> int:
    """Per user the most statements lost after any of its nights, summed over the users."""
    worst: dict[str, int] = {}
    for row in totals.per_night:
        worst[row["user"]] = max(worst.get(row["user"], 0), row["statements_lost"])
    return sum(worst.values())
