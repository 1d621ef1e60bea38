"""Writes of one user racing each other on separate connections: ingestion, deletion and correction interleaved
in the orders that used to deadlock on the BM25 counters or crash ingestion, each forced step by step (a third
connection holds a row lock, and the test waits until PostgreSQL reports a contender blocked on it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from consolidation.corrections.erasure import memories_erase, memory_correct
from tests.factories import ingest_one, memory_input
from zeromem.core import services
from zeromem.core.selectors import MemoryFilter, query_terms
from zeromem.core.services import content_hash
from zeromem.models import Memory

pytestmark = pytest.mark.django_db(transaction=True)


class Contender(threading.Thread):
    """A call on its own connection; remembers its backend's pid, its answer or what it raised."""

    def __init__(self, call: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.call, self.pid, self.result, self.error = call, 0, None, None
        self.connected = threading.Event()

    def run(self) -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                self.pid = cursor.fetchone()[0]
            self.connected.set()
            self.result = self.call()
        except Exception as exc:  # the test asserts on it
            self.error = exc
        finally:
            self.connected.set()
            connections.close_all()


def start_blocked(call: Callable[[], Any]) -> Contender:
    """Start the call and return once PostgreSQL reports it waiting on a lock (it is then queued behind it)."""
    contender = Contender(call)
    contender.start()
    contender.connected.wait(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [contender.pid])
            row = cursor.fetchone()
        if contender.error is not None or not contender.is_alive():
            raise AssertionError(f"the contender finished instead of waiting: {contender.error!r}")
        if row and row[0] == "Lock":
            return contender
        time.sleep(0.01)
    raise AssertionError("the contender never waited on the lock")


@contextmanager
def holding(write: Callable[[], Any]) -> Iterator[None]:
    """What `write` locks (or inserts), held by a transaction on a connection of its own until the block ends,
    then committed."""
    ready, release, done = threading.Event(), threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                write()
                ready.set()
                release.wait(60)
        finally:
            connections.close_all()
            done.set()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert ready.wait(30)
    try:
        yield
    finally:
        release.set()
        done.wait(30)


def lock_rows(sql: str, params: list[Any]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        assert cursor.fetchall(), "nothing to lock"


def finish(*contenders: Contender) -> None:
    for contender in contenders:
        contender.join(60)
        assert not contender.is_alive()
    errors = [c.error for c in contenders if c.error is not None]
    assert not errors, errors


def doc_freq(tenant_id: int, query: str) -> tuple[dict[str, int], int]:
    stats = query_terms(MemoryFilter(tenant_id=tenant_id, user_id="u1"), query).stats
    return stats.doc_freqs, stats.doc_count


def test_an_insert_and_a_delete_locking_the_same_terms_in_opposite_orders_both_succeed(tenant):
    # The deleted memory's terms ("appl", "zebra") are stored zebra's row first: deletion reached them in that
    # order, ingestion in sorted order; a lock held on "banana" stops the insert between "appl" and "zebra".
    doomed = ingest_one(tenant, "zebra apple")
    ingest_one(tenant, "a zebra")
    ingest_one(tenant, "an apple")
    ingest_one(tenant, "a banana")
    new = memory_input("apple banana zebra together")
    with holding(lambda: lock_rows("""SELECT 1 FROM zeromem_termstat WHERE tenant_id = %s AND user_id = 'u1'
                                         AND term = 'banana' FOR UPDATE""", [tenant.id])):
        insert = start_blocked(lambda: services.memories_ingest(tenant_id=tenant.id, items=[new]))
        delete = start_blocked(lambda: memories_erase(tenant_id=tenant.id, memory_ids=[doomed], actor="t",
                                                      reason="test"))
    finish(insert, delete)
    assert doc_freq(tenant.id, "apple banana zebra") == ({"appl": 2, "banana": 2, "zebra": 2}, 4)


def test_a_correction_and_a_delete_of_one_memory_both_succeed_and_count_it_once(tenant):
    # The correction locks the memory first, the deletion its counters first: with the memory locked by a third
    # connection, both queue on it (the correction first), and the deletion holds the counters while it waits.
    memory = ingest_one(tenant, "the heron nests by the river")
    with holding(lambda: lock_rows("SELECT 1 FROM zeromem_memory WHERE id = %s FOR UPDATE", [memory])):
        correct = start_blocked(lambda: memory_correct(tenant_id=tenant.id, memory_id=memory,
                                                       content="the heron nests by the lake", actor="t"))
        delete = start_blocked(lambda: memories_erase(tenant_id=tenant.id, memory_ids=[memory], actor="t",
                                                      reason="test"))
    finish(correct, delete)
    assert not Memory.objects.filter(id=memory).exists()
    assert doc_freq(tenant.id, "heron river lake") == ({}, 0)


def test_a_text_deleted_between_the_duplicate_check_and_the_insert_is_stored_again(tenant):
    # The batch's first text is stored already (its duplicate check answers that row); its second text waits on
    # another transaction inserting the same text (a bare row). Meanwhile the first text's row is deleted: the
    # batch must store it anew, not answer the deleted row's id or crash.
    stored = ingest_one(tenant, "the first text")
    batch = [memory_input("the first text"), memory_input("the second text")]
    with holding(lambda: Memory.objects.create(tenant=tenant, user_id="u1", content="the second text",
                                               content_hash=content_hash("the second text"),
                                               created_at=timezone.now())):
        insert = start_blocked(lambda: services.memories_ingest(tenant_id=tenant.id, items=batch))
        memories_erase(tenant_id=tenant.id, memory_ids=[stored], actor="t", reason="test")
    finish(insert)
    assert insert.result is not None
    first, second = insert.result.ids
    assert first != stored and Memory.objects.filter(id__in=[first, second]).count() == 2
    assert doc_freq(tenant.id, "first") == ({"first": 1}, 1)  # the other row was written without counters
