"""A real Celery worker, through the embedded broker, runs the deferred-embedding task enqueued on commit."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest
from django.db import connection, transaction

from tests.conftest import subprocess_database_url, wait_until
from tests.factories import ingest
from zeromem.core.tasks import enqueue_on_commit, memories_embed_task
from zeromem.models import Memory


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_embeds_memories_stored_without_vectors(tenant, worker, settings):
    settings.ZEROMEMORY_EMBEDDING_MODEL = "builtin:hash"
    with transaction.atomic():
        ids = ingest(tenant, [f"deferred memory {i}" for i in range(5)], embed=False)
        enqueue_on_commit(memories_embed_task.name, memory_ids=[str(i) for i in ids])
    assert wait_until(lambda: not Memory.objects.filter(id__in=ids, embedding__isnull=True).exists()), (
        worker.log.read_text())


@pytest.mark.django_db(transaction=True)
def test_nothing_is_enqueued_for_a_rolled_back_transaction(tenant, settings):
    from zeromem.celery import app

    with app.connection_for_write() as conn:
        conn.default_channel.client.delete("celery")
        with pytest.raises(RuntimeError), transaction.atomic():
            enqueue_on_commit(memories_embed_task.name, memory_ids=["00000000-0000-0000-0000-000000000000"])
            raise RuntimeError("roll back")
        assert conn.default_channel.client.llen("celery") == 0


@pytest.mark.django_db(transaction=True)
def test_beat_starts_with_the_database_scheduler(tmp_path):
    from django.core.management import call_command

    call_command("setup_periodic_tasks")
    env = {**os.environ, "DATABASE_URL": subprocess_database_url()}
    log = tmp_path / "beat.log"
    with log.open("wb") as out:
        beat = subprocess.Popen([sys.executable, "-m", "celery", "-A", "zeromem", "beat", "--loglevel", "INFO",
                                 "--schedule", str(tmp_path / "beat-schedule")], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        assert wait_until(lambda: b"DatabaseScheduler: Schedule changed" in log.read_bytes()
                          or b"Writing entries" in log.read_bytes() or b"beat: Starting" in log.read_bytes(), 60)
        time.sleep(2)  # a real beat process: it must still be alive a moment after it started
        assert beat.poll() is None, log.read_text()
        assert b"Traceback" not in log.read_bytes()
    finally:
        beat.terminate()
        beat.wait(timeout=20)


@pytest.mark.django_db(transaction=True)
def test_the_worker_runs_below_the_web_tiers_cpu_priority(worker):
    own = os.getpriority(os.PRIO_PROCESS, 0)
    assert os.getpriority(os.PRIO_PROCESS, worker.pid) == min(own + 10, 19)
    # SCHED_IDLE: a waking search takes the CPU it holds (zeromem.celery.idle_cpu_policy)
    assert os.sched_getscheduler(worker.pid) == os.SCHED_IDLE
    assert os.sched_getscheduler(0) == os.SCHED_OTHER



@pytest.mark.django_db(transaction=True)
def test_a_worker_session_runs_at_the_workers_priority_and_the_web_session_does_not(settings):
    """The embedded PostgreSQL runs on this machine as this user, so a worker lowers its own session's backend
    (the hook `worker_init` connects to every new connection of a worker); a web session keeps its priority."""
    from zeromem.celery import _database_session_at_worker_priority

    settings.ZEROMEMORY_WORKER_NICE = 7
    web_backend = psutil.Process(_backend_pid(connection))
    base = web_backend.nice()  # what every backend starts with: the server's own priority
    worker_session = connection.copy()
    try:
        worker_session.connect()
        _database_session_at_worker_priority(worker_session)
        assert psutil.Process(_backend_pid(worker_session)).nice() == max(base, 7)
        assert os.sched_getscheduler(_backend_pid(worker_session)) == os.SCHED_IDLE
        assert web_backend.nice() == base
        assert os.sched_getscheduler(web_backend.pid) == os.SCHED_OTHER
    finally:
        worker_session.close()


def _backend_pid(session) -> int:
    with session.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


LOWER_OWN_SESSION = ("import sys; from zeromem.celery import lower_own_session_priority; "
                     "print(lower_own_session_priority(7), open('/proc/self/autogroup').read().split()[-1])")


@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="this kernel has no autogroup")
@pytest.mark.parametrize(("shell_line", "lowered"), [
    ("exec {python} -c \"{code}\"", "True 7"),  # the worker alone in its session
    ("{python} -c \"{code}\"; true", "False 0"),  # a shell leads the session, and outlives the worker
])
def test_a_worker_lowers_its_sessions_share_only_when_it_leads_the_session(shell_line, lowered):
    """With autogroup the kernel shares CPU between sessions first, so a niced worker in a session of its own
    still took half the machine from the web server's session; a session a shell leads keeps its share."""
    line = shell_line.format(python=sys.executable, code=LOWER_OWN_SESSION)
    result = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=60,
                            start_new_session=True, cwd=os.getcwd())
    assert result.stdout.strip() == lowered, result.stderr
