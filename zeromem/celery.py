"""The Celery app, configured from Django settings (CELERY_* names)."""

import logging
import os
from logging.config import dictConfig
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
def _yield_cpu_to_the_web_tier(**kwargs: Any) -> None:
    """Consolidation runs below the web tier's priority (ZEROMEMORY_WORKER_NICE, 10 by default): on a machine both
    share, searches keep their latency while a clustering run works. Pool processes inherit it."""
    from django.conf import settings

    if settings.ZEROMEMORY_WORKER_NICE:
        os.nice(settings.ZEROMEMORY_WORKER_NICE)
        connection_created.connect(_database_session_at_worker_priority, weak=False)


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
        backend.nice(max(backend.nice(), settings.ZEROMEMORY_WORKER_NICE))
    except (psutil.Error, OSError) as exc:
        logger.info("database session %s keeps its priority: %s", pid, exc)
