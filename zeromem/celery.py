"""The Celery app, configured from Django settings (CELERY_* names)."""

import gc
import logging
import os
from logging.config import dictConfig
from pathlib import Path
from typing import Any

from celery import Celery
from celery.signals import setup_logging, worker_init
from django.db.backends.signals import connection_created

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "zeromem.settings")

logger = logging.getLogger(__name__)
app = Celery("zeromem")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@setup_logging.connect
def _django_logging(**kwargs: Any) -> None:
    """The worker and beat log as settings.LOGGING says (ZEROMEMORY_LOG_LEVEL, INFO by default: every task
    received / succeeded / failed and a summary line per run), not at Celery's WARNING default."""
    from django.conf import settings

    dictConfig(settings.LOGGING)


@worker_init.connect
def _startup_objects_out_of_the_collectors_reach(**kwargs: Any) -> None:
    """What the worker loaded at start lives as long as the process: frozen, a full collection during a run scans
    only what runs made (~140,000 objects fewer; as the web process does, zeromem/wsgi.py). Pool processes
    inherit it."""
    gc.freeze()


@worker_init.connect
def _yield_cpu_to_the_web_tier(**kwargs: Any) -> None:
    """Consolidation runs below the web tier's priority (ZEROMEMORY_WORKER_NICE, 10 by default): on a machine both
    share, searches keep their latency while a clustering run works. Pool processes inherit it."""
    from django.conf import settings

    if settings.ZEROMEMORY_WORKER_NICE:
        os.nice(settings.ZEROMEMORY_WORKER_NICE)
        lower_own_session_priority(settings.ZEROMEMORY_WORKER_NICE)
    if settings.ZEROMEMORY_WORKER_SCHED_IDLE:
        idle_cpu_policy(0)
    if settings.ZEROMEMORY_WORKER_NICE or settings.ZEROMEMORY_WORKER_SCHED_IDLE:
        connection_created.connect(_database_session_at_worker_priority, weak=False)


def idle_cpu_policy(pid: int) -> None:
    """Linux's SCHED_IDLE for a process (0: this one; threads and forked pool processes inherit it): the kernel
    places a waking search on a CPU that runs only such processes as on an idle one, and within a session it is
    preempted at once. With nice alone, a search woken while the worker held a CPU waited in the other CPU's queue
    for the load balancer (p99 during a clustering run 56 ms, 46 ms with it). It still runs whenever the CPU is
    not wanted, so a run only slows down while searches keep every CPU busy."""
    try:
        os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError) as exc:  # not Linux, or not ours to change
        logger.info("process %s keeps its CPU scheduling policy: %s", pid or os.getpid(), exc)


AUTOGROUP = Path("/proc/self/autogroup")


def lower_own_session_priority(nice: int) -> bool:
    """Where the kernel shares CPU between sessions first (Linux autogroup, on in most distributions' kernels), a
    process's nice only orders it against its own session: a worker in a session of its own (`make dev`,
    `bench search`, a container) still took half of a busy machine from the web server's session, and searches
    waited during a run. So the worker lowers its session's share as well, but only when it leads the session
    (started in one of its own): a session a shell leads outlives the worker, and the commands typed there later
    must not inherit its priority. True when it did."""
    if os.getsid(0) != os.getpid():
        logger.info("the worker does not lead its session: the session keeps its CPU share")
        return False
    try:
        AUTOGROUP.write_text(str(nice))
    except OSError as exc:  # no autogroup: the process's nice alone orders it
        logger.info("the worker's session keeps its CPU share: %s", exc)
        return False
    return True


def _database_session_at_worker_priority(connection: Any, **kwargs: Any) -> None:
    """A run's database work goes at the worker's priority too, where the worker can renice its session's
    process: PostgreSQL on this machine (the embedded database of `make dev`, one-host installs). Most of a
    clustering chunk's CPU is its PostgreSQL backend inserting index entries; at the web tier's priority it made
    searches wait. Elsewhere (another host, another container) nothing changes; the web tier never calls this."""
    import psutil
    from django.conf import settings

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid, extract(epoch FROM backend_start) FROM pg_stat_activity "
                       "WHERE pid = pg_backend_pid()")
        pid, started = cursor.fetchone()
    try:
        backend = psutil.Process(pid)
        # The pid of a server on another host or in another container may name an unrelated process here: only
        # a postgres process started when our session did is ours.
        if backend.name() != "postgres" or abs(backend.create_time() - float(started)) > 1:
            return
        if settings.ZEROMEMORY_WORKER_NICE:
            backend.nice(max(backend.nice(), settings.ZEROMEMORY_WORKER_NICE))
        if settings.ZEROMEMORY_WORKER_SCHED_IDLE:
            idle_cpu_policy(pid)
    except (psutil.Error, OSError) as exc:
        logger.info("database session %s keeps its priority: %s", pid, exc)
