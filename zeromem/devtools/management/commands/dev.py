"""`make dev`: the whole stack on this checkout's embedded services until Ctrl-C (or `make dev-stop` from another
shell): the web server (runserver, static files through WhiteNoise as in production), a Celery worker and beat.

manage.py has already started (or found running) PostgreSQL and Valkey under var/ and migrated, which upserts the
beat schedules; it stops the services on exit when it was the one that started them. Each process runs in its own
process group with its pid in var/run/dev-<name>.pid and its output appended to var/log/dev/<name>.log (a line marks
each start, so the log of a crash survives the next `make dev`); this command's own pid is var/run/dev.pid, which
`make dev-stop` signals. A worker or beat that exits is restarted after a backoff (said here and in its log); the
stack stops only when the web server exits. The API key is created once, its secret kept in
var/run/dev-api-key (mode 0600) and printed only that first time.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django_celery_beat.models import PeriodicTask

from zeromem.core import selectors, services
from zeromem.devservices import free_port
from zeromem.devtools.proof.processes import Managed, Supervisor, stop_all

RUN_DIR = settings.BASE_DIR / "var" / "run"
LOG_DIR = settings.BASE_DIR / "var" / "log" / "dev"
PID_FILE = RUN_DIR / "dev.pid"
KEY_FILE = RUN_DIR / "dev-api-key"
TENANT = "dev"
RESTARTABLE = {"worker", "beat"}  # the web server's exit stops the stack: runserver exits on a broken edit


def commands(port: int) -> dict[str, list[str]]:
    """The worker and beat as docker-compose.yml runs them; the web server is runserver (it reloads on edits)."""
    return {"web": [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}"],
            "worker": [sys.executable, "-m", "celery", "-A", "zeromem", "worker", "--loglevel", "INFO",
                       "--concurrency", "2"],
            "beat": [sys.executable, "-m", "celery", "-A", "zeromem", "beat", "--loglevel", "INFO"]}


def log_mark(log: Path, line: str) -> None:
    """A dated line in a process's log, between its runs' output."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as handle:
        handle.write(f"--- {datetime.now(UTC).isoformat(timespec='seconds')} {line} ---\n")


def pid_file(name: str) -> Path:
    return RUN_DIR / f"dev-{name}.pid"


def pid_file_write(name: str, process: Managed) -> None:
    pid_file(name).write_text(str(process.pid))


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def leftovers_stop() -> list[str]:
    """Process groups a previous `make dev` killed with -9 left behind (their pid files remain): stopped."""
    stopped = []
    for path in RUN_DIR.glob("dev-*.pid"):
        pgid = read_pid(path)
        if pgid is not None and ours(pgid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGTERM)
            stopped.append(path.stem.removeprefix("dev-"))
        path.unlink(missing_ok=True)
    return stopped


def ours(pid: int) -> bool:
    """The pid still runs one of our commands (a pid file outlives its process; the number may be reused)."""
    try:
        command = " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return False
    return "manage.py" in command or "celery" in command


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM (`make dev-stop`) unwinds like Ctrl-C: everything started is stopped, and the exit status is 0."""
    raise KeyboardInterrupt


def api_key() -> tuple[str, str, bool]:
    """(secret, prefix, created): the key kept in KEY_FILE while it still authenticates, else a new one saved there."""
    if KEY_FILE.exists():
        secret = KEY_FILE.read_text().strip()
        key = selectors.apikey_authenticate(secret=secret)
        if key is not None:
            return secret, key.prefix, False
    key, secret = services.apikey_create(tenant=services.tenant_get_or_create(name=TENANT), name="make dev")
    KEY_FILE.parent.mkdir(parents=True, exist_ok=True)
    KEY_FILE.unlink(missing_ok=True)
    descriptor = os.open(KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # never readable by others
    with os.fdopen(descriptor, "w") as handle:
        handle.write(secret + "\n")
    return secret, key.prefix, True


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def web_answers(base: str) -> bool:
    try:
        httpx.get(f"{base}/admin/login/", timeout=2, trust_env=False)
    except httpx.TransportError:
        return False
    return True


class Command(BaseCommand):
    help = ("The dev stack on this checkout's embedded services: web, a worker and beat, until Ctrl-C or "
            "`make dev-stop`; prints the URLs and, the first time, an API key.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8000, help="web port (a free one when this one is taken)")

    def handle(self, *args: Any, port: int, **options: Any) -> None:
        running = read_pid(PID_FILE)
        if running is not None and running != os.getpid() and ours(running):
            raise CommandError(f"make dev already runs (pid {running}); `make dev-stop` stops it")
        for name in leftovers_stop():
            self.stderr.write(f"stopped a {name} left behind by an earlier make dev")
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, interrupt)
        if not port_free(port):
            taken, port = port, free_port()
            self.stderr.write(f"port {taken} is taken; web uses {port}")
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        PID_FILE.write_text(str(os.getpid()))
        stack: dict[str, Managed] = {}
        try:
            self._run(stack, port)
        except KeyboardInterrupt:
            pass
        finally:
            self.stderr.write("stopping web, worker and beat …")
            stop_all(stack.values())
            for name in stack:
                pid_file(name).unlink(missing_ok=True)
            PID_FILE.unlink(missing_ok=True)

    def _run(self, stack: dict[str, Managed], port: int) -> None:
        env = dict(os.environ)  # manage.py exported this checkout's DATABASE_URL and REDIS_URL
        Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)  # WhiteNoise warns when it is missing
        for name, command in commands(port).items():
            log_mark(LOG_DIR / f"{name}.log", "make dev starts it")
            stack[name] = Managed(command, env, LOG_DIR / f"{name}.log", stdout_to_log=True).start()
            pid_file_write(name, stack[name])
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while not web_answers(base) and stack["web"].running() and time.monotonic() < deadline:
            time.sleep(0.3)
        self._greet(base)
        supervisor = Supervisor(processes=stack, restartable=RESTARTABLE, say=self._restart_said,
                                restarted=pid_file_write)
        while not (dead := supervisor.tick()):
            time.sleep(1)
        raise CommandError(f"{', '.join(dead)} exited: see {', '.join(str(LOG_DIR / f'{n}.log') for n in dead)}")

    def _restart_said(self, name: str, line: str) -> None:
        self.stderr.write(line)
        log_mark(LOG_DIR / f"{name}.log", line)

    def _greet(self, base: str) -> None:
        secret, prefix, created = api_key()
        api = f"{base}/api/v1/public/memory/v2"
        lines = [f"API       {api}/  (OpenAPI docs: {api}/docs)",
                 f"admin     {base}/admin/  (a login: .venv/bin/python manage.py createsuperuser)",
                 f"health    {base}/healthz",
                 f"schedules {PeriodicTask.objects.filter(enabled=True).count()} enabled (beat runs them)",
                 f"logs      {LOG_DIR}/{{web,worker,beat}}.log",
                 f"API key   {secret}  (shown this once; kept in {KEY_FILE}, mode 0600)" if created else
                 f"API key   {prefix}… for tenant {TENANT!r}: the secret is in {KEY_FILE}",
                 "Ctrl-C here, or `make dev-stop` from another shell, stops web, worker and beat (and the embedded "
                 "services, unless `manage.py devservers start` keeps them)."]
        self.stdout.write("\n".join(lines))
