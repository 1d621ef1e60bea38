from django.core.management import call_command
from django_celery_beat.models import PeriodicTask, PeriodicTasks

from consolidation.schedules import SCHEDULES


def test_setup_periodic_tasks_is_idempotent(db):
    call_command("setup_periodic_tasks")
    first = {t.name: (t.pk, t.task, t.crontab_id) for t in PeriodicTask.objects.all()}
    call_command("setup_periodic_tasks")
    second = {t.name: (t.pk, t.task, t.crontab_id) for t in PeriodicTask.objects.all()}
    assert first == second
    assert set(first) == {s.name for s in SCHEDULES}
    assert PeriodicTasks.objects.exists()  # beat was told that schedules changed


def test_it_repairs_an_edited_schedule_in_place(db):
    call_command("setup_periodic_tasks")
    name = SCHEDULES[0].name
    task = PeriodicTask.objects.get(name=name)
    PeriodicTask.objects.filter(pk=task.pk).update(task="somebody.edited", enabled=False)
    call_command("setup_periodic_tasks")
    repaired = PeriodicTask.objects.get(name=name)
    assert repaired.pk == task.pk and repaired.task == SCHEDULES[0].task and repaired.enabled
