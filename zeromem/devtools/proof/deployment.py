"""`manage.py prove deployment`: docker-compose.yml's own commands, in its dependency order, against the embedded
PostgreSQL and Valkey this command runs on (throwaway services on free ports), then checks over HTTP and in the
database.

1. docker-compose.yml is read; the services built from this repository (not the servers, not profile-only ones)
   are put in `depends_on` order, their environment interpolated as compose does from an operator's environment
   (a generated ZEROMEMORY_SECRET_KEY; the quick form asks for one gunicorn worker). Only the service URLs and
   web's port are substituted; the programs come from this virtualenv's PATH.
2. The Dockerfile's ENV and its `collectstatic` line run as the image build runs them (into a temporary
   STATIC_ROOT, with no database).
3. `migrate` runs once on a fresh, empty database and must exit 0; then web, worker and beat start.
4. Checks: the admin login page and every CSS/JS file it links load through gunicorn with the right content type;
   /healthz answers 200; migrate left the beat schedules; beat dispatches (a one-second copy of the access flush,
   seen by its effect: a read access reaches the database, which only the worker's flush writes); a session end
   posted to the API becomes a succeeded ConsolidationRun; /docs and its assets load with no URL off this
   machine; each service's compose healthcheck passes (and, in the full form, fails once the services are down
   and beat's last write is 7 minutes old).
5. Every process is stopped in `finally` (whole process groups), and the report counts any left behind.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import secrets
import shlex
import socket
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import yaml
from django.db import connection
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from consolidation.models import ConsolidationRun, RunStatus, RunTrigger
from consolidation.schedules import SCHEDULES
from zeromem.core import services
from zeromem.devservices import free_port
from zeromem.devtools.proof.processes import ROOT, Managed, current_database_url, run_once, stop_all
from zeromem.models import Memory

Say = Callable[[str], None]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
IMAGE_TARGET = "app"  # the Dockerfile stage compose builds for the app services
COMPOSE_WEB_PORT = 8000
SERVICE_URLS = ("DATABASE_URL", "REDIS_URL")
# What a container has besides compose's environment block: the image's PATH (here: this virtualenv's first), a home,
# a hostname. PYTHONPATH and DJANGO_SETTINGS_MODULE follow this process when it has them (a local settings module).
HOST_VARIABLES = ("HOME", "LANG", "LC_ALL", "TMPDIR")
FOLLOW_THIS_PROCESS = ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")
DOCS_PATH = "/api/v1/public/memory/v2/docs"
API_PATH = "/api/v1/public/memory/v2"
HEARTBEAT = "prove deployment: access flush every second"
HEARTBEAT_TASK = "zeromem.flush_access"
CONTENT_TYPES = {".css": ("text/css",), ".js": ("text/javascript", "application/javascript"),
                 ".png": ("image/png",), ".svg": ("image/svg+xml",)}
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", ""}


class ComposeError(RuntimeError):
    """docker-compose.yml or the Dockerfile says something this proof cannot run (or compose would refuse)."""


@dataclass
class Report:
    services: list[str] = field(default_factory=list)
    collectstatic_ok: bool = False
    migrate_ok: bool = False
    schedules: int = 0
    static_ok: bool = False
    static_assets: int = 0
    health_ok: bool = False
    beat_dispatched: bool = False
    worker_processed: bool = False
    docs_offline: bool = False
    healthchecks: dict[str, bool] = field(default_factory=dict)
    healthchecks_ok: bool = False
    healthchecks_fail_when_down: bool | None = None  # the full form only
    processes_left: int = 0
    seconds: float = 0.0
    failures: int = 0
    notes: list[str] = field(default_factory=list)

    def fail(self, note: str) -> None:
        self.notes.append(note)

    def finish(self, started: float) -> None:
        checks = [self.collectstatic_ok, self.migrate_ok, self.schedules > 0, self.static_ok, self.health_ok,
                  self.beat_dispatched, self.worker_processed, self.docs_offline, self.healthchecks_ok,
                  self.healthchecks_fail_when_down is not False, self.processes_left == 0]
        self.failures = sum(not ok for ok in checks)
        self.seconds = round(time.monotonic() - started, 1)

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


# --- reading docker-compose.yml and the Dockerfile ------------------------------------------------------------------

_VARIABLE = re.compile(r"\$(?:(?P<escaped>\$)|\{(?P<braced>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}|(?P<named>\w+))")


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """Compose's variable substitution: $$, $VAR, ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}."""
    def replace(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name, op, arg = match["braced"] or match["named"], match["op"] or "", match["arg"] or ""
        current = env.get(name)
        missing = current is None or (current == "" and op.startswith(":"))
        if op.endswith("?") and missing:
            raise ComposeError(f"compose refuses to start: {name}: {arg}")
        if op.endswith("-") and missing:
            return arg
        return current or ""

    return _VARIABLE.sub(replace, value)


@dataclass(frozen=True)
class Service:
    name: str
    command: list[str]
    environment: dict[str, str]
    healthcheck: list[str] | None
    healthcheck_timeout: float
    depends_on: tuple[str, ...]
    long_running: bool


def seconds_of(duration: str) -> float:
    """A compose duration ("30s", "1m30s") in seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * units[unit] for n, unit in re.findall(r"([\d.]+)(ms|h|m|s)", duration))


def _healthcheck_args(test: list[str] | str | None, env: Mapping[str, str]) -> list[str] | None:
    if not test or test == ["NONE"]:
        return None
    if isinstance(test, str):
        return ["sh", "-c", interpolate(test, env)]
    kind, *rest = [interpolate(str(part), env) for part in test]
    return ["sh", "-c", rest[0]] if kind == "CMD-SHELL" else rest


def _environment(raw: Mapping[str, Any] | list[str] | None, env: Mapping[str, str]) -> dict[str, str]:
    """The environment block; a variable without a value passes through from `env` only when set there."""
    pairs: dict[str, Any] = dict(raw or {}) if not isinstance(raw, list) else {
        item.partition("=")[0]: item.partition("=")[2] if "=" in item else None for item in raw}
    resolved = {name: interpolate(str(value), env) for name, value in pairs.items() if value is not None}
    resolved.update({name: env[name] for name, value in pairs.items() if value is None and name in env})
    return resolved


def app_services(compose: Mapping[str, Any], env: Mapping[str, str]) -> list[Service]:
    """The services built from this repository, without profile-only ones, in `depends_on` order."""
    raw = {name: spec for name, spec in compose["services"].items() if "build" in spec and not spec.get("profiles")}
    services_ = {}
    for name, spec in raw.items():
        check = spec.get("healthcheck") or {}
        services_[name] = Service(
            name=name, command=[interpolate(str(part), env) for part in spec["command"]],
            environment=_environment(spec.get("environment"), env),
            healthcheck=_healthcheck_args(check.get("test"), env),
            healthcheck_timeout=seconds_of(str(check.get("timeout", "30s"))),
            depends_on=tuple(spec.get("depends_on") or ()),
            long_running=spec.get("restart", "no") != "no")
    return [services_[name] for name in dependency_order({n: s.depends_on for n, s in services_.items()})]


def dependency_order(depends_on: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Every service after what it depends on (among these services), otherwise in file order."""
    ordered: list[str] = []
    while len(ordered) < len(depends_on):
        ready = [name for name, needs in depends_on.items()
                 if name not in ordered and all(n in ordered or n not in depends_on for n in needs)]
        if not ready:
            raise ComposeError(f"depends_on has a cycle among {sorted(set(depends_on) - set(ordered))}")
        ordered.append(ready[0])
    return ordered


@dataclass(frozen=True)
class Image:
    environment: dict[str, str]  # ENV of the stages the app target is built from
    collectstatic_env: dict[str, str]  # the assignments on the collectstatic RUN line
    collectstatic: list[str]


def image_of(dockerfile: str, target: str = IMAGE_TARGET) -> Image:
    """The ENV and the collectstatic line of `target` and the stages it is built FROM."""
    stages: dict[str, tuple[str, list[str]]] = {}
    current: list[str] = []
    for line in dockerfile.replace("\\\n", " ").splitlines():
        words = line.split()
        if words and words[0].upper() == "FROM":
            current = []
            name = words[3] if len(words) >= 4 and words[2].upper() == "AS" else words[1]
            stages[name] = (words[1], current)
        elif words and not line.lstrip().startswith("#"):
            current.append(line.strip())
    chain: list[list[str]] = []
    name = target
    while name in stages:
        base, lines = stages[name]
        chain.insert(0, lines)
        name = base
    env: dict[str, str] = {}
    collect_env: dict[str, str] = {}
    collect: list[str] = []
    for line in (line for lines in chain for line in lines):
        keyword, _, rest = line.partition(" ")
        if keyword.upper() == "ENV":
            env.update(_assignment(word) for word in shlex.split(rest))
        elif keyword.upper() == "RUN" and "collectstatic" in rest:
            words = shlex.split(rest)
            assignments = list(itertools.takewhile(lambda w: re.match(r"^[A-Z_][A-Z0-9_]*=", w), words))
            collect_env = dict(_assignment(word) for word in assignments)
            collect = words[len(assignments):]
    if not collect:
        raise ComposeError(f"the Dockerfile's {target!r} image runs no collectstatic")
    return Image(env, collect_env, collect)


def _assignment(word: str) -> tuple[str, str]:
    name, _, value = word.partition("=")
    return name, value


# --- the stack --------------------------------------------------------------------------------------------------

@dataclass
class Stack:
    """The app services as compose runs them, and what the checks need to reach them."""

    services: list[Service]
    image: Image
    static_root: Path
    logs: Path
    port: int
    urls: dict[str, str]
    running: dict[str, Managed] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def host(self) -> str:
        """The Host header: the first allowed host web was given (the default compose leaves is localhost)."""
        web = self.service("web")
        return web.environment.get("ZEROMEMORY_ALLOWED_HOSTS", "localhost").split(",")[0].strip().lstrip("*.")

    def service(self, name: str) -> Service:
        return next(s for s in self.services if s.name == name)

    def env(self, service: Service | None = None) -> dict[str, str]:
        """The container's environment: image ENV, then compose's block, then the substituted service URLs."""
        base = {name: os.environ[name] for name in HOST_VARIABLES if name in os.environ}
        base.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
                    HOSTNAME=socket.gethostname())
        image = {**self.image.environment, "ZEROMEMORY_STATIC_ROOT": str(self.static_root)}
        local = {name: os.environ[name] for name in FOLLOW_THIS_PROCESS if name in os.environ}
        return {**base, **image, **local, **(service.environment if service else {}), **self.urls}

    def args(self, service: Service, args: list[str]) -> list[str]:
        """Only web's published port changes: bound on 127.0.0.1 at a free port instead of 8000."""
        if service.name != "web":
            return args
        old, new = f":{COMPOSE_WEB_PORT}", f":{self.port}"
        return [arg.replace("0.0.0.0" + old, "127.0.0.1" + new).replace(old, new) for arg in args]

    def collectstatic(self) -> int | None:
        env = {**self.env(), **self.image.collectstatic_env, "ZEROMEMORY_STATIC_ROOT": str(self.static_root)}
        return run_once(self.image.collectstatic, env, self.logs / "collectstatic.log", timeout=300)

    def run(self, service: Service) -> int | None:
        return run_once(self.args(service, service.command), self.env(service), self.logs / f"{service.name}.log",
                        timeout=600)

    def start(self, service: Service) -> None:
        self.running[service.name] = Managed(self.args(service, service.command), self.env(service),
                                             self.logs / f"{service.name}.log", stdout_to_log=True).start()

    def healthcheck(self, service: Service) -> bool:
        if service.healthcheck is None:
            return False
        status = run_once(self.args(service, service.healthcheck), self.env(service),
                          self.logs / f"{service.name}-healthcheck.log", timeout=service.healthcheck_timeout + 5)
        return status == 0

    def alive(self, name: str) -> bool:
        return self.running[name].running()

    def stop(self) -> int:
        """Stop every service (whole process groups); returns how many groups still have a process after it."""
        stop_all(self.running.values())
        return sum(_group_alive(m.pid) for m in self.running.values() if m.pid is not None)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def fresh_database() -> Iterator[str]:
    """A new, empty database on the server this process uses; the ORM points at it inside the block. Its URL."""
    name = f"deployment_{uuid.uuid4().hex[:8]}"
    original = connection.settings_dict["NAME"]
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    connection.close()
    connection.settings_dict["NAME"] = name
    try:
        yield current_database_url()
    finally:
        connection.close()
        connection.settings_dict["NAME"] = original
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --- checks -----------------------------------------------------------------------------------------------------

