"""The `capacity` scenario of `manage.py evaluate opsignals`: six days of a team's capacity monitoring, with
quantities the product's code names nowhere (queue backlog, disk usage, temperatures, connection-pool use, cache hit
ratio, replication lag, memory RSS, UPS battery), some as terse event lines and some as full sentences, one window a
day. Readings of a moment are not knowledge updates: every flag or supersede among them is wrong.

Among the events, the team's own notes (no window: they are not monitoring events) set a few configuration values
and change them days later. Those changes are knowledge updates: the older note should end superseded by the newer
one (`EXPECTED_SUPERSEDES`), and they are reported apart from the readings.

Deterministic (a seeded random generator), like the incident scenario."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from zeromem.core import services

SEED = 20261126
DAYS = 6
EVENTS_PER_DAY = 40
# The scenario ends at least this long before now, so clustering outside forced runs could fold it too.
ENDS_BEFORE_NOW = timedelta(days=2)
SPAN = timedelta(days=DAYS)
HOSTS = ("db-1", "db-2", "app-3", "app-4", "cache-1")
QUEUES = ("emails", "thumbnails", "billing", "exports")
REPLICAS = ("replica-1", "replica-2", "replica-3")
SERVICES = ("gateway", "orders", "indexer", "notifier")
CACHES = ("session", "catalog", "pricing")
RACKS = ("A3", "B1", "C7")
UPS_UNITS = ("ups-east", "ups-west")


@dataclass(frozen=True)
class Note:
    """A configuration statement of the team, `day` (fractional) days after the scenario starts."""
    day: float
    text: str


# (older, newer): the newer note changes the value the older one set; the older should end superseded.
EXPECTED_SUPERSEDES: tuple[tuple[Note, Note], ...] = (
    (Note(0.4, "max_connections is set to 200 on the primary database."),
     Note(4.2, "We raised max_connections to 400 on the primary database.")),
    (Note(1.3, "The thumbnail workers run with a concurrency of 8."),
     Note(5.1, "Thumbnail worker concurrency is 16 now.")),
    (Note(0.7, "The disk usage alert fires at 85 percent."),
     Note(3.6, "We lowered the disk usage alert to 80 percent.")),
    (Note(2.2, "Messages in the billing queue are kept for 7 days."),
     Note(4.8, "Billing queue retention changed to 14 days.")),
)


def _backlog(rng: random.Random, load: float) -> str:
    jobs = round(200 + load * 4000 + rng.uniform(-150, 150))
    return rng.choice((f"queue backlog at {jobs} jobs ({rng.choice(QUEUES)})",
                       f"The {rng.choice(QUEUES)} backlog is now {jobs} jobs."))


def _disk(rng: random.Random, load: float) -> str:
    used, host = min(99, round(55 + load * 38 + rng.uniform(-3, 3))), rng.choice(HOSTS)
    return rng.choice((f"disk on {host} {used} percent", f"/var at {used}% full on {host}",
                       f"Disk usage on {host} climbed to {used} percent."))


def _temperature(rng: random.Random, load: float) -> str:
    celsius = round(22 + load * 14 + rng.uniform(-1.5, 1.5), 1)
    return rng.choice((f"inlet temperature {celsius} C in rack {rng.choice(RACKS)}",
                       f"{rng.choice(HOSTS)} CPU package at {round(celsius * 2.1)} °C"))


def _pool(rng: random.Random, load: float) -> str:
    size = rng.choice((50, 100))
    used = min(size, round(size * (0.2 + 0.75 * load) + rng.uniform(-4, 4)))
    return f"connection pool {rng.choice(SERVICES)}: {used}/{size} in use"


def _cache(rng: random.Random, load: float) -> str:
    ratio = round(0.97 - load * 0.3 + rng.uniform(-0.02, 0.02), 3)
    cache = rng.choice(CACHES)
    return rng.choice((f"cache hit ratio {ratio} on {cache}",
                       f"The {cache} cache is answering {round(ratio * 100)} percent of lookups."))


def _lag(rng: random.Random, load: float) -> str:
    seconds, replica = round(load * 60 + rng.uniform(0, 4)), rng.choice(REPLICAS)
    return rng.choice((f"replication lag {seconds} s on {replica}",
                       f"Replication lag reached {seconds} seconds on {replica}."))


def _memory(rng: random.Random, load: float) -> str:
    mib = round(900 + load * 2600 + rng.uniform(-80, 80))
    return f"{rng.choice(SERVICES)} memory RSS {mib} MiB"


def _battery(rng: random.Random, load: float) -> str:
    percent, unit = max(5, round(100 - load * 60 - rng.uniform(0, 10))), rng.choice(UPS_UNITS)
    return rng.choice((f"UPS battery at {percent}% ({unit})", f"Battery on {unit} is down to {percent} percent."))


READINGS: tuple[Callable[[random.Random, float], str], ...] = (
    _backlog, _disk, _temperature, _pool, _cache, _lag, _memory, _battery)


def _load(day: int, position: float) -> float:
    """0 = idle, 1 = saturated: a daily curve peaking mid-day, rising over the week."""
    return round(min(1.0, (0.15 + 0.1 * day) * (1 + 2 * position * (1 - position) * 2)), 3)


def _day_readings(rng: random.Random, day: int, seen: set[str]) -> list[str]:
    texts: list[str] = []
    while len(texts) < EVENTS_PER_DAY:
        text = rng.choice(READINGS)(rng, _load(day, len(texts) / EVENTS_PER_DAY))
        if text not in seen:  # a repeated text would be deduplicated by ingestion
            seen.add(text)
            texts.append(text)
    return texts


def _reading(text: str, *, user_id: str, at: datetime, day: int, window_as: str) -> services.MemoryInput:
    window = f"day-{day + 1}"
    return services.MemoryInput(
        content=text, user_id=user_id, entity_id=None, role="", session_id=f"capacity-{window}", importance=0.3,
        created_at=at, window=window if window_as == "field" else None,
        tags=(f"window:{window}",) if window_as == "tags" else (),
        metadata={"source": "opsignals", "scenario": "capacity", "window": window})


def _note(note: Note, *, user_id: str, start: datetime) -> services.MemoryInput:
    at = start + timedelta(days=note.day)
    return services.MemoryInput(content=note.text, user_id=user_id, entity_id=None, role="user",
                                session_id=f"capacity-notes-{at.date().isoformat()}", importance=0.6, created_at=at,
                                metadata={"source": "opsignals", "scenario": "capacity", "note": True})


def capacity_items(*, user_id: str, start: datetime, window_as: str = "field") -> list[services.MemoryInput]:
    """DAYS × EVENTS_PER_DAY readings spread over each day from `start`, and the configuration notes, in time
    order. `window_as` as in `opsignal_items`; the notes never carry a window."""
    if window_as not in ("field", "tags"):
        raise ValueError(f"window_as must be 'field' or 'tags', not {window_as!r}")
    rng = random.Random(SEED)
    seen: set[str] = set()
    gap = timedelta(days=1) / EVENTS_PER_DAY
    moments = [(start + timedelta(days=day) + n * gap, day, text)
               for day in range(DAYS) for n, text in enumerate(_day_readings(rng, day, seen))]
    timeline = [(at, _reading(text, user_id=user_id, at=at, day=day, window_as=window_as)) for at, day, text in moments]
    timeline += [(start + timedelta(days=note.day), _note(note, user_id=user_id, start=start))
                 for pair in EXPECTED_SUPERSEDES for note in pair]
    return [item for _, item in sorted(timeline, key=lambda entry: entry[0])]


def capacity_start(now: datetime) -> datetime:
    """A start from which the whole scenario ends at least ENDS_BEFORE_NOW before `now`, on a whole minute."""
    return (now - ENDS_BEFORE_NOW - SPAN).replace(second=0, microsecond=0)
