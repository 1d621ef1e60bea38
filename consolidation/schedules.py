"""Periodic tasks as code, upserted by name into django-celery-beat's tables by `manage.py setup_periodic_tasks`
(never delete-and-recreate)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask, PeriodicTasks


@dataclass(frozen=True)
class Schedule:
    name: str
    task: str
    minute: str = "*"
    hour: str = "*"
    day_of_week: str = "*"
    expires_seconds: int = 3600  # a run missed by this much is skipped: the next one covers it
    every_seconds: int | None = None  # an interval instead of the crontab fields (crontab stops at a minute)


SCHEDULES: tuple[Schedule, ...] = (
    Schedule(name="zeromem: daily clustering", task="consolidation.clustering_fan_out", minute="30", hour="3",
             expires_seconds=3 * 3600),
    Schedule(name="zeromem: weekly reflection", task="consolidation.reflection_fan_out", minute="45", hour="4",
             day_of_week="0", expires_seconds=6 * 3600),  # Sunday 04:45 UTC (crontab: 0 = Sunday)
    Schedule(name="zeromem: daily lifecycle", task="consolidation.lifecycle_fan_out", minute="30", hour="2",
             expires_seconds=6 * 3600),
    Schedule(name="zeromem: requeue runs whose task was lost", task="consolidation.requeue_stale_runs",
             minute="*/5", expires_seconds=240),
    Schedule(name="zeromem: recover runs whose worker died", task="consolidation.recover_dead_runs",
             every_seconds=15, expires_seconds=15),
    Schedule(name="zeromem: flush read accesses", task="zeromem.flush_access", minute="*", expires_seconds=120),
    Schedule(name="zeromem: embed memories stored without a vector", task="zeromem.embed_missing",
             minute="*/15", expires_seconds=900),
)


def _when(schedule: Schedule) -> dict[str, CrontabSchedule | IntervalSchedule | None]:
    """The PeriodicTask fields of its schedule: exactly one of crontab and interval is set."""
    if schedule.every_seconds is None:
        return {"crontab": _crontab(schedule), "interval": None}
    interval, _ = IntervalSchedule.objects.get_or_create(every=schedule.every_seconds,
                                                         period=IntervalSchedule.SECONDS)
    return {"crontab": None, "interval": interval}


def _crontab(schedule: Schedule) -> CrontabSchedule:
    crontab, _ = CrontabSchedule.objects.get_or_create(
        minute=schedule.minute, hour=schedule.hour, day_of_week=schedule.day_of_week,
        day_of_month="*", month_of_year="*", timezone="UTC")
    return crontab


def periodic_tasks_upsert() -> list[tuple[str, bool]]:
    """Create or update each schedule by name; returns (name, created) pairs. Tells beat once at the end."""
    results = []
    with transaction.atomic():
        for schedule in SCHEDULES:
            _, created = PeriodicTask.objects.update_or_create(
                name=schedule.name,
                defaults={"task": schedule.task, **_when(schedule), "expire_seconds": schedule.expires_seconds,
                          "enabled": True})
            results.append((schedule.name, created))
        # update_or_create bypasses the signal that bumps beat's change marker on bulk paths: bump it.
        PeriodicTasks.update_changed()
    return results