class _Links(HTMLParser):
    """Every src/href of a page, and the text of its scripts (where a CDN URL may be built)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.script_text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_script = tag == "script"
        self.urls += [value for name, value in attrs if name in {"src", "href"} and value]

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.script_text.append(data)


def page_links(html: str) -> _Links:
    parser = _Links()
    parser.feed(html)
    return parser


def off_machine(html: str) -> list[str]:
    """URLs in a page (attributes and script text) whose host is not this machine: a CDN, a font service."""
    links = page_links(html)
    candidates = links.urls + re.findall(r"https?://[^\s\"'<>)]+", " ".join(links.script_text))
    return [url for url in candidates if (urlsplit(url).hostname or "") not in LOCAL_HOSTS]


def asset_ok(client: httpx.Client, url: str, report: Report) -> bool:
    """The asset answers 200 with the content type its extension calls for."""
    response = client.get(url)
    expected = CONTENT_TYPES.get(Path(urlsplit(url).path).suffix, ())
    content_type = response.headers.get("content-type", "")
    ok = response.status_code == 200 and (not expected or content_type.startswith(expected))
    if not ok:
        report.fail(f"{url}: {response.status_code} {content_type!r}")
    return ok


def check_static(client: httpx.Client, report: Report) -> None:
    page = client.get("/admin/login/")
    if page.status_code != 200 or 'name="username"' not in page.text:
        report.fail(f"/admin/login/ answered {page.status_code}")
        return
    assets = sorted({urlsplit(urljoin("/admin/login/", u)).path for u in page_links(page.text).urls
                     if Path(urlsplit(u).path).suffix in {".css", ".js"}} | {"/static/admin/css/base.css"})
    results = [asset_ok(client, url, report) for url in assets]
    report.static_assets = len(results)
    report.static_ok = all(results)


def check_health(client: httpx.Client, report: Report) -> None:
    response = client.get("/healthz")
    report.health_ok = response.status_code == 200 and response.json().get("status") == "ok"
    if not report.health_ok:
        report.fail(f"/healthz answered {response.status_code}: {' '.join(response.text.split())[:200]}")


def check_docs(client: httpx.Client, report: Report) -> None:
    page = client.get(DOCS_PATH)
    if page.status_code != 200:
        report.fail(f"{DOCS_PATH} answered {page.status_code}")
        return
    outside = off_machine(page.text)
    for url in outside:
        report.fail(f"/docs loads {url} from off this machine")
    local = [urljoin(DOCS_PATH, u) for u in page_links(page.text).urls
             if u not in outside and urlsplit(u).scheme in {"", "http", "https"} and urlsplit(u).path]
    schema = client.get(f"{API_PATH}/openapi.json")
    schema_ok = schema.status_code == 200 and schema.headers.get("content-type", "").startswith("application/json")
    if not schema_ok:
        report.fail(f"openapi.json answered {schema.status_code}")
    report.docs_offline = not outside and bool(local) and all([asset_ok(client, u, report) for u in local]) \
        and schema_ok


def wait_for(condition: Callable[[], bool], *, seconds: float, every: float = 0.5) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return condition()


def heartbeat_schedule() -> None:
    """A one-second copy of the access flush: beat dispatches it at once instead of at the next minute."""
    every_second, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.update_or_create(name=HEARTBEAT, defaults={"task": HEARTBEAT_TASK, "interval": every_second,
                                                                     "crontab": None, "enabled": True})


def check_beat(client: httpx.Client, stack: Stack, report: Report, *, seconds: float) -> None:
    """A read access is buffered in Redis; only the flush task, which only beat sends, moves it into the row."""
    stored = client.post("/memories", json={"memories": [
        {"content": "The deployment proof reads this memory once.", "user_id": "beat-probe"}]})
    memory_id = stored.json()["ids"][0]
    client.get(f"/memories/{memory_id}").raise_for_status()
    report.beat_dispatched = wait_for(
        lambda: Memory.objects.filter(id=memory_id, access_count__gte=1).exists() or not stack.alive("beat"),
        seconds=seconds) and stack.alive("beat")
    if not report.beat_dispatched:
        report.fail(f"no flush dispatched by beat reached the database within {seconds:.0f} s (see beat.log)")


def check_session_end(client: httpx.Client, tenant_id: int, report: Report, *, seconds: float) -> None:
    """A session end posted to the API, processed by the worker to a succeeded ConsolidationRun."""
    turns = ["Ada moved to Lisbon in March.", "Ada lives in Lisbon now.", "Ada's new home is in Lisbon.",
             "Ada prefers tea to coffee."]
    client.post("/memories", json={"memories": [
        {"content": text, "user_id": "ada", "session_id": "s1"} for text in turns]}).raise_for_status()
    ended = client.post("/sessions/s1/end", json={"user_id": "ada"})
    if ended.status_code != 202 or not ended.json().get("queued"):
        report.fail(f"session end answered {ended.status_code}: {ended.text[:200]}")
        return
    runs = ConsolidationRun.objects.filter(tenant_id=tenant_id, user_id="ada", trigger=RunTrigger.SESSION_END)
    done = {RunStatus.SUCCEEDED, RunStatus.FAILED}
    wait_for(lambda: runs.filter(status__in=done).exists(), seconds=seconds)
    statuses = sorted(runs.values_list("status", flat=True))
    report.worker_processed = RunStatus.SUCCEEDED in statuses
    if not report.worker_processed:
        report.fail(f"session end: runs {statuses or 'none'} after {seconds:.0f} s (see worker.log)")


def in_parallel(names: list[str], probe: Callable[[str], bool]) -> dict[str, bool]:
    results: dict[str, bool] = {}
    threads = [threading.Thread(target=lambda n=name: results.__setitem__(n, probe(n))) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {name: results.get(name, False) for name in names}


def check_healthchecks(stack: Stack, names: list[str], *, seconds: float) -> dict[str, bool]:
    """Each service's own compose healthcheck, retried for up to `seconds` (compose's start period), in parallel."""
    return in_parallel(names, lambda name: wait_for(lambda: stack.healthcheck(stack.service(name)), seconds=seconds,
                                                    every=2))


def healthchecks_when_down(stack: Stack, names: list[str]) -> dict[str, bool]:
    """Stop the services and age beat's writes by 7 minutes (what the database shows that long after beat died):
    every healthcheck must now fail."""
    stop_all(stack.running.values())
    PeriodicTask.objects.update(last_run_at=timezone.now() - timedelta(minutes=7))
    return in_parallel(names, lambda name: stack.healthcheck(stack.service(name)))


# --- the proof --------------------------------------------------------------------------------------------------

def prove_deployment(*, quick: bool, logs: Path, say: Say) -> Report:
    """docker-compose.yml's services on a fresh database and the embedded broker; see the module docstring."""
    started = time.monotonic()
    report = Report()
    logs.mkdir(parents=True, exist_ok=True)
    for old in logs.glob("*.log"):
        old.unlink()
    operator_env = {"ZEROMEMORY_SECRET_KEY": secrets.token_urlsafe(48), **({"WEB_CONCURRENCY": "1"} if quick else {})}
    compose = yaml.safe_load(COMPOSE_FILE.read_text())
    services_ = app_services(compose, operator_env)
    report.services = [s.name for s in services_]
    say(f"compose services in dependency order: {', '.join(report.services)}")
    with tempfile.TemporaryDirectory(prefix="zm-static-") as static_root, fresh_database() as database_url:
        stack = Stack(services=services_, image=image_of(DOCKERFILE.read_text()), static_root=Path(static_root),
                      logs=logs, port=free_port(),
                      urls={"DATABASE_URL": database_url, "REDIS_URL": os.environ["REDIS_URL"]})
        try:
            _prove(stack, report, quick=quick, say=say)
        except Exception as exc:  # a check that could not even run is a failure to report, with its traceback
            say(traceback.format_exc())
            report.fail(f"the proof stopped: {exc!r}")
        finally:
            report.processes_left = stack.stop()
            say(f"stopped every service; process groups left: {report.processes_left}")
    report.finish(started)
    return report


