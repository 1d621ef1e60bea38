"""Thin Celery wrappers: take ids, call one service. Idempotent, acks_late, retried only on errors that
may pass (database or broker connection trouble), with backoff."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from celery import current_app, shared_task
from django.db import InterfaceError, OperationalError, transaction

from zeromem.core import services
from zeromem.core.access import access_flush

TRANSIENT_ERRORS = (OperationalError, InterfaceError, ConnectionError, TimeoutError)
TASK_OPTIONS: dict[str, Any] = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": TRANSIENT_ERRORS,
    "retry_backoff": 5,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 6,
}


def send_task(task_name: str, **kwargs: Any) -> None:
    """Send the task registered under `task_name` now, with its own options. Looked up by name in the Celery
    app's registry (which imports every app's task module), so services below the task modules never import
    them; an unknown name raises NotRegistered."""
    current_app.tasks[task_name].apply_async(kwargs=kwargs)


def enqueue_on_commit(task_name: str, **kwargs: Any) -> None:
    """Send the task registered under `task_name` once the surrounding transaction has committed (never for a
    rolled-back one)."""
    transaction.on_commit(lambda: send_task(task_name, **kwargs))


@shared_task(name="zeromem.embed_memories", soft_time_limit=600, time_limit=660, **TASK_OPTIONS)
def memories_embed_task(*, memory_ids: list[str]) -> int:
    return services.memories_embed_pending(memory_ids=[uuid.UUID(i) for i in memory_ids])


@shared_task(name="zeromem.parse_memories", soft_time_limit=600, time_limit=660, **TASK_OPTIONS)
def memories_parse_task(*, memory_ids: list[str]) -> int:
    """After ingestion: the language reader's parse of the new memories, stored once with each."""
    return services.memories_parse_pending(memory_ids=[uuid.UUID(i) for i in memory_ids])


def memories_parse_on_commit(memory_ids: Iterable[uuid.UUID]) -> None:
    """Have a worker parse memories once the transaction writing them commits (`memories_parse_task`): a memory is
    parsed once in its life, whoever wrote it, and never on a request's or a run's time."""
    enqueue_on_commit(memories_parse_task.name, memory_ids=[str(i) for i in memory_ids])


@shared_task(name="zeromem.embed_missing", soft_time_limit=3000, time_limit=3300, expires=3000, **TASK_OPTIONS)
def memories_embed_missing_task() -> int:
    """Safety net for memories stored while the embedder was failing: they get a vector on the next sweep."""
    return services.memories_embed_pending()


@shared_task(name="zeromem.flush_access", soft_time_limit=240, time_limit=300, expires=120, **TASK_OPTIONS)
def access_flush_task() -> int:
    """Every minute: buffered read accesses into access_count / last_accessed_at."""
    return access_flush()
