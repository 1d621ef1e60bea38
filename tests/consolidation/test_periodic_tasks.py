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


def test_the_dead_run_sweep_runs_every_15_seconds_so_a_dead_worker_is_noticed_within_a_minute(db, settings):
    call_command("setup_periodic_tasks")
    sweep = PeriodicTask.objects.get(task="consolidation.recover_dead_runs")
    assert sweep.crontab is None and (sweep.interval.every, sweep.interval.period) == (15, "seconds")
    assert settings.ZEROMEMORY_RUN_STALE_SECONDS + sweep.interval.every <= 60


def test_a_schedule_moved_from_a_crontab_to_an_interval_is_updated_in_place(db):
    call_command("setup_periodic_tasks")
    sweep = PeriodicTask.objects.get(task="consolidation.recover_dead_runs")
    crontab = PeriodicTask.objects.exclude(crontab=None).first().crontab
    PeriodicTask.objects.filter(pk=sweep.pk).update(interval=None, crontab=crontab)  # as an older release had it
    call_command("setup_periodic_tasks")
    moved = PeriodicTask.objects.get(pk=sweep.pk)
    assert moved.crontab is None and moved.interval.every == 15
