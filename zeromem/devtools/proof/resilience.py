"""`manage.py prove resilience`: crashes, overlapping triggers, faults and load, against real processes.

1. Crash rounds: a prefork Celery worker (its own process group) is killed -9 at a random moment of a clustering
   or a reflection run, restarted, and the redelivered task (short visibility timeout, short run lease) finishes
   the run. After every round: ingested = active + consolidated + archived + deleted, every consolidated memory is
   cited by a semantic memory, nothing was written twice, no run is left unfinished.
2. Overlap: beat, the admin action, the API and the CLI trigger the same user (clustering) and the same entity
   (reflection) at the same moment: exactly one run does the work.
3. Faults: database connections terminated mid-run, the broker restarted mid-run, the LLM slow past the
   timeout, answering 5xx, answering garbage, the embedder raising. Each ends in a retry or a clean run outcome,
   with the invariants above intact (never a partial write).
4. Load: concurrent ingest and search clients against gunicorn while a clustering run is in progress;
   throughput, p50/p99 latency and errors.
5. Churn: many clients adding, correcting, deleting and searching the memories of the same few users at once
   (gunicorn); no error, no 5xx, every acknowledged write readable afterwards and every acknowledged delete
   gone, the BM25 counters equal to a recount, no caller key held by two memories.
6. Service restarts, with two worker processes and beat on the deployment's own heartbeat and visibility timeout:
   PostgreSQL, then the broker, restarted while a run works; every run finished within 2 minutes of the service
   returning, the invariants above intact. Dead workers: a worker killed -9 mid-run stays dead, and the other
   finishes its run (found by the heartbeat sweep, not by a redelivery).
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings
from django.db import connection, connections
from django.test import override_settings
from django.utils import timezone

from consolidation.models import ACTIVE_STATUSES, ConsolidationRun, LedgerEntry, RunKind
from consolidation.selectors import ReflectionScope
from consolidation.tasks import clustering_fan_out_task, reflection_user_task
from consolidation.triggers import clustering_trigger, reflection_trigger
from zeromem.core import services
from zeromem.devservices import free_port
from zeromem.devtools.bench.reflection import entity_texts
from zeromem.devtools.fake_llm import FakeLLM, Reply
from zeromem.devtools.proof.processes import (
    Managed,
    broker_restart,
    celery_beat,
    celery_worker,
    child_env,
    database_restart,
    gunicorn,
)
from zeromem.models import Memory, MemorySource, Tenant

Say = Callable[[str], None]
EPISODES = ("episodic", "working")
WAIT = 180.0  # seconds a round may take to settle before its run counts as unfinished
# The worker writes a clustering run's merges this many a transaction, so a crash round's 60 merges take 15 chunks
# and its kill lands between them (production writes 250 a transaction).
WRITE_CHUNK = 4


@dataclass
class Report:
    crash_rounds: int = 0
    killed_mid_run: int = 0
    lost: int = 0
    duplicated: int = 0
    unfinished_runs: int = 0
    overlap_extra_runs: int = 0  # runs that redid another run's work, or ran at the same time as one
    overlap_rounds: int = 0
    overlap_working_runs: int = 0  # runs that did some work: a later one may take what an earlier one left
    fault_cases: int = 0
    fault_failures: int = 0
    load_requests: int = 0
    load_errors: int = 0
    load_p50_ms: float = 0.0
    load_p99_ms: float = 0.0
    load_search_p50_ms: float = 0.0
    load_search_p99_ms: float = 0.0
    load_ingest_p99_ms: float = 0.0
    load_requests_per_s: float = 0.0
    load_during_clustering_share: float = 0.0
    baseline_search_p50_ms: float = 0.0  # the same clients with no job running, for comparison
    baseline_search_p99_ms: float = 0.0
    churn_requests: int = 0
    churn_errors: int = 0  # answers other than the operation's expected ones (5xx included), and transport errors
    churn_5xx: int = 0
    churn_unreadable: int = 0  # acknowledged writes not found afterwards as acknowledged (lost or stale)
    churn_undeleted: int = 0  # acknowledged deletes still there afterwards
    churn_stats_drift: int = 0  # BM25 counters (terms, document totals) different from a recount
    churn_counter_rows_per_term: float = 0.0  # delta rows search sums per term afterwards (folding keeps it ~1)
    churn_retries: int = 0  # writes the server ran again after losing to a concurrent one (its log's warnings)
    churn_seconds: float = 0.0
    churn_requests_per_s: float = 0.0
    churn_p99_ms: float = 0.0
    duplicate_keys: int = 0  # memories beyond the first holding one caller key (LangGraph store marker) in a scope
    # 6. service restarts and dead workers (their lost / duplicated / unfinished count in the totals above)
    pg_restart_rounds: int = 0
    broker_restart_rounds: int = 0
    restart_late_runs: int = 0  # runs not finished within RESTART_FINISH_S of the service returning
    restart_finish_max_s: float = 0.0
    dead_worker_rounds: int = 0
    dead_worker_recovery_s: float = 0.0  # the slowest round: from the kill until the other worker finished the run
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


# --- the world -------------------------------------------------------------------------------------------------

@dataclass
class Rig:
    """The worker (restartable), the fake LLM and where logs go."""

    tenant: Tenant
    llm: FakeLLM
    logs: Path
    worker: Managed | None = None
    worker_env: dict[str, str] = field(default_factory=dict)
    timings: list[float] = field(default_factory=list)  # seconds from a kill until the run settled

    def start_worker(self, **extra: str) -> None:
        self.worker = celery_worker({**self.worker_env, **extra}, self.logs / "worker.log").start()

    def restart_worker(self, **extra: str) -> None:
        if self.worker is not None:
            self.worker.stop()
        self.start_worker(**extra)


@contextmanager
def rig(logs: Path) -> Iterator[Rig]:
    with FakeLLM() as llm:
        tenant = services.tenant_get_or_create(name=f"prove-resilience-{uuid.uuid4().hex[:6]}")
        env = child_env(ZEROMEMORY_EMBEDDING_MODEL="builtin:hash", ZEROMEMORY_VISIBILITY_TIMEOUT="10",
                        ZEROMEMORY_BROKER_RESTORE_SECONDS="2",
                        ZEROMEMORY_RUN_HEARTBEAT_SECONDS="1", ZEROMEMORY_RUN_STALE_SECONDS="4",
                        ZEROMEMORY_REFLECTION_MODEL="openai/fake-reflector",
                        ZEROMEMORY_LLM_API_BASE=llm.api_base, ZEROMEMORY_LLM_API_KEY="sk-proof",
                        ZEROMEMORY_LLM_CONCURRENCY="1", ZEROMEMORY_LLM_TIMEOUT_SECONDS="2",
                        ZEROMEMORY_LLM_ATTEMPTS="2", ZEROMEMORY_LLM_BACKOFF_SECONDS="0.1",
                        ZEROMEMORY_LLM_RETRY_SECONDS="1", ZEROMEMORY_RATE_LIMIT_REQUESTS="0",
                        ZEROMEMORY_CLUSTERING_WRITE_CHUNK=str(WRITE_CHUNK))
        state = Rig(tenant=tenant, llm=llm, logs=logs, worker_env=env)
        state.start_worker()
        try:
            yield state
        finally:
            if state.worker is not None:
                state.worker.stop()


def ingest_clusterable(tenant: Tenant, user: str, *, groups: int) -> int:
    """groups × 4 episodes sharing two entities per group (they cluster), three days old, one session each."""
    old = timezone.now() - timedelta(days=3)
    items = [services.MemoryInput(content=f"Incident {g}.{i}: the svc-{user[-6:]}-{g} queue on host-{g} was slow "
                                          f"({17 * g + i} ms).", user_id=user, session_id=f"s{g}-{i}",
                                  entities=[f"svc-{g}", f"host-{g}"], created_at=old + timedelta(minutes=g * 4 + i))
             for g in range(groups) for i in range(4)]
    items.append(services.MemoryInput(content="current session", user_id=user, session_id="now"))
    services.memories_import(tenant_id=tenant.id, batches=[items])
    return len(items)


def ingest_entity(tenant: Tenant, user: str, *, n: int) -> int:

    old = timezone.now() - timedelta(days=n + 3)
    texts = entity_texts("Dana", n, random.Random(user))
    items = [services.MemoryInput(content=text, user_id=user, entity_id="dana", session_id=f"s{i}",
                                  created_at=old + timedelta(days=i)) for i, text in enumerate(texts)]
    items.append(services.MemoryInput(content="current session", user_id=user, session_id="now"))
    services.memories_import(tenant_id=tenant.id, batches=[items])
    return len(items)


# --- invariants ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Check:
    user: str
    lost: int
    duplicated: int
    unfinished: int

    @property
    def ok(self) -> bool:
        return self.lost == self.duplicated == self.unfinished == 0


def check_user(tenant: Tenant, user: str, ingested: int) -> Check:
    episodes = Memory.objects.filter(tenant=tenant, user_id=user, memory_type__in=EPISODES)
    deleted = _deleted(tenant, user)
    uncited = episodes.filter(state="consolidated").exclude(cited_by_links__isnull=False).count()
    lost = abs(ingested - episodes.count() - deleted) + uncited
    return Check(user=user, lost=lost, duplicated=_duplicated(tenant, user),
                 unfinished=ConsolidationRun.objects.filter(tenant=tenant, user_id=user,
                                                            status__in=ACTIVE_STATUSES).count())


def _deleted(tenant: Tenant, user: str) -> int:

    return sum(len(row.memory_ids) for row in LedgerEntry.objects.filter(tenant=tenant, user_id=user,
                                                                         action="delete"))


def duplicates(tenant: Tenant, user: str) -> list[str]:
    """What `_duplicated` counts, spelled out (for the report)."""
    semantic = list(Memory.objects.filter(tenant=tenant, user_id=user, memory_type="semantic", state="raw")
                    .values_list("content_hash", "tags", "content"))
    seen: dict[tuple[str, tuple[str, ...]], str] = {}
    found = []
    for content_hash, tags, content in semantic:
        if (content_hash, tuple(tags)) in seen:
            found.append(f"semantic memory written twice: {tags} {content[:80]!r}")
        seen[(content_hash, tuple(tags))] = content
    return found


def _duplicated(tenant: Tenant, user: str) -> int:
    """Episodes folded twice (two merges, or two digests citing them) and semantic memories written twice."""
    links = MemorySource.objects.filter(source__tenant=tenant, source__user_id=user, memory__state="raw")
    merges: dict[uuid.UUID, int] = {}
    digests: dict[uuid.UUID, int] = {}
    for source_id, tags in links.values_list("source_memory_id", "memory__tags"):
        if "digest" in tags:
            digests[source_id] = digests.get(source_id, 0) + 1
        elif "reflection" not in tags:
            merges[source_id] = merges.get(source_id, 0) + 1
    twice = sum(1 for n in [*merges.values(), *digests.values()] if n > 1)
    semantic = list(Memory.objects.filter(tenant=tenant, user_id=user, memory_type="semantic", state="raw")
                    .values_list("content_hash", "tags"))
    return twice + len(semantic) - len({(h, tuple(t)) for h, t in semantic})


def wait_settled(tenant: Tenant, user: str, seconds: float = WAIT) -> bool:
    """Until the user has no active run (and the triggers had a moment to create theirs)."""
    deadline = time.monotonic() + seconds
    time.sleep(0.5)
    while time.monotonic() < deadline:
        if not ConsolidationRun.objects.filter(tenant=tenant, user_id=user, status__in=ACTIVE_STATUSES).exists():
            return True
        time.sleep(0.3)
    return False


# --- 1. crash rounds -------------------------------------------------------------------------------------------

def crash_round(state: Rig, kind: str, number: int, rng: random.Random) -> tuple[Check, bool]:
    """One round; returns the check and whether the kill landed while the run was running."""

    user = f"crash-{kind}-{number}-{uuid.uuid4().hex[:6]}"
    if kind == "clustering":
        ingested = ingest_clusterable(state.tenant, user, groups=60)
        run_id, _ = clustering_trigger(tenant_id=state.tenant.id, user_id=user, trigger="beat")
    else:
        ingested = ingest_entity(state.tenant, user, n=46)
        state.llm.script = [Reply(delay=0.7)] * 6
        run_id = reflection_trigger(scope=ReflectionScope(state.tenant.id, user, "dana", "global"),
                                    trigger="beat")[0].id
    if kind == "clustering":
        # The run writes its 60 merges in chunks of WRITE_CHUNK: the kill comes once the first chunk committed,
        # while the others are being written.
        first_chunk_written(state.tenant, user)
        time.sleep(rng.uniform(0.0, 0.05))
    else:
        time.sleep(rng.uniform(0.3, 2.8))
    mid_run = ConsolidationRun.objects.filter(id=run_id, status="running").exists()
    assert state.worker is not None
    state.worker.kill9()
    started = time.monotonic()
    state.start_worker()
    wait_settled(state.tenant, user)
    state.timings.append(round(time.monotonic() - started, 1))
    return check_user(state.tenant, user, ingested), mid_run


def first_chunk_written(tenant: Tenant, user: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    consolidated = Memory.objects.filter(tenant=tenant, user_id=user, state="consolidated")
    while not consolidated.exists() and time.monotonic() < deadline:
        time.sleep(0.005)


def crash_rounds(state: Rig, report: Report, rounds: int, say: Say) -> None:
    rng = random.Random(20261122)
    for number in range(rounds):
        for kind in ("clustering", "reflection"):
            check, mid_run = crash_round(state, kind, number, rng)
            report.crash_rounds += 1
            report.killed_mid_run += mid_run
            report.lost += check.lost
            report.duplicated += check.duplicated
            report.unfinished_runs += check.unfinished
            if check.duplicated:
                report.notes += duplicates(state.tenant, check.user)
            say(f"crash round {report.crash_rounds} ({kind}{', killed mid-run' if mid_run else ''}): lost "
                f"{check.lost}, duplicated {check.duplicated}, unfinished {check.unfinished}; settled "
                f"{state.timings[-1]} s after the kill")


# --- 2. overlap ------------------------------------------------------------------------------------------------

def _together(calls: list[Callable[[], Any]]) -> None:
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> None:
        try:
            barrier.wait()
            call()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _admin_client() -> Any:
    from django.contrib.auth.models import User
    from django.test import Client

    user, _ = User.objects.get_or_create(username="prove-resilience-admin",
                                         defaults={"is_staff": True, "is_superuser": True})
    client = Client()
    client.force_login(user)
    return client


def overlap(state: Rig, report: Report, say: Say) -> None:
    """Four triggers at once, for clustering and for reflection; count the runs that did any work."""
    import io

    from django.core.management import call_command
    from django.test import Client


    admin = _admin_client()
    key = services.apikey_create(tenant=state.tenant)[1]
    api = Client()
    headers = {"Authorization": f"Bearer {key}"}
    user = f"overlap-c-{uuid.uuid4().hex[:6]}"
    ingest_clusterable(state.tenant, user, groups=30)
    ids = [str(i) for i in Memory.objects.filter(tenant=state.tenant, user_id=user).values_list("id", flat=True)]
    _together([
        lambda: clustering_fan_out_task.delay(),
        lambda: admin.post("/admin/zeromem/memory/", {"action": "run_clustering_now", "_selected_action": ids[:3]}),
        lambda: api.post("/api/v1/public/memory/v2/sessions/now/end", {"user_id": user},
                         content_type="application/json", headers=headers),
        lambda: call_command("consolidate", "--user", user, "--force", stdout=io.StringIO(), stderr=io.StringIO()),
    ])
    wait_settled(state.tenant, user)
    _overlap_verdict(state.tenant, user, RunKind.CLUSTERING, report, say)

    user = f"overlap-r-{uuid.uuid4().hex[:6]}"
    ingest_entity(state.tenant, user, n=30)
    state.llm.script = [Reply(delay=1.0)] * 4
    ids = [str(i) for i in Memory.objects.filter(tenant=state.tenant, user_id=user, entity_id="dana")
           .values_list("id", flat=True)]
    _together([
        lambda: reflection_user_task.delay(tenant_id=state.tenant.id, user_id=user),
        lambda: admin.post("/admin/zeromem/memory/", {"action": "trigger_reflection", "_selected_action": ids[:3]}),
        lambda: api.post("/api/v1/public/memory/v2/reflect?async=1", {"entity_id": "dana", "user_id": user},
                         content_type="application/json", headers=headers),
        lambda: call_command("reflect", "--user", user, "--entity", "dana", stdout=io.StringIO(),
                             stderr=io.StringIO()),
    ])
    wait_settled(state.tenant, user)
    _overlap_verdict(state.tenant, user, RunKind.REFLECTION, report, say)
    report.overlap_rounds += 1


def _overlap_verdict(tenant: Tenant, user: str, kind: str, report: Report, say: Say) -> None:
    """Exact, whatever the timing: no memory changed by two runs, and no two runs of the user at once.

    Several runs may do work legitimately: a forced one (session end, `consolidate --force`) after an unforced
    one takes the current session the unforced one left; a reflection run without a threshold (API, admin) takes
    what a thresholded one left below it. Counting the runs that did work (the old check) depended on which
    trigger came first, so it failed on a busy machine with nothing wrong."""
    runs = list(ConsolidationRun.objects.filter(tenant=tenant, user_id=user, kind=kind).order_by("started_at"))
    changed: dict[str, set[uuid.UUID]] = {}
    for entry in LedgerEntry.objects.filter(run__in=runs, action__startswith="transition."):
        for memory_id in entry.memory_ids:
            changed.setdefault(memory_id, set()).add(entry.run_id)
    redone = {run_id for runs_of_memory in changed.values() if len(runs_of_memory) > 1 for run_id in runs_of_memory}
    started = [r for r in runs if r.started_at is not None]
    concurrent = sum(1 for a, b in zip(started, started[1:], strict=False)
                     if a.finished_at is None or b.started_at < a.finished_at)
    working = len({run_id for runs_of_memory in changed.values() for run_id in runs_of_memory})
    report.overlap_extra_runs += max(0, len(redone) - 1) + concurrent
    report.overlap_working_runs += working
    say(f"overlap ({kind}): {len(runs)} run(s), {working} did work, {len(redone)} redid another's, "
        f"{concurrent} ran alongside another; forced: {sum(r.force for r in runs)}")


# --- 3. faults -------------------------------------------------------------------------------------------------

def _terminate_other_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute("""SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                           WHERE datname = current_database() AND pid <> pg_backend_pid()
                             AND backend_type = 'client backend'""")
        return len(cursor.fetchall())


def _restarted(url: str) -> bool:
    broker_restart(url)
    return True


def _when_running(run_id: uuid.UUID, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ConsolidationRun.objects.filter(id=run_id, status="running").exists():
            return True
        time.sleep(0.05)
    return False


def fault_cases(state: Rig, report: Report, say: Say) -> None:

    def clustering_case(name: str, action: Callable[[uuid.UUID], object], groups: int = 80) -> None:
        user = f"fault-{name}-{uuid.uuid4().hex[:6]}"
        ingested = ingest_clusterable(state.tenant, user, groups=groups)
        run_id, _ = clustering_trigger(tenant_id=state.tenant.id, user_id=user, trigger="beat")
        action(run_id)
        record(name, user, ingested, run_id)

    def reflection_case(name: str, script: list[Reply]) -> None:
        user = f"fault-{name}-{uuid.uuid4().hex[:6]}"
        ingested = ingest_entity(state.tenant, user, n=30)
        state.llm.script = list(script)
        run = reflection_trigger(scope=ReflectionScope(state.tenant.id, user, "dana", "global"), trigger="beat")[0]
        record(name, user, ingested, run.id)

    def record(name: str, user: str, ingested: int, run_id: uuid.UUID) -> None:
        settled = wait_settled(state.tenant, user)
        check = check_user(state.tenant, user, ingested)
        run = ConsolidationRun.objects.get(id=run_id)
        report.fault_cases += 1
        failed = not (settled and check.ok)
        report.fault_failures += failed
        say(f"fault {name}: run {run.status}{' (' + run.error[:80] + ')' if run.error else ''}, lost {check.lost}, "
            f"duplicated {check.duplicated}, unfinished {check.unfinished}{' FAILED' if failed else ''}")

    clustering_case("db-connection-dropped", lambda run_id: _when_running(run_id) and _terminate_other_connections())
    clustering_case("broker-restarted", lambda run_id: _when_running(run_id) and _restarted(settings.REDIS_URL))
    reflection_case("llm-slow", [Reply(delay=3.0), Reply(delay=3.0)])
    reflection_case("llm-5xx", [Reply(status=503), Reply(status=500)])
    reflection_case("llm-garbage", [Reply("<<not json>>"), Reply("still { not json")])
    state.restart_worker(ZEROMEMORY_EMBEDDING_MODEL="openai/no-such-embedder", OPENAI_API_KEY="")
    try:
        clustering_case("embedder-raising", lambda run_id: None, groups=20)
    finally:
        state.restart_worker()


# --- 4. load ---------------------------------------------------------------------------------------------------

def load(state: Rig, report: Report, *, requests: int, seconds: float, clients: int, say: Say) -> None:
    """Ingest and search clients against gunicorn while a clustering run works through a large user."""
    import httpx


    key = services.apikey_create(tenant=state.tenant)[1]
    big = f"load-{uuid.uuid4().hex[:6]}"
    ingest_clusterable(state.tenant, big, groups=750)
    port = free_port()
    server = gunicorn(state.worker_env, state.logs / "gunicorn.log", port=port).start()
    try:
        base = f"http://127.0.0.1:{port}/api/v1/public/memory/v2"
        _wait_http(f"{base}/openapi.json")
        idle = _hammer(base, key, requests=max(100, requests // 5), seconds=seconds / 5, clients=clients,
                       run_id=uuid.uuid4(), http=httpx)
        idle_search = [s.ms for s in idle if s.kind == "search"]
        report.baseline_search_p50_ms = _percentile(idle_search, 0.5)
        report.baseline_search_p99_ms = _percentile(idle_search, 0.99)
        run_id, _ = clustering_trigger(tenant_id=state.tenant.id, user_id=big, trigger="beat")
        _when_running(run_id, 60)
        started = time.perf_counter()
        samples = _hammer(base, key, requests=requests,
                          seconds=seconds, clients=clients, run_id=run_id, http=httpx)
        elapsed = time.perf_counter() - started
    finally:
        server.stop()
    _summarise(samples, report)
    report.load_requests_per_s = round(len(samples) / elapsed, 1) if elapsed else 0.0
    wait_settled(state.tenant, big, 600)
    say(f"load: {report.load_requests} requests, {report.load_errors} errors, p50 {report.load_p50_ms} ms, "
        f"p99 {report.load_p99_ms} ms (search p99 {report.load_search_p99_ms} ms), "
        f"{report.load_during_clustering_share:.0%} of them while the clustering run was in progress; with no job "
        f"running: search p50 {report.baseline_search_p50_ms} ms, p99 {report.baseline_search_p99_ms} ms")


@dataclass(frozen=True)
class Sample:
    kind: str
    ms: float
    ok: bool
    during_run: bool


def _hammer(base: str, key: str, *, requests: int, seconds: float, clients: int, run_id: uuid.UUID,
            http: Any) -> list[Sample]:
    samples: list[Sample] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    running = {"value": True}

    def watch() -> None:
        while time.monotonic() < deadline and len(samples) < requests:
            running["value"] = ConsolidationRun.objects.filter(id=run_id, status="running").exists()
            time.sleep(0.2)
        connections.close_all()

    def client(number: int) -> None:
        rng = random.Random(number)
        with http.Client(headers={"Authorization": f"Bearer {key}"}, timeout=30) as session:
            while time.monotonic() < deadline and len(samples) < requests:
                kind = "search" if rng.random() < 0.7 else "ingest"
                started = time.perf_counter()
                try:
                    if kind == "search":
                        response = session.post(f"{base}/search", json={
                            "query": f"slow queue host-{rng.randint(0, 749)}", "user_id": f"load-user-{number}"})
                    else:
                        response = session.post(f"{base}/memories", json={"memories": [{
                            "content": f"client {number} note {rng.random():.6f} about host-{rng.randint(0, 99)}",
                            "user_id": f"load-user-{number}"}]})
                    ok = response.status_code < 400
                except http.HTTPError:
                    ok = False
                with lock:
                    samples.append(Sample(kind, (time.perf_counter() - started) * 1000, ok, running["value"]))

    threads = [threading.Thread(target=watch)] + [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return samples


def _percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 1)


def _summarise(samples: list[Sample], report: Report) -> None:
    times = [s.ms for s in samples]
    search = [s.ms for s in samples if s.kind == "search"]
    report.load_requests = len(samples)
    report.load_errors = sum(not s.ok for s in samples)
    report.load_p50_ms, report.load_p99_ms = _percentile(times, 0.5), _percentile(times, 0.99)
    report.load_search_p50_ms, report.load_search_p99_ms = _percentile(search, 0.5), _percentile(search, 0.99)
    report.load_ingest_p99_ms = _percentile([s.ms for s in samples if s.kind == "ingest"], 0.99)
    during = sum(s.during_run for s in samples)
    report.load_during_clustering_share = round(during / len(samples), 3) if samples else 0.0


def _wait_http(url: str, seconds: float = 60) -> None:
    import httpx

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer")


# --- 5. churn --------------------------------------------------------------------------------------------------

CHURN_WORDS = ("heron", "lantern", "quarry", "violin", "harbour", "glacier", "orchard", "compass", "ember", "saddle")
CHURN_SHARED_TEXTS = 6  # texts per user every client adds now and then: the same text added while it is deleted
CHURN_KEYS = 4  # keys per user every client puts and deletes by key: one memory per key however they interleave


@dataclass
class ChurnAcks:
    """What the server acknowledged, for the check afterwards: each client corrects and deletes only memories it
    created, so the last acknowledged write of a memory is its state at the end."""

    present: dict[str, str] = field(default_factory=dict)  # memory id → content acknowledged last
    gone: set[str] = field(default_factory=set)
    shared: list[str] = field(default_factory=list)  # ids answered for shared texts (any client may delete them)
    samples: list[tuple[str, int, float, bool]] = field(default_factory=list)  # op, status, ms, expected
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class ChurnClient:
    number: int
    base: str
    session: httpx.Client  # with the key
    users: list[str]
    acks: ChurnAcks
    rng: random.Random
    owned: list[tuple[str, str]] = field(default_factory=list)  # (memory id, user) created and not deleted
    written: int = 0

    def call(self, op: str, method: str, path: str, body: Any = None, expected: tuple[int, ...] = (200,)) -> Any:
        """One request, recorded with whether its answer was one the operation expects; the answer, or None."""
        started = time.perf_counter()
        try:
            response = self.session.request(method, f"{self.base}{path}", json=body)
            status, answer = response.status_code, response.text
        except httpx.HTTPError as exc:  # a transport error is a failed request, recorded as status 0
            response, status, answer = None, 0, repr(exc)
        ms = (time.perf_counter() - started) * 1000
        ok = status in expected
        with self.acks.lock:
            self.acks.samples.append((op if ok else f"{op} → {status}: {answer[:160]}", status, ms, ok))
        return response if ok else None

    def text(self) -> str:
        self.written += 1
        return f"churn client {self.number} note {self.written} about the {self.rng.choice(CHURN_WORDS)}"


def churn_add(client: ChurnClient) -> None:
    user, content = client.rng.choice(client.users), client.text()
    response = client.call("add", "POST", "/memories", {"memories": [{"content": content, "user_id": user}]},
                           expected=(201,))
    if response is not None:
        memory_id = response.json()["ids"][0]
        client.owned.append((memory_id, user))
        with client.acks.lock:
            client.acks.present[memory_id] = content


def churn_add_shared(client: ChurnClient) -> None:
    user = client.rng.choice(client.users)
    content = f"shared note {client.rng.randrange(CHURN_SHARED_TEXTS)} about the {CHURN_WORDS[0]}"
    response = client.call("add shared", "POST", "/memories", {"memories": [{"content": content, "user_id": user}]},
                           expected=(201,))
    if response is not None:
        with client.acks.lock:
            client.acks.shared.append(response.json()["ids"][0])


def churn_correct(client: ChurnClient) -> None:
    if not client.owned:
        return churn_add(client)
    memory_id, _ = client.rng.choice(client.owned)
    content = client.text()
    if client.call("correct", "PATCH", f"/memories/{memory_id}", {"content": content}) is not None:
        with client.acks.lock:
            client.acks.present[memory_id] = content


def churn_delete(client: ChurnClient) -> None:
    if not client.owned:
        return churn_add(client)
    memory_id, _ = client.owned.pop(client.rng.randrange(len(client.owned)))
    if client.call("delete", "DELETE", f"/memories/{memory_id}") is not None:
        with client.acks.lock:
            client.acks.present.pop(memory_id, None)
            client.acks.gone.add(memory_id)


def churn_delete_shared(client: ChurnClient) -> None:
    with client.acks.lock:
        memory_id = client.rng.choice(client.acks.shared) if client.acks.shared else None
    if memory_id is None:
        return churn_add_shared(client)
    client.call("delete shared", "DELETE", f"/memories/{memory_id}", expected=(200, 404))  # 404: deleted already


def churn_search(client: ChurnClient) -> None:
    query = " ".join(client.rng.sample(CHURN_WORDS, 2))
    client.call("search", "POST", "/search", {"query": query, "user_id": client.rng.choice(client.users)})


def churn_keyed_put(client: ChurnClient) -> None:
    """A LangGraph-store-shaped write (its metadata marker, which `duplicate_keys` counts) of one of a few keys a user
    shares with every client: the keys concurrent puts and deletes meet on."""
    user, key = client.rng.choice(client.users), f"slot-{client.rng.randrange(CHURN_KEYS)}"
    client.call("keyed put", "PUT", "/memories/by-key",
                {"user_id": user, "key": key, "content": client.text(),
                 "metadata": {KEY_MARKER: {"namespace": [user], "key": key}}}, expected=(200, 201))


def churn_keyed_delete(client: ChurnClient) -> None:
    user, key = client.rng.choice(client.users), f"slot-{client.rng.randrange(CHURN_KEYS)}"
    client.call("keyed delete", "DELETE", f"/memories/by-key?user_id={user}&key={key}")  # gone already: 200 too


# The mix of operations (name, weight, what it does): one more kind of write is one more row and its function.
CHURN_OPS: list[tuple[str, float, Callable[[ChurnClient], None]]] = [
    ("add", 0.25, churn_add), ("add shared", 0.08, churn_add_shared), ("correct", 0.15, churn_correct),
    ("delete", 0.15, churn_delete), ("delete shared", 0.07, churn_delete_shared), ("search", 0.30, churn_search),
    ("keyed put", 0.10, churn_keyed_put), ("keyed delete", 0.03, churn_keyed_delete),
]


@dataclass(frozen=True)
class Churn:
    seconds: float = 60.0
    requests: int = 5_000
    clients: int = 20
    users: int = 3


def churn(state: Rig, report: Report, plan: Churn, say: Say) -> None:
    """`plan.clients` threads, each with its own connection, doing CHURN_OPS on the same `plan.users` against
    gunicorn; then the checks of the section title against the database."""
    key = services.apikey_create(tenant=state.tenant)[1]
    names = [f"churn-{uuid.uuid4().hex[:6]}-{n}" for n in range(plan.users)]
    acks = ChurnAcks()
    port = free_port()
    server = gunicorn(state.worker_env, state.logs / "gunicorn-churn.log", port=port).start()
    try:
        base = f"http://127.0.0.1:{port}/api/v1/public/memory/v2"
        _wait_http(f"{base}/openapi.json")
        started = time.perf_counter()
        _churn_clients(base, key, names, acks, plan)
        elapsed = time.perf_counter() - started
    finally:
        server.stop()
    _churn_verdict(state.tenant, names, acks, report, elapsed)
    report.churn_retries = (state.logs / "gunicorn-churn.log").read_text(errors="replace").count(
        "lost to a concurrent write")
    say(f"churn p50 / p99 ms (answers) by operation: {_latency_by_op(acks.samples)}")
    say(f"churn: {report.churn_requests} requests from {plan.clients} clients on {plan.users} users in {elapsed:.0f} s "
        f"({report.churn_requests_per_s} requests/s, p99 {report.churn_p99_ms} ms), {report.churn_errors} errors, "
        f"{report.churn_5xx} 5xx, {report.churn_retries} retried; afterwards {report.churn_unreadable} acknowledged "
        f"writes unreadable, {report.churn_undeleted} acknowledged deletes still there, "
        f"{report.churn_stats_drift} counters off a recount ({report.churn_counter_rows_per_term} rows a term), "
        f"{report.duplicate_keys} duplicate keys")


def _churn_clients(base: str, key: str, users: list[str], acks: ChurnAcks, plan: Churn) -> None:
    """Until `plan.seconds` have passed and `plan.requests` were answered (a busy machine answers fewer a second),
    at most ten times `plan.seconds`."""
    started = time.monotonic()
    _, weights, calls = zip(*CHURN_OPS, strict=True)

    def going() -> bool:
        elapsed = time.monotonic() - started
        return elapsed < 10 * plan.seconds and (elapsed < plan.seconds or len(acks.samples) < plan.requests)

    def run(number: int) -> None:
        rng = random.Random(f"churn-{number}")
        with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=60) as session:
            client = ChurnClient(number=number, base=base, session=session, users=users, acks=acks, rng=rng)
            while going():
                rng.choices(calls, weights)[0](client)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(plan.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _latency_by_op(samples: list[tuple[str, int, float, bool]]) -> str:
    by_op: dict[str, list[float]] = {}
    for op, _, ms, ok in samples:
        if ok:
            by_op.setdefault(op, []).append(ms)
    return ", ".join(f"{op} {_percentile(times, 0.5)} / {_percentile(times, 0.99)} ({len(times)})"
                     for op, times in sorted(by_op.items()))


def _churn_verdict(tenant: Tenant, users: list[str], acks: ChurnAcks, report: Report, elapsed: float) -> None:
    report.churn_requests = len(acks.samples)
    report.churn_errors = sum(not ok for _, _, _, ok in acks.samples)
    report.churn_5xx = sum(status >= 500 for _, status, _, _ in acks.samples)
    report.churn_seconds = round(elapsed, 1)
    report.churn_requests_per_s = round(len(acks.samples) / elapsed, 1) if elapsed else 0.0
    report.churn_p99_ms = _percentile([ms for _, _, ms, _ in acks.samples], 0.99)
    report.notes += sorted({detail for detail, _, _, ok in acks.samples if not ok})[:10]
    stored = dict(Memory.objects.filter(tenant=tenant, id__in=list(acks.present) + list(acks.gone))
                  .values_list("id", "content"))
    stored = {str(memory_id): content for memory_id, content in stored.items()}
    report.churn_unreadable = sum(stored.get(memory_id) != content for memory_id, content in acks.present.items())
    report.churn_undeleted = sum(memory_id in stored for memory_id in acks.gone)
    report.churn_stats_drift = stats_drift(tenant.id, users)
    report.churn_counter_rows_per_term = counter_rows_per_term(tenant.id, users)
    report.duplicate_keys = duplicate_keys(tenant.id)


def stats_drift(tenant_id: int, users: list[str]) -> int:
    """Terms whose BM25 counter (the sum of its delta rows) differs from a count of the users' memories, plus
    users whose document count or total length differs."""
    with connection.cursor() as cursor:
        cursor.execute(
            """WITH actual AS (SELECT m.user_id, t.lexeme AS term, count(*) AS n
                                 FROM zeromem_memory m, unnest(m.search_vector) t
                                WHERE m.tenant_id = %(tenant)s AND m.user_id = ANY(%(users)s)
                                  AND length(t.lexeme) <= 200 GROUP BY 1, 2),
                    counted AS (SELECT user_id, term, sum(doc_count) AS n FROM zeromem_termstat
                                 WHERE tenant_id = %(tenant)s AND user_id = ANY(%(users)s)
                                 GROUP BY 1, 2 HAVING sum(doc_count) <> 0),
                    docs AS (SELECT user_id, count(*) AS n, sum(length(search_vector)) AS len FROM zeromem_memory
                              WHERE tenant_id = %(tenant)s AND user_id = ANY(%(users)s) GROUP BY 1),
                    totals AS (SELECT user_id, sum(doc_count) AS n, sum(total_length) AS len
                                 FROM zeromem_usersearchstats
                                WHERE tenant_id = %(tenant)s AND user_id = ANY(%(users)s) GROUP BY 1
                               HAVING sum(doc_count) <> 0)
               SELECT (SELECT count(*) FROM actual FULL JOIN counted USING (user_id, term)
                        WHERE actual.n IS DISTINCT FROM counted.n)
                    + (SELECT count(*) FROM docs FULL JOIN totals USING (user_id)
                        WHERE docs.n IS DISTINCT FROM totals.n OR docs.len IS DISTINCT FROM totals.len)""",
            {"tenant": tenant_id, "users": users})
        return int(cursor.fetchone()[0])


def counter_rows_per_term(tenant_id: int, users: list[str]) -> float:
    with connection.cursor() as cursor:
        cursor.execute("""SELECT count(*)::float / greatest(count(DISTINCT (user_id, term)), 1) FROM zeromem_termstat
                           WHERE tenant_id = %s AND user_id = ANY(%s)""", [tenant_id, users])
        return round(float(cursor.fetchone()[0]), 3)


# The metadata key the LangGraph store keeps a memory's namespace and key under (zeromem_client.langgraph.META).
KEY_MARKER = "langgraph"


def duplicate_keys(tenant_id: int) -> int:
    """Memories beyond the first that hold the same caller key (LangGraph store marker) in one scope."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT coalesce(sum(n - 1), 0) FROM (
                 SELECT count(*) AS n FROM zeromem_memory WHERE tenant_id = %(tenant)s AND metadata ? %(marker)s
                  GROUP BY user_id, entity_id, namespace, metadata -> %(marker)s -> 'namespace',
                           metadata -> %(marker)s -> 'key') keys""",
            {"tenant": tenant_id, "marker": KEY_MARKER})
        return int(cursor.fetchone()[0])
# --- 5. service restarts and dead workers ----------------------------------------------------------------------

RESTART_FINISH_S = 120.0  # a run finishes within this many seconds of the restarted service answering again


@contextmanager
def two_workers_and_beat(state: Rig) -> Iterator[list[Managed]]:
    """The rig's worker stops; two workers and beat take over with the deployment's heartbeat, stale-after and
    visibility timeout (this process's settings), so a dead worker's run comes back only through the heartbeat
    sweep. The rig's worker starts again afterwards."""
    import io

    from django.core.management import call_command

    call_command("setup_periodic_tasks", stdout=io.StringIO())
    env = {**state.worker_env, "ZEROMEMORY_VISIBILITY_TIMEOUT": str(settings.CELERY_BROKER_TRANSPORT_OPTIONS[
        "visibility_timeout"]), "ZEROMEMORY_RUN_HEARTBEAT_SECONDS": str(settings.ZEROMEMORY_RUN_HEARTBEAT_SECONDS),
           "ZEROMEMORY_RUN_STALE_SECONDS": str(settings.ZEROMEMORY_RUN_STALE_SECONDS),
           # These rounds time a recovery: at idle CPU priority a worker on a machine busy with other work waits for
           # every other process (a reflection run took 60-150 s at load 13, not seconds), timing the machine.
           "ZEROMEMORY_WORKER_SCHED_IDLE": "false", "ZEROMEMORY_WORKER_NICE": "0"}
    if state.worker is not None:
        state.worker.stop()
    workers = [celery_worker(env, state.logs / f"worker-{n}.log", node=f"proof{n}@%h").start() for n in (1, 2)]
    beat = celery_beat(env, state.logs / "beat.log").start()
    try:
        yield workers
    finally:
        for process in [*workers, beat]:
            process.stop()
        state.start_worker()


def _begin_run(state: Rig, kind: str, user: str) -> tuple[int, uuid.UUID]:
    """A user with work for a run of `kind` (as the crash rounds make it), the run triggered; (ingested, run id)."""
    if kind == "clustering":
        ingested = ingest_clusterable(state.tenant, user, groups=60)
        return ingested, clustering_trigger(tenant_id=state.tenant.id, user_id=user, trigger="beat")[0]
    ingested = ingest_entity(state.tenant, user, n=46)
    state.llm.script = [Reply(delay=0.7)] * 6
    return ingested, reflection_trigger(scope=ReflectionScope(state.tenant.id, user, "dana", "global"),
                                        trigger="beat")[0].id


def _mid_run(state: Rig, kind: str, user: str, run_id: uuid.UUID) -> bool:
    """Wait until the run works (clustering: its first chunk written); whether it does."""
    running = _when_running(run_id, 60)
    if kind == "clustering":
        first_chunk_written(state.tenant, user)
    else:
        time.sleep(1.0)  # inside its first LLM call
    return running and ConsolidationRun.objects.filter(id=run_id, status="running").exists()


def _tally(report: Report, state: Rig, check: Check) -> None:
    report.lost += check.lost
    report.duplicated += check.duplicated
    report.unfinished_runs += check.unfinished
    if check.duplicated:
        report.notes += duplicates(state.tenant, check.user)


def restart_round(state: Rig, report: Report, service: str, restart: Callable[[], None], number: int,
                  say: Say) -> None:
    """A run works, `service` restarts under it; it must finish within RESTART_FINISH_S of the service's return.
    The kinds alternate, PostgreSQL's rounds from clustering, the broker's from reflection (one round each: both)."""
    kind = ("clustering", "reflection")[(number + (service == "broker")) % 2]
    user = f"{service}-{kind}-{number}-{uuid.uuid4().hex[:6]}"
    ingested, run_id = _begin_run(state, kind, user)
    mid_run = _mid_run(state, kind, user, run_id)
    restart()
    connections.close_all()  # this process's connections died with the server
    returned = timezone.now()
    wait_settled(state.tenant, user, RESTART_FINISH_S + 60)
    run = ConsolidationRun.objects.get(id=run_id)
    # Unfinished: counted late (and below); finished while the service was still down: 0.
    took = max(0.0, ((run.finished_at or timezone.now()) - returned).total_seconds())
    check = check_user(state.tenant, user, ingested)
    _tally(report, state, check)
    report.restart_late_runs += took > RESTART_FINISH_S
    report.restart_finish_max_s = max(report.restart_finish_max_s, round(took, 1))
    if service == "postgresql":
        report.pg_restart_rounds += 1
    else:
        report.broker_restart_rounds += 1
    say(f"{service} restart round {number + 1} ({kind}{', mid-run' if mid_run else ''}): run {run.status} "
        f"{took:.1f} s after the service returned; lost {check.lost}, duplicated {check.duplicated}, "
        f"unfinished {check.unfinished}")


def dead_worker_round(state: Rig, report: Report, workers: list[Managed], number: int, say: Say) -> None:
    """Kill -9 the worker holding a run and leave it dead: the other one must finish the run."""
    kind = ("clustering", "reflection")[number % 2]
    user = f"dead-worker-{kind}-{number}-{uuid.uuid4().hex[:6]}"
    ingested, run_id = _begin_run(state, kind, user)
    _mid_run(state, kind, user, run_id)
    holder = _holder(workers, ConsolidationRun.objects.get(id=run_id).worker)
    killed = time.monotonic()
    if holder is not None:
        holder.kill9()
    wait_settled(state.tenant, user, RESTART_FINISH_S)
    recovery = round(time.monotonic() - killed, 1)
    check = check_user(state.tenant, user, ingested)
    _tally(report, state, check)
    report.dead_worker_rounds += 1
    report.dead_worker_recovery_s = max(report.dead_worker_recovery_s, recovery)
    if holder is None:  # the round proved nothing: it fails
        report.notes.append(f"dead-worker round {number + 1}: no worker held the run when it was to be killed")
        report.unfinished_runs += 1
    else:
        holder.start()  # for the next round: two workers again
    say(f"dead-worker round {number + 1} ({kind}): the other worker finished the run {recovery} s after the kill; "
        f"lost {check.lost}, duplicated {check.duplicated}, unfinished {check.unfinished}")


def _holder(workers: list[Managed], name: str) -> Managed | None:
    """The worker whose process group holds the run (`name` is host:pid of a pool process)."""
    try:
        group = os.getpgid(int(name.rsplit(":", 1)[1]))
    except (IndexError, ValueError, ProcessLookupError):
        return None
    return next((worker for worker in workers if worker.pid == group), None)


def service_rounds(state: Rig, report: Report, *, rounds: int, dead_worker_rounds: int, say: Say) -> None:
    """PostgreSQL restart rounds, broker restart rounds, dead-worker rounds (two workers and beat throughout)."""
    if os.environ.get("ZEROMEM_EMBEDDED") != "1":
        report.notes.append("service restarts skipped: only the embedded PostgreSQL and broker can be restarted")
        return
    with connection.cursor() as cursor:
        cursor.execute("SHOW data_directory")
        pgdata = Path(cursor.fetchone()[0])
    with two_workers_and_beat(state) as workers:
        for number in range(rounds):
            restart_round(state, report, "postgresql", lambda: database_restart(pgdata), number, say)
        for number in range(rounds):
            restart_round(state, report, "broker", lambda: broker_restart(settings.REDIS_URL), number, say)
        for number in range(dead_worker_rounds):
            dead_worker_round(state, report, workers, number, say)


# --- all of it -------------------------------------------------------------------------------------------------

def prove_resilience(*, rounds: int, load_requests: int, load_seconds: float, logs: Path,
                     say: Say = lambda line: None, overlap_only: int = 0, churn_plan: Churn = Churn(),
                     churn_only: bool = False, restart_rounds: int = 5, dead_worker_rounds: int = 2) -> Report:
    """Everything; or, with `overlap_only` N, only the overlapping triggers, N times (its repeatability check);
    or, with `churn_only`, only the churn. `restart_rounds`: rounds of each service's restart;
    `dead_worker_rounds`: workers killed and left dead."""
    report = Report()
    logs.mkdir(parents=True, exist_ok=True)
    with override_settings(ZEROMEMORY_EMBEDDING_MODEL="builtin:hash", ZEROMEMORY_RATE_LIMIT_REQUESTS=0,
                           ZEROMEMORY_REFLECT_WAIT_SECONDS=0.0), rig(logs) as state:
        if overlap_only:
            for _ in range(overlap_only):
                overlap(state, report, say)
            return report
        if not churn_only:
            crash_rounds(state, report, rounds, say)
            overlap(state, report, say)
            fault_cases(state, report, say)
            load(state, report, requests=load_requests, seconds=load_seconds, clients=4, say=say)
        churn(state, report, churn_plan, say)
        if not churn_only:
            service_rounds(state, report, rounds=restart_rounds, dead_worker_rounds=dead_worker_rounds, say=say)
    return report
