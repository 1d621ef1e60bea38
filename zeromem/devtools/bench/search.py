"""`manage.py bench search`: what one search costs and how long agents wait for it, through the real HTTP API:
gunicorn as deployed (gthread workers), the bench's own PostgreSQL and Valkey, and for the figure under load a Celery
worker started as `make dev` and docker-compose.yml start it, working on another user's clustering run.

CPU is read from the processes (/proc: utime + stime, exited children included) of every process a search uses:
the web server's tree, PostgreSQL's (its backends), the broker. Statements are counted by PostgreSQL itself for the
web's connections (their application_name), so authentication, BEGIN/COMMIT and the connection health check count.
Latencies are wall time from each request's scheduled slot (open-loop arrivals): they need an idle machine.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings

from consolidation.models import ConsolidationRun, RunStatus
from zeromem.core import services
from zeromem.core.events import redis_client
from zeromem.devservices import free_port
from zeromem.devtools.bench.costs import postmaster_pid, statements_logged, tree_cpu_s
from zeromem.devtools.bench.openloop import Arrival, closed_loop, open_loop, percentile_ms
from zeromem.devtools.bench.searchdata import CLUSTERING, LARGE, THREE_K, BenchData, Sizes, bench_data
from zeromem.devtools.management.commands.dev import commands as dev_commands
from zeromem.devtools.proof.processes import Managed, child_env, gunicorn

WEB_APP = "zeromem-bench-web"  # application_name of the web's database connections (libpq's PGAPPNAME)
API = "/api/v1/public/memory/v2"
RATE_3K, RATE_LARGE = 25.0, 5.0  # searches per second, open loop
WEB_WORKERS, WEB_THREADS = 2, 4
WARM_BURSTS, WARM_BURST = 3, 12  # concurrent requests on fresh connections, so every web worker loads its model
TARGETS = {"cpu_ms_per_search_3k": 25, "statements_per_search": 3, "p99_ms_3k_during_clustering": 50,
           "p99_ms_100k": 100}
WORKER = dev_commands(0)["worker"]  # the command line `make dev` and docker-compose.yml run
NOTE = ("wall figures (p50/p99) need an otherwise idle machine; CPU figures are read from the processes and "
        "statements from PostgreSQL, so they hold on a busy one")


@dataclass(frozen=True)
class Plan:
    sizes: Sizes
    cpu_searches: int  # sequential, distinct queries
    repeated_searches: int  # sequential, one query: what a cache hit costs
    statement_searches: int
    idle_seconds: float  # 25/s, the 3,000-memory user, no job
    large_seconds: float  # 5/s, the large user, no job
    clustering_seconds: float  # 25/s at most this long, counted while the clustering run works


FULL = Plan(Sizes(memories_3k=3000, large=100_000, small_users=1000, small_user_memories=10, clustering=10_000),
            cpu_searches=200, repeated_searches=100, statement_searches=50, idle_seconds=10, large_seconds=60,
            clustering_seconds=40)
QUICK = Plan(Sizes(memories_3k=300, large=10_000, small_users=100, small_user_memories=10, clustering=1500),
             cpu_searches=20, repeated_searches=10, statement_searches=10, idle_seconds=2, large_seconds=3,
             clustering_seconds=4)


@dataclass(frozen=True)
class Stack:
    """The running web server and the processes whose CPU a search uses."""
    base: str
    secret: str
    web: int  # gunicorn's master: its tree holds the workers
    postgres: int  # the postmaster: its tree holds every backend
    broker: int

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secret}"}

    def url(self, path: str) -> str:
        return f"{self.base}{API}{path}"

    def cpu(self) -> dict[str, float]:
        return {"web": tree_cpu_s(self.web), "postgres": tree_cpu_s(self.postgres), "broker": tree_cpu_s(self.broker)}


def bench_search(*, plan: Plan, say: Callable[[str], None]) -> dict[str, Any]:
    load_start = os.getloadavg()
    tenant = services.tenant_get_or_create(name="bench-search")
    started = time.perf_counter()
    data = bench_data(tenant_id=tenant.id, sizes=plan.sizes, say=say)
    say(f"data built in {time.perf_counter() - started:.0f} s")
    _, secret = services.apikey_create(tenant=tenant, name="bench search")
    logs = Path(tempfile.mkdtemp(prefix="zm-bench-search-"))  # the servers' logs, kept when something fails
    try:
        with web_server(secret, logs) as stack:
            figures = measures(stack, data, plan, logs, say)
    except BaseException:
        say(f"the web server's and the worker's logs are kept in {logs}")
        raise
    if any(isinstance(f, dict) and f.get("errors") for f in figures.values()):
        say(f"some searches failed: the web server's and the worker's logs are kept in {logs}")
    else:
        shutil.rmtree(logs, ignore_errors=True)
    return {**headline(figures), **figures, "targets": TARGETS, "data": data.source, "sizes": asdict(plan.sizes),
            "web": f"gunicorn gthread, {WEB_WORKERS} workers x {WEB_THREADS} threads",
            "worker": f"{' '.join(WORKER[2:])} (as make dev), nice {settings.ZEROMEMORY_WORKER_NICE}",
            "machine": {"cores": os.cpu_count(), "load_average_start": [round(x, 2) for x in load_start],
                        "load_average_end": [round(x, 2) for x in os.getloadavg()]},
            "note": NOTE}


def headline(figures: dict[str, Any]) -> dict[str, Any]:
    return {"cpu_ms_per_search_3k": figures["cpu_3k"]["total"],
            "statements_per_search": figures["statements"]["per_search"],
            "p99_ms_3k_during_clustering": figures["wall_3k_during_clustering"]["p99_ms"],
            "p99_ms_100k": figures["wall_large"]["p99_ms"]}


def measures(stack: Stack, data: BenchData, plan: Plan, logs: Path, say: Callable[[str], None]) -> dict[str, Any]:
    """1. warm every web worker (its model, its key cache, its connections); 2. CPU per search, distinct queries,
    then one query repeated; 3. statements per search; 4. idle latency at 25/s; 5. the large user at 5/s; 6. latency
    at 25/s while a worker runs another user's clustering."""
    q3k = data.queries_3k
    warm_up(stack, [search(q, THREE_K) for q in q3k.take(WARM_BURSTS * WARM_BURST)])
    with httpx.Client(headers=stack.headers, timeout=60, trust_env=False) as client:
        cpu_3k = cpu_per_search(stack, client, [search(q, THREE_K) for q in q3k.take(plan.cpu_searches)])
        say(f"CPU per search, distinct queries: {cpu_3k}")
        repeated = q3k.take(1) * (plan.repeated_searches + 1)
        cpu_repeated = cpu_per_search(stack, client, [search(q, THREE_K) for q in repeated], unmeasured=1)
        say(f"CPU per search, one query repeated: {cpu_repeated}")
        statements = statements_per_search(stack, client, [search(q, THREE_K) for q in
                                                           q3k.take(plan.statement_searches + 3)])
        say(f"statements per search: {statements}")
    idle = no_job(stack, [search(q, THREE_K) for q in q3k.take(int(RATE_3K * plan.idle_seconds))], RATE_3K)
    say(f"3k user at {RATE_3K:.0f}/s, no job: {idle}")
    large_queries = data.queries_large
    warm_up(stack, [search(q, LARGE) for q in large_queries.take(WARM_BURST)])
    large = no_job(stack, [search(q, LARGE) for q in large_queries.take(int(RATE_LARGE * plan.large_seconds))],
                   RATE_LARGE)
    say(f"{plan.sizes.large:,}-memory user at {RATE_LARGE:.0f}/s, no job: {large}")
    during = during_clustering(stack, [search(q, THREE_K) for q in q3k.take(int(RATE_3K * plan.clustering_seconds))],
                               logs, say)
    say(f"3k user at {RATE_3K:.0f}/s while a clustering run works: {during}")
    return {"cpu_3k": cpu_3k, "cpu_3k_repeated_query": cpu_repeated, "statements": statements,
            "wall_3k_idle": idle, "wall_large": large, "wall_3k_during_clustering": during}


