"""Periodic tasks as code, upserted by name by `manage.py setup_periodic_tasks` (never delete-and-recreate)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Schedule:
    name: str
    task: str
    minute: str
    hour: str = "*"
    day_of_week: str = "*"
    expires_seconds: int = 3600  # a run missed by this much is skipped: the next one covers it


SCHEDULES: tuple[Schedule, ...] = (
    Schedule(name="zeromem: daily clustering", task="consolidation.clustering_fan_out", minute="30", hour="3",
             expires_seconds=3 * 3600),
    Schedule(name="zeromem: weekly reflection", task="consolidation.reflection_fan_out", minute="45", hour="4",
             day_of_week="0", expires_seconds=6 * 3600),  # Sunday 04:45 UTC (crontab: 0 = Sunday)
    Schedule(name="zeromem: daily lifecycle", task="consolidation.lifecycle_fan_out", minute="30", hour="2",
             expires_seconds=6 * 3600),
    Schedule(name="zeromem: requeue runs whose task was lost", task="consolidation.requeue_stale_runs",
             minute="*/5", expires_seconds=240),
    Schedule(name="zeromem: flush read accesses", task="zeromem.flush_access", minute="*", expires_seconds=120),
    Schedule(name="zeromem: embed memories stored without a vector", task="zeromem.embed_missing",
             minute="*/15", expires_seconds=900),
)
