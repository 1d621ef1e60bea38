"""Upsert of the code-defined schedules into django-celery-beat's tables."""

from __future__ import annotations

from django.db import transaction
from django_celery_beat.models import CrontabSchedule, PeriodicTask, PeriodicTasks

from consolidation.schedules import SCHEDULES, Schedule


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
                defaults={"task": schedule.task, "crontab": _crontab(schedule), "interval": None,
                          "expire_seconds": schedule.expires_seconds, "enabled": True})
            results.append((schedule.name, created))
        # update_or_create bypasses the signal that bumps beat's change marker on bulk paths: bump it.
        PeriodicTasks.update_changed()
    return results
