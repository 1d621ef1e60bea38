"""`manage.py evaluate opsignals`: what consolidation makes of operational signals. One user receives the monitoring
events of an incident in four windows (normal, degraded, outage, recovery): latency and error-rate readings,
heartbeats, severity alerts, deploy and restart notices of a few services, values drifting with the window.
Readings that change are not knowledge updates: every flagged contradiction and every supersede here is a
figure to look at, not a success.

The scenario is deterministic (a seeded random generator) and reusable (`opsignal_items`). `--scenario capacity`
replays another one, of other quantities, with a few configuration changes whose supersedes are right
(`zeromem/devtools/evaluation/capacity.py`)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from zeromem.core import services
from zeromem.devtools.evaluation import capacity
from zeromem.devtools.evaluation.supersedes import successor_text, superseded_memories
from zeromem.devtools.evaluation.tenants import evaluation_tenant
from zeromem.models import Memory, MemoryRelation, MemoryState, MemoryType, RelationType

SEED = 20240611
SERVICES = ("checkout-api", "payments", "search", "inventory", "auth")
WORKERS = tuple(f"worker-{n}" for n in range(1, 7))
# Minutes between two events: at most 200 × 5 min ≈ 17 h from the first event to the last.
GAP_MINUTES = (2, 5)
# The scenario ends at least this long before now, so clustering outside forced runs could fold it too.
ENDS_BEFORE_NOW = timedelta(days=2)
SPAN = timedelta(minutes=GAP_MINUTES[1] * 200)


@dataclass(frozen=True)
class Window:
    name: str
    events: int
    badness: tuple[float, float]  # how far readings stray from normal: 0 = healthy, 1 = down
    mix: tuple[tuple[str, float], ...]  # event kind → weight


WINDOWS = (
    Window("normal", 40, (0.0, 0.08), (("heartbeat", 0.35), ("latency", 0.3), ("errors", 0.25), ("deploy", 0.1))),
    Window("degraded", 60, (0.25, 0.5), (("heartbeat", 0.15), ("latency", 0.35), ("errors", 0.3), ("alert", 0.15),
                                        ("deploy", 0.05))),
    Window("outage", 50, (0.85, 1.0), (("heartbeat", 0.15), ("latency", 0.25), ("errors", 0.25), ("alert", 0.3),
                                       ("restart", 0.05))),
    Window("recovery", 50, (0.1, 0.45), (("heartbeat", 0.25), ("latency", 0.3), ("errors", 0.25), ("resolved", 0.1),
                                         ("deploy", 0.1))),
)


@dataclass(frozen=True)
class Event:
    text: str
    importance: float


def _reading_importance(badness: float) -> float:
    return round(min(1.0, 0.24 + 0.72 * badness), 2)


def _latency(rng: random.Random, service: str, badness: float) -> Event:
    p99 = round(150 + badness * 3000 + rng.uniform(-20, 60))
    return Event(f"{service} p99 latency {p99} ms", _reading_importance(badness))


def _errors(rng: random.Random, service: str, badness: float) -> Event:
    rate = round(0.05 + badness ** 2 * 30 + rng.uniform(0, 0.3), 1)
    return Event(f"{service} error rate {rate} % over 5 min", _reading_importance(badness))


def _heartbeat(rng: random.Random, service: str, badness: float) -> Event:
    worker = rng.choice(WORKERS)
    if rng.random() < badness:
        return Event(f"heartbeat missed from {worker} ({service}), last seen {rng.randint(60, 900)} s ago",
                     round(0.45 + 0.5 * badness, 2))
    return Event(f"heartbeat ok from {worker} ({service}), seq {rng.randint(1000, 99999)}", 0.2)


def _alert(rng: random.Random, service: str, badness: float) -> Event:
    level = 1 if badness > 0.9 else 2 if badness > 0.5 else 3
    share = round(badness * 60 + rng.uniform(1, 8))
    code = rng.choice((500, 502, 503, 504))
    return Event(f"SEV{level}: {service} returning {code} for {share} % of requests",
                 {1: 0.98, 2: 0.92, 3: 0.7}[level])


def _resolved(rng: random.Random, service: str, badness: float) -> Event:
    return Event(f"SEV{rng.choice((1, 2))} resolved: {service} error rate back under "
                 f"{rng.choice((1, 2, 5))} % for {rng.randint(10, 30)} min", 0.45)


def _deploy(rng: random.Random, service: str, badness: float) -> Event:
    version = f"v2.{rng.randint(10, 19)}.{rng.randint(0, 9)}"
    verb = "rolled back to" if badness > 0.1 else "deployed"
    return Event(f"{service} {verb} {version} on {rng.randint(4, 24)} pods", 0.4 if badness <= 0.1 else 0.45)


def _restart(rng: random.Random, service: str, badness: float) -> Event:
    pod = f"{service}-{rng.randrange(16 ** 4):04x}"
    return Event(f"restarted {pod} after {rng.choice(('OOMKilled', 'liveness probe failures', 'CrashLoopBackOff'))}",
                 0.9)


KINDS: dict[str, Callable[[random.Random, str, float], Event]] = {
    "latency": _latency, "errors": _errors, "heartbeat": _heartbeat, "alert": _alert, "resolved": _resolved,
    "deploy": _deploy, "restart": _restart}


def _badness(rng: random.Random, window: Window, position: float) -> float:
    """Within the window's range; recovery falls as the window goes on, the others wander."""
    low, high = window.badness
    if window.name == "recovery":
        return round(high - (high - low) * position + rng.uniform(-0.05, 0.05), 3)
    return round(rng.uniform(low, high), 3)


