from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from tests.factories import DAY
from zeromem.celery import app
from zeromem.core import services
from zeromem.core.adapters import embeddings
from zeromem.models import Tenant


def subprocess_database_url() -> str:
    """DATABASE_URL pointing at the test database pytest-django created, for subprocesses (worker, beat, CLI)."""
    from zeromem.devtools.proof.processes import current_database_url

    return current_database_url()


@pytest.fixture
def events() -> Iterator[list[dict[str, Any]]]:
    """Every event payload sent (after commit) while the test runs."""
    from zeromem.core.events import memory_events

    seen: list[dict[str, Any]] = []

    def receiver(sender: Any, payloads: list[dict[str, Any]], **kwargs: Any) -> None:
        seen.extend(payloads)

    memory_events.connect(receiver)
    yield seen
    memory_events.disconnect(receiver)


@pytest.fixture
def now() -> datetime:
    """One timestamp per test, read once as it starts: every age in the test counts back from it, so no time is
    read at import and two memories "3 days old" are exactly as old as each other."""
    return timezone.now()


@pytest.fixture
def three_days_ago(now: datetime) -> datetime:
    """Old enough for any clustering: outside the recency window and before the user's current session."""
    return now - 3 * DAY


@pytest.fixture(autouse=True)
def fresh_query_cache() -> None:
    """Query vectors cached by an earlier test must not answer this one's searches (its embedder may be broken)."""
    embeddings.query_cache_clear()


@pytest.fixture
def hash_embedder(settings: Any) -> None:
    """Meaning-free deterministic vectors: for tests where semantics do not matter."""
    settings.ZEROMEMORY_EMBEDDING_MODEL = "builtin:hash"


@pytest.fixture
def tenant(db: None) -> Tenant:
    return services.tenant_get_or_create(name="acme")


@pytest.fixture
def other_tenant(db: None) -> Tenant:
    return services.tenant_get_or_create(name="globex")


class ApiClient:
    """The test client speaking JSON with one tenant's key."""

    base = "/api/v1/public/memory/v2"

    def __init__(self, secret: str | None) -> None:
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {secret}"} if secret else {}

    def post(self, path: str, body: Any, **headers: str) -> Any:
        data = body if isinstance(body, (str, bytes)) else json.dumps(body)
        return self.client.post(self.base + path, data=data, content_type="application/json",
                                headers={**self.headers, **headers})

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(self.base + path, params, headers=self.headers)


@pytest.fixture
def api(tenant: Tenant) -> ApiClient:
    _, secret = services.apikey_create(tenant=tenant)
    return ApiClient(secret)


@pytest.fixture
def other_api(other_tenant: Tenant) -> ApiClient:
    _, secret = services.apikey_create(tenant=other_tenant)
    return ApiClient(secret)


@pytest.fixture
def anonymous_api(db: None) -> Iterator[ApiClient]:
    yield ApiClient(None)


@pytest.fixture
def eager() -> Iterator[None]:
    """Celery tasks run in the process that enqueues them (after commit)."""
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@pytest.fixture
def worker_env() -> dict[str, str]:
    """Extra environment for the `worker` fixture (override in a test module)."""
    return {}


@pytest.fixture
def worker(settings: Any, tmp_path: Any, worker_env: dict[str, str]) -> Iterator[Any]:
    """A real Celery worker (solo pool) on the test database and the embedded broker."""
    env = {**os.environ, "DATABASE_URL": subprocess_database_url(),
           "ZEROMEMORY_EMBEDDING_MODEL": "builtin:hash", **worker_env}
    log = tmp_path / "worker.log"
    app.control.purge()  # messages other tests left (e.g. a session end over HTTP) name rows that are gone now
    with log.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "celery", "-A", "zeromem", "worker", "--pool", "solo",
                                    "--loglevel", "WARNING", "--without-heartbeat", "--without-gossip",
                                    "--without-mingle"], env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    process.log = log  # type: ignore[attr-defined]
    try:
        # Ready once it answers a ping: requests that wait only briefly for a worker to claim their run
        # (POST /reflect) must not race its start-up.
        assert wait_until(lambda: bool(app.control.ping(timeout=0.5)) or process.poll() is not None), (
            log.read_text())
        yield process
    finally:  # also when it never became ready: no worker outlives its test
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_until(condition: Any, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False
