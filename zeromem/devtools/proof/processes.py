"""Real processes for proofs, tests and `manage.py dev`: a Celery worker that can be killed -9 and restarted, the
broker restarted in place, gunicorn, one-shot commands. Each runs in its own session (process group) so a kill
takes its children with it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

import psutil
from django.db import connection

from zeromem.devservices import EmbeddedPostgres, EmbeddedValkey

ROOT = Path(__file__).resolve().parents[3]  # the checkout


def current_database_url() -> str:
    """DATABASE_URL pointing at the database this process uses (under pytest: the test database)."""
    url = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit(url._replace(path="/" + connection.settings_dict["NAME"]))


def child_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": current_database_url(), **extra}


class Managed:
    """A subprocess in its own process group, with its stderr (and, with `stdout_to_log`, its stdout) in a log
    file. The program is looked up on the PATH of `env`."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path, *, stdout_to_log: bool = False) -> None:
        self.args, self.env, self.log, self.stdout_to_log = args, env, log, stdout_to_log
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None

    def start(self) -> Managed:
        """Start it (again, once it has exited: its log goes on where the last run's output ended)."""
        if self._log_file is not None:
            self._log_file.close()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = self.log.open("ab")
        self.proc = subprocess.Popen(self.args, env=self.env, cwd=ROOT,
                                     stdout=self._log_file if self.stdout_to_log else subprocess.DEVNULL,
                                     stderr=self._log_file, start_new_session=True)
        return self

    @property
    def pid(self) -> int | None:
        """The process group leader's pid, which is also the group id."""
        return self.proc.pid if self.proc is not None else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode if self.proc is not None else None

    def wait(self, timeout: float) -> int | None:
        """The exit status, or None when it still runs after `timeout` seconds (its group is then killed)."""
        if self._reap(timeout):
            return self.proc.returncode if self.proc is not None else None
        self.kill9()
        return None

    def terminate(self) -> None:
        """SIGTERM to the whole group, without waiting (see stop_all)."""
        self._signal(signal.SIGTERM)

    def kill9(self) -> None:
        """What a crashed machine does: no cleanup, no acknowledgement, children included."""
        self._signal(signal.SIGKILL)
        self._reap(10)

    def stop(self) -> None:
        self._signal(signal.SIGTERM)
        if not self._reap(30):
            self.kill9()

    def _signal(self, number: int) -> None:
        if self.proc is not None:  # the whole group, even when its leader is already gone
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, number)

    def _reap(self, seconds: float) -> bool:
        if self.proc is None:
            return True
        try:
            self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        if self._log_file:
            self._log_file.close()
        return True

    def __enter__(self) -> Managed:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def stop_all(processes: Iterable[Managed]) -> None:
    """SIGTERM every group first, then wait for each (SIGKILL after 30 s): the shutdowns overlap."""
    started = [process for process in processes if process.proc is not None]
    for process in started:
        process.terminate()
    for process in started:
        if not process._reap(30):
            process.kill9()


# Seconds before each restart of a process that keeps exiting; the last repeats. A process that ran HEALTHY_AFTER
# seconds before it exited starts the sequence afresh.
RESTART_DELAYS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
HEALTHY_AFTER = 60.0


@dataclass
class _Watch:
    started: float
    failures: int = 0
    restart_at: float | None = None


@dataclass
class Supervisor:
    """Restarts the `restartable` processes that exit (after a backoff of RESTART_DELAYS, each restart said with the
    process's name), and reports the others. `tick()` is called every second or so; `clock` is a monotonic clock
    (tests pass their own)."""

    processes: dict[str, Managed]
    restartable: set[str]
    say: Callable[[str, str], None]
    clock: Callable[[], float] = time.monotonic
    restarted: Callable[[str, Managed], None] = lambda name, process: None
    _watches: dict[str, _Watch] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._watches = {name: _Watch(started=self.clock()) for name in self.processes}

    def tick(self) -> list[str]:
        """Restart what is due; the names of the processes that exited and are not restarted."""
        ended = []
        for name, process in self.processes.items():
            if process.running():
                continue
            if name not in self.restartable:
                ended.append(name)
                continue
            self._restart_when_due(name, process, self._watches[name])
        return ended

    def _restart_when_due(self, name: str, process: Managed, watch: _Watch) -> None:
        now = self.clock()
        if watch.restart_at is None:
            ran = now - watch.started
            if ran >= HEALTHY_AFTER:
                watch.failures = 0
            delay = RESTART_DELAYS[min(watch.failures, len(RESTART_DELAYS) - 1)]
            watch.failures += 1
            watch.restart_at = now + delay
            self.say(name, f"{name} exited with status {process.returncode} after {ran:.0f} s; restarting it in "
                     f"{delay:.0f} s (see {process.log})")
        elif now >= watch.restart_at:
            process.start()
            watch.started, watch.restart_at = now, None
            self.say(name, f"{name} restarted (pid {process.pid})")
            self.restarted(name, process)


def run_once(args: list[str], env: dict[str, str], log: Path, *, timeout: float) -> int | None:
    """A one-shot command (a migrate, a healthcheck) in its own process group: its exit status, or None when it
    was still running after `timeout` seconds and was killed with its children."""
    return Managed(args, env, log, stdout_to_log=True).start().wait(timeout)


def celery_worker(env: dict[str, str], log: Path, *, pool: str = "prefork", concurrency: int = 1,
                  node: str = "celery@%h") -> Managed:
    """`node`: the worker's name, distinct for each worker of one host."""
    return Managed([sys.executable, "-m", "celery", "-A", "zeromem", "worker", "--pool", pool, "--concurrency",
                    str(concurrency), "--loglevel", "WARNING", "--without-heartbeat", "--without-gossip",
                    "--without-mingle", "--prefetch-multiplier", "1", "-n", node], env, log)


def gunicorn(env: dict[str, str], log: Path, *, port: int, workers: int = 2, threads: int = 4) -> Managed:
    return Managed([sys.executable, "-m", "gunicorn", "zeromem.wsgi", "--bind", f"127.0.0.1:{port}", "--workers",
                    str(workers), "--threads", str(threads), "--worker-class", "gthread", "--timeout", "60",
                    "--log-level", "warning"], env, log)


def broker_restart(redis_url: str) -> None:
    """Stop the embedded Valkey listening on the broker's port and start it again (same port, same var dir).
    It keeps nothing on disk: queued messages are gone, as after a real broker crash without persistence."""
    port = int(urlsplit(redis_url).port or 0)
    pid = next(c.pid for c in psutil.net_connections(kind="tcp")
               if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN and c.pid)
    var_dir = Path(psutil.Process(pid).cwd()).parent  # valkey runs in <var dir>/valkey
    valkey = EmbeddedValkey(var_dir, port)
    valkey.stop()
    time.sleep(0.5)
    valkey.start()


def database_restart(pgdata: Path, *, down_seconds: float = 2.0) -> None:
    """Stop this checkout's embedded PostgreSQL (a fast shutdown: every client's connection is cut, as when a
    server restarts), leave it down a moment, and start it again on the same data dir and socket."""
    postgres = EmbeddedPostgres(pgdata.parent)  # the data dir is <var dir>/pg
    postgres.stop()
    time.sleep(down_seconds)
    postgres.start()


def celery_beat(env: dict[str, str], log: Path) -> Managed:
    """Beat on the database scheduler (the schedules `setup_periodic_tasks` upserted)."""
    return Managed([sys.executable, "-m", "celery", "-A", "zeromem", "beat", "--loglevel", "WARNING",
                    "--schedule", str(log.parent / "beat-schedule")], env, log)
