"""At the default log level a worker says what it does: each task received and succeeded."""

from __future__ import annotations

import re

import pytest
from django.db import transaction

from tests.conftest import wait_until
from tests.factories import ingest
from zeromem.core.tasks import enqueue_on_commit, memories_embed_task


@pytest.mark.django_db(transaction=True)
def test_the_worker_logs_each_task_received_and_succeeded(tenant, worker, settings):
    with transaction.atomic():
        ids = ingest(tenant, "a memory to embed later", embed=False)
        enqueue_on_commit(memories_embed_task.name, memory_ids=[str(i) for i in ids])

    def logged() -> str:
        return worker.log.read_text()

    ours = re.compile(rf"Task {re.escape(memories_embed_task.name)}\[[0-9a-f-]+\] (received|succeeded)")
    assert wait_until(lambda: {m.group(1) for m in ours.finditer(logged())} == {"received", "succeeded"}), logged()
