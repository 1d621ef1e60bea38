"""`manage.py prove deployment`: docker-compose.yml's own commands, run against embedded services, pass every check;
and the pieces it reads compose with behave as compose does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from consolidation.schedules import SCHEDULES
from zeromem.devtools.proof.deployment import ComposeError, dependency_order, image_of, interpolate, off_machine

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ("collectstatic_ok", "migrate_ok", "static_ok", "health_ok", "beat_dispatched", "worker_processed",
          "docs_offline", "healthchecks_ok")


def test_the_quick_proof_runs_the_compose_services_and_every_check_passes():
    # Its own throwaway PostgreSQL and Valkey (not this session's): the proof runs a worker on its broker.
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "ZEROMEM_EMBEDDED"}}
    result = subprocess.run([sys.executable, "manage.py", "prove", "deployment", "--quick", "--json"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["services"] == ["migrate", "web", "worker", "beat"]
    assert {key: report[key] for key in CHECKS} == dict.fromkeys(CHECKS, True), report["notes"]
    assert report["schedules"] == len(SCHEDULES)
    assert report["static_assets"] > 1
    assert report["healthchecks"] == {"web": True, "worker": True, "beat": True}
    assert report["processes_left"] == 0
    assert report["failures"] == 0 and report["notes"] == []


def test_interpolation_follows_compose():
    env = {"SET": "value", "EMPTY": ""}
    assert interpolate("$$HOSTNAME", env) == "$HOSTNAME"
    assert interpolate("${SET:-d} ${EMPTY:-d} ${EMPTY-d} ${UNSET-d} $SET ${UNSET}", env) == "value d  d value "
    with pytest.raises(ComposeError, match="set it"):
        interpolate("${EMPTY:?set it}", env)


def test_services_start_after_what_they_depend_on():
    assert dependency_order({"web": ("migrate", "postgres"), "migrate": ("postgres",), "beat": ("migrate",)}) == [
        "migrate", "web", "beat"]
    with pytest.raises(ComposeError, match="cycle"):
        dependency_order({"a": ("b",), "b": ("a",)})


def test_a_cdn_url_in_the_docs_page_is_caught():
    page = """<link rel="stylesheet" href="https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui.css">
              <link rel="icon" href="/static/ninja/favicon.svg">
              <script>const bundle = "https://unpkg.com/swagger-ui-dist/swagger-ui-bundle.js";</script>
              <script src="/static/ninja/swagger-ui-bundle.js"></script>"""
    assert off_machine(page) == ["https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui.css",
                                 "https://unpkg.com/swagger-ui-dist/swagger-ui-bundle.js"]
    assert off_machine('<script src="http://127.0.0.1:8000/static/x.js"></script>') == []


def test_the_image_is_read_along_its_stages():
    dockerfile = """FROM python:3.11-slim AS runtime
ENV A=1 B="two words"
RUN X=1 Y=2 python manage.py collectstatic --noinput
FROM runtime AS extra
ENV C=3
FROM runtime AS app
"""
    image = image_of(dockerfile, "app")
    assert image.environment == {"A": "1", "B": "two words"}
    assert image.collectstatic_env == {"X": "1", "Y": "2"}
    assert image.collectstatic == ["python", "manage.py", "collectstatic", "--noinput"]
