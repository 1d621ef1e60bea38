"""What a piece of work costs the database and the CPU, counted from the processes, not from wall time: SQL
statements this process sent, transactions its PostgreSQL backend committed or rolled back, and the CPU seconds of
this process plus its backend (the embedded PostgreSQL runs on this machine, so its /proc entry is readable)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import connection


@dataclass
class Cost:
    statements: int = 0
    transactions: int = 0
    cpu_s: float = 0.0  # this process and its PostgreSQL backend
    backend_cpu_s: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"statements": self.statements, "transactions": self.transactions, "cpu_s": round(self.cpu_s, 3),
                "backend_cpu_s": round(self.backend_cpu_s, 3)}


@contextmanager
def measured() -> Iterator[Cost]:
    """Count what the block costs. Transactions come from pg_stat_database (every autocommit statement is one),
    so nothing else may use this database meanwhile: the benches run on their own throwaway one."""
    cost = Cost()

    def count(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        cost.statements += 1
        return execute(sql, params, many, context)

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    backend, process = _cpu_of(pid), time.process_time()
    transactions = _transactions()
    with connection.execute_wrapper(count):
        yield cost
    cost.backend_cpu_s = _cpu_of(pid) - backend
    cost.cpu_s = time.process_time() - process + cost.backend_cpu_s
    # The first reading's second statement and the second reading's first are counted too.
    cost.transactions = _transactions() - transactions - 2


def _transactions() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")  # this backend's pending counts, now
        cursor.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