def _window_events(rng: random.Random, window: Window, seen: set[str]) -> list[tuple[str, Event]]:
    """(service, event) pairs of one window."""
    kinds, weights = zip(*window.mix, strict=True)
    events: list[tuple[str, Event]] = []
    while len(events) < window.events:
        kind = rng.choices(kinds, weights)[0]
        badness = max(0.0, _badness(rng, window, len(events) / window.events))
        service = rng.choice(SERVICES)
        event = KINDS[kind](rng, service, badness)
        if event.text not in seen:  # a repeated text would be deduplicated by ingestion
            seen.add(event.text)
            events.append((service, event))
    return events


def opsignal_items(*, user_id: str, start: datetime, window_as: str = "field") -> list[services.MemoryInput]:
    """200 events from `start`, a few minutes apart: normal 40, degraded 60, outage 50, recovery 50. `window_as`
    "field" sets MemoryInput.window; "tags" leaves it empty and tags each event `window:<name>`. The service an
    event is about is in its metadata (`service`): the key of the evaluation's split (`split_key`)."""
    if window_as not in ("field", "tags"):
        raise ValueError(f"window_as must be 'field' or 'tags', not {window_as!r}")
    rng = random.Random(SEED)
    seen: set[str] = set()
    items: list[services.MemoryInput] = []
    at = start
    for window in WINDOWS:
        for service, event in _window_events(rng, window, seen):
            items.append(services.MemoryInput(
                content=event.text, user_id=user_id, entity_id=None, role="", session_id=f"ops-{window.name}",
                importance=event.importance, created_at=at, window=window.name if window_as == "field" else None,
                tags=(f"window:{window.name}",) if window_as == "tags" else (),
                metadata={"source": "opsignals", "window": window.name, "service": service}))
            at += timedelta(minutes=rng.uniform(*GAP_MINUTES))
    return items


def scenario_start(now: datetime) -> datetime:
    """A start from which the whole scenario ends at least ENDS_BEFORE_NOW before `now`, on a whole minute."""
    return (now - ENDS_BEFORE_NOW - SPAN).replace(second=0, microsecond=0)


SCENARIOS = ("incident", "capacity")


def scenario_items(scenario: str, *, user_id: str, now: datetime, window_as: str
                   ) -> tuple[list[services.MemoryInput], tuple[tuple[str, str], ...]]:
    """The scenario's events ending before `now`, and the (older, newer) texts whose supersede is right."""
    if scenario == "capacity":
        expected = tuple((older.text, newer.text) for older, newer in capacity.EXPECTED_SUPERSEDES)
        return capacity.capacity_items(user_id=user_id, start=capacity.capacity_start(now),
                                       window_as=window_as), expected
    if scenario == "incident":
        return opsignal_items(user_id=user_id, start=scenario_start(now), window_as=window_as), ()
    raise ValueError(f"scenario must be one of {SCENARIOS}, not {scenario!r}")


def _is_expected(older: str, newer: str | None, expected: tuple[tuple[str, str], ...]) -> bool:
    """The retired text is an expected older one and its successor carries the newer one (perhaps merged)."""
    return any(older == old and newer is not None and new in newer for old, new in expected)


@dataclass(frozen=True)
class Outcome:
    figures: dict[str, Any]  # the JSON figures
    flagged_pairs: list[tuple[str, str]]  # (from, to) texts of the flagged contradicts relations
    supersedes: list[tuple[str, str | None]]  # (older, newer) texts, the wrong ones
    expected_superseded: list[tuple[str, str | None]]  # (older, newer) texts of the right ones


def split_key(item: services.MemoryInput) -> str:
    """An event's key in the frozen split: the service it is about. Each service's events are one stream (its
    readings, alerts and deploys), so a split holds whole streams; pairs across two services of different splits
    are measured in neither. The capacity scenario is one stream of its own (all of it in one split: test)."""
    return str(item.metadata.get("service") or item.metadata["scenario"])


def evaluate_opsignals(*, items: list[services.MemoryInput], cluster: Callable[[int, str], Any],
                       progress: Callable[[str], None], scenario: str = "incident",
                       expected: tuple[tuple[str, str], ...] = ()) -> Outcome:
    """1. ingest the events (`scenario_items`, all of one user) into a new tenant; 2. cluster that user, forced;
    3. count flags, supersedes (apart from the scenario's `expected` ones) and what stays active."""
    started = time.perf_counter()
    tenant = evaluation_tenant("opsignals")
    ingested = services.memories_ingest(tenant_id=tenant.id, items=items)
    progress(f"ingested {ingested.created} events ({ingested.deduplicated} deduplicated); clustering")
    for user_id in sorted({item.user_id for item in items}):
        cluster(tenant.id, user_id)
    memories = Memory.objects.filter(tenant=tenant)
    flagged = list(MemoryRelation.objects.filter(tenant=tenant, relation_type=RelationType.CONTRADICTS, flagged=True)
                   .select_related("from_memory", "to_memory").order_by("created_at", "id"))
    superseded = [(m.content, successor_text(m)) for m in superseded_memories(tenant_id=tenant.id)]
    right = [pair for pair in superseded if _is_expected(*pair, expected)]
    wrong = [pair for pair in superseded if pair not in right]
    figures = {
        "scenario": scenario,
        "memories": ingested.created,
        "flags": len(flagged),
        "flags_per_1000": round(len(flagged) * 1000 / ingested.created, 2) if ingested.created else 0.0,
        "supersedes": len(wrong),
        "expected_supersedes": len(expected),
        "expected_superseded": len(right),
        "active_after": memories.filter(state=MemoryState.RAW).count(),
        "semantic_written": memories.filter(memory_type=MemoryType.SEMANTIC).count(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    return Outcome(figures=figures,
                   flagged_pairs=[(r.from_memory.content, r.to_memory.content) for r in flagged],
                   supersedes=wrong, expected_superseded=right)