def search(query: str, user_id: str) -> dict[str, Any]:
    return {"query": query, "user_id": user_id, "top_k": 10}


@contextmanager
def web_server(secret: str, logs: Path) -> Iterator[Stack]:
    """gunicorn as deployed, its database connections named WEB_APP, the rate limit out of reach (its Redis round
    trip still happens on every request)."""
    port = free_port()
    env = child_env(PGAPPNAME=WEB_APP, ZEROMEMORY_RATE_LIMIT_REQUESTS="10000000")
    server = gunicorn(env, logs / "gunicorn.log", port=port, workers=WEB_WORKERS, threads=WEB_THREADS).start()
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_answering(base, server)
        yield Stack(base=base, secret=secret, web=server.pid or 0, postgres=postmaster_pid(), broker=broker_pid())
    finally:
        server.stop()


def broker_pid() -> int:
    pid = int(redis_client().info("server")["process_id"])
    if not os.path.exists(f"/proc/{pid}"):
        raise RuntimeError("the broker is not a process of this machine: CPU is read from /proc, so run the bench on "
                           "its embedded services (no REDIS_URL)")
    return pid


def _wait_answering(base: str, server: Managed, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and server.running():
        try:
            if httpx.get(f"{base}/healthz", timeout=5, trust_env=False).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"gunicorn did not answer at {base}: see {server.log}")


