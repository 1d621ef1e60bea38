"""The Celery app, configured from Django settings (CELERY_* names)."""

import os
from logging.config import dictConfig
from typing import Any

from celery import Celery
from celery.signals import setup_logging, worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "zeromem.settings")

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
