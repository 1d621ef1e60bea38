"""zeromem.core.contention: a write PostgreSQL aborted for a deadlock runs again whole, a bounded number of times,
and only as the outermost transaction."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection, transaction

from zeromem.api.errors import as_api_error
from zeromem.core.contention import ATTEMPTS, WriteContention, retry_on_contention
from zeromem.models import Tenant

pytestmark = pytest.mark.django_db(transaction=True)


def abort_as_deadlocked() -> None:
    """What PostgreSQL raises in the transaction it picks as a deadlock's victim (SQLSTATE 40P01)."""
    with connection.cursor() as cursor:
        cursor.execute("DO $$ BEGIN RAISE EXCEPTION 'deadlock detected' USING ERRCODE = '40P01'; END $$")


def write_deadlocking(times: int) -> tuple[list[str], object]:
    attempts: list[str] = []

    @retry_on_contention
    def write() -> None:
        with transaction.atomic():
            attempts.append(f"attempt-{len(attempts)}")
            Tenant.objects.create(name=attempts[-1])
            if len(attempts) <= times:
                abort_as_deadlocked()

    return attempts, write


def test_a_write_aborted_by_a_deadlock_runs_again_and_keeps_only_the_last_attempt(caplog):
    attempts, write = write_deadlocking(times=2)
    write()
    assert len(attempts) == 3
    assert [r.getMessage() for r in caplog.records if "lost to a concurrent write" in r.getMessage()] == [
        "write: attempt 1 lost to a concurrent write (deadlock detected); running it again",
        "write: attempt 2 lost to a concurrent write (deadlock detected); running it again"]
    assert list(Tenant.objects.filter(name__startswith="attempt-").values_list("name", flat=True)) == ["attempt-2"]


def test_a_write_beaten_every_time_gives_up_after_the_last_attempt_with_nothing_written():
    attempts, write = write_deadlocking(times=ATTEMPTS)
    with pytest.raises(WriteContention):
        write()
    assert len(attempts) == ATTEMPTS
    assert not Tenant.objects.filter(name__startswith="attempt-").exists()
    assert as_api_error(WriteContention("busy")).status == 503


def test_inside_a_callers_transaction_the_error_goes_up_to_the_caller():
    attempts, write = write_deadlocking(times=1)
    with pytest.raises(OperationalError), transaction.atomic():
        write()
    assert len(attempts) == 1