def _prove(stack: Stack, report: Report, *, quick: bool, say: Say) -> None:
    report.collectstatic_ok = stack.collectstatic() == 0 and (stack.static_root / "admin/css/base.css").exists()
    say(f"collectstatic as the Dockerfile runs it: {'ok' if report.collectstatic_ok else 'FAILED'}")
    for service in stack.services:
        if service.long_running:
            stack.start(service)
            say(f"started {service.name}: {' '.join(stack.args(service, service.command))}")
            continue
        status = stack.run(service)
        report.migrate_ok = report.migrate_ok or (service.name == "migrate" and status == 0)
        say(f"ran {service.name} to completion: exit status {status}")
        if status != 0:
            report.fail(f"{service.name} exited with {status} (see {stack.logs / service.name}.log)")
            return
    report.schedules = PeriodicTask.objects.filter(name__in=[s.name for s in SCHEDULES]).count()
    heartbeat_schedule()
    client = httpx.Client(base_url=stack.base, headers={"Host": stack.host}, trust_env=False, timeout=60)
    with client:
        if not wait_for(lambda: _answers(client) or not stack.alive("web"), seconds=90) or not stack.alive("web"):
            report.fail("gunicorn did not answer (see web.log)")
            return
        check_static(client, report)
        check_health(client, report)
        check_docs(client, report)
        say(f"static {report.static_ok} ({report.static_assets} files), /healthz {report.health_ok}, "
            f"/docs offline {report.docs_offline}")
        tenant = services.tenant_get_or_create(name="prove-deployment")
        _, secret = services.apikey_create(tenant=tenant, name="prove deployment")
        client.headers["Authorization"] = f"Bearer {secret}"
        client.base_url = httpx.URL(stack.base + API_PATH)
        check_beat(client, stack, report, seconds=60)
        say(f"beat dispatched and the worker flushed: {report.beat_dispatched}")
        check_session_end(client, tenant.id, report, seconds=90 if quick else 180)
        say(f"session end processed by the worker: {report.worker_processed}")
    long_running = [s.name for s in stack.services if s.long_running and s.healthcheck]
    report.healthchecks = check_healthchecks(stack, long_running, seconds=30 if quick else 90)
    report.healthchecks_ok = len(report.healthchecks) >= 3 and all(report.healthchecks.values())
    say(f"compose healthchecks: {report.healthchecks}")
    if not quick:
        down = healthchecks_when_down(stack, long_running)
        report.healthchecks_fail_when_down = not any(down.values())
        say(f"healthchecks with the services down (all must fail): {down}")
    for name, ok in report.healthchecks.items():
        if not ok:
            report.fail(f"the {name} healthcheck failed (see {name}-healthcheck.log)")


def _answers(client: httpx.Client) -> bool:
    try:
        client.get("/healthz")
    except httpx.TransportError:
        return False
    return True