def warm_up(stack: Stack, bodies: list[dict[str, Any]]) -> None:
    """Bursts of concurrent searches on fresh connections: each web worker loads its embedding model, opens its
    database connections and caches the key before anything is measured."""
    for start in range(0, len(bodies), WARM_BURST):
        arrivals = open_loop(url=stack.url("/search"), headers=stack.headers, bodies=bodies[start:start + WARM_BURST],
                             rate=1000)
        if not all(a.ok for a in arrivals):
            raise RuntimeError("a warm-up search failed: see the gunicorn log")


def cpu_per_search(stack: Stack, client: httpx.Client, bodies: list[dict[str, Any]], *,
                   unmeasured: int = 0) -> dict[str, float]:
    """Milliseconds of CPU per search of each process tree, from readings before and after sequential searches
    (after the first `unmeasured`: the query a cache should answer, asked once)."""
    closed_loop(client, url=stack.url("/search"), bodies=bodies[:unmeasured])
    bodies = bodies[unmeasured:]
    before, started = stack.cpu(), time.perf_counter()
    closed_loop(client, url=stack.url("/search"), bodies=bodies)
    wall_s, after = time.perf_counter() - started, stack.cpu()
    parts = {name: (after[name] - before[name]) * 1000 / len(bodies) for name in before}
    return {"total": round(sum(parts.values()), 1), **{k: round(v, 1) for k, v in parts.items()},
            "wall_ms": round(wall_s * 1000 / len(bodies), 1), "searches": len(bodies)}


def statements_per_search(stack: Stack, client: httpx.Client, bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """SQL statements PostgreSQL executed for the web per search; the first three searches warm the key cache of
    the worker this connection reaches and are not counted."""
    closed_loop(client, url=stack.url("/search"), bodies=bodies[:3])
    counted_bodies = bodies[3:]
    with statements_logged(application_name=WEB_APP) as statements:
        closed_loop(client, url=stack.url("/search"), bodies=counted_bodies)
    n = len(counted_bodies)
    return {"per_search": round(statements.total / n, 2), "searches": n,
            "by_kind": {kind: round(count / n, 2) for kind, count in sorted(statements.by_kind.items())}}


def no_job(stack: Stack, bodies: list[dict[str, Any]], rate: float) -> dict[str, Any]:
    """Open-loop latency, and the CPU per search of every process meanwhile (nothing else works on them)."""
    before = stack.cpu()
    arrivals = open_loop(url=stack.url("/search"), headers=stack.headers, bodies=bodies, rate=rate)
    after = stack.cpu()
    parts = {name: round((after[name] - before[name]) * 1000 / len(arrivals), 1) for name in before}
    return {**wall(arrivals), "cpu_ms_per_search": round(sum(parts.values()), 1), "cpu_parts": parts}


def wall(arrivals: list[Arrival]) -> dict[str, Any]:
    latencies = [a.latency_s for a in arrivals]
    return {"p50_ms": percentile_ms(latencies, 50), "p99_ms": percentile_ms(latencies, 99),
            "max_ms": percentile_ms(latencies, 100), "requests": len(arrivals),
            "errors": sum(1 for a in arrivals if not a.ok)}


def during_clustering(stack: Stack, bodies: list[dict[str, Any]], logs: Path,
                      say: Callable[[str], None]) -> dict[str, Any]:
    """A worker as deployed (its default priority); the clustering user's session ended through the API, which
    queues a forced clustering run; open-loop searches once it runs. Only the searches scheduled while it ran
    count (the run may end first); the worker is then killed, the database being thrown away."""
    worker = Managed(WORKER, child_env(), logs / "worker.log").start()
    try:
        answer = httpx.post(stack.url("/sessions/bench-end/end"), json={"user_id": CLUSTERING},
                            headers=stack.headers, timeout=60, trust_env=False)
        answer.raise_for_status()
        run_id = answer.json()["run_ids"][0]
        say("waiting for the worker to start the clustering run")
        _wait_started(run_id, worker)
        arrivals = open_loop(url=stack.url("/search"), headers=stack.headers, bodies=bodies, rate=RATE_3K)
        run = ConsolidationRun.objects.get(id=run_id)
    finally:
        worker.kill9()
    start = run.started_at.timestamp() if run.started_at else float("inf")
    end = run.finished_at.timestamp() if run.finished_at else float("inf")
    during = [a for a in arrivals if start <= a.scheduled_at <= end]
    window = (arrivals[-1].scheduled_at - arrivals[0].scheduled_at) if arrivals else 0.0
    return {**wall(during), "window_s": round(window, 1),
            "run_working_s": round(min(end, arrivals[-1].scheduled_at) - max(start, arrivals[0].scheduled_at), 1)
            if during else 0.0, "run_status_after": run.status}


def _wait_started(run_id: str, worker: Managed, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ConsolidationRun.objects.filter(id=run_id).exclude(status=RunStatus.PENDING).exists():
            return
        if not worker.running():
            raise RuntimeError(f"the worker exited: see {worker.log}")
        time.sleep(0.2)
    raise RuntimeError(f"the worker did not start the clustering run in {seconds:.0f} s: see {worker.log}")
