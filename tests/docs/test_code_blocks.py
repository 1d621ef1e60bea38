"""Every code block of the guides runs here, as a reader would run it (tests/docs/blocks.py says how a block is
found and annotated):

- python: executed against the real server over HTTP (ZEROMEM_URL and ZEROMEM_API_KEY set, as the guides say),
  with a stand-in for the reader's LLM;
- bash / sh: run by bash from the repository's root with `.venv/bin` on the PATH, against the same server and the
  test database (`manage.py` commands included);
- json: a tenant's policy overrides must validate; an MCP configuration must be the client's example file, with a
  command the client installs; an event payload must have the events' envelope and a type the server emits;
- yaml: alert rules must name metrics `/metrics` serves;
- http: docs/API.md's examples, which tests/api/test_api_examples.py sends in order;
- text: diagrams, nothing to run.
A block that must not run carries `<!-- docs-test: skip (reason) -->`; that set is kept small.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import time
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import subprocess_database_url
from tests.docs.blocks import ROOT, Block, all_blocks
from tests.factories import DAY, ingest_clusterable
from zeromem.core import services
from zeromem.core.domain.policy import SECTIONS, policy_with_overrides
from zeromem.core.events import EVENT_TYPES

BLOCKS = all_blocks()
RUNNABLE = [block for block in BLOCKS if block.skip_reason is None and block.lang not in {"text", "http"}]
MAX_SKIPPED = 6
API_PREFIX = "/api/v1/public/memory/v2"

pytestmark = [pytest.mark.usefixtures("hash_embedder"), pytest.mark.django_db(transaction=True)]


def llm(*, system: str, user: str) -> str:
    return f"(an answer to {user!r})"


@pytest.fixture
def server(live_server: Any, tenant: Any, now: Any) -> dict[str, str]:
    """The server the guides talk to, a key of tenant "acme", and a past session of user u1 the jobs can take."""
    ingest_clusterable(tenant, ["Redis on billing-api ran out of memory at noon.",
                                "billing-api Redis memory exhausted again, evictions started."],
                       created_at=now - 3 * DAY)
    secret = services.apikey_create(tenant=tenant)[1]
    return {"ZEROMEM_URL": live_server.url, "ZEROMEM_API_KEY": secret,
            "ZEROMEM": live_server.url + API_PREFIX, "ZEROMEM_KEY": secret}


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda block: block.name)
def test_the_block_runs(block: Block, server: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in server.items():
        monkeypatch.setenv(name, value)
    printed = RUNNERS[block.lang](block, server)

    if block.expected is not None:
        assert block.expected in printed, f"{block.name} printed {printed!r}"


def run_python(block: Block, server: dict[str, str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.body, block.name, "exec"), {"llm": llm, "__name__": "__docs__"})  # noqa: S102
    return out.getvalue()


def run_shell(block: Block, server: dict[str, str]) -> str:
    env = {**os.environ, **server, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "DATABASE_URL": subprocess_database_url(), "ZEROMEMORY_EMBEDDING_MODEL": "builtin:hash"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.body], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{block.name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def check_json(block: Block, server: dict[str, str]) -> str:
    shown = json.loads(block.body)
    if "event" in shown:
        return check_event(block, shown)
    if "mcpServers" not in shown and set(shown) <= set(SECTIONS):
        return repr(policy_with_overrides(shown))  # a tenant's policy overrides: they must validate
    assert "mcpServers" in shown, f"{block.name}: no runner knows this JSON; annotate it or show it as text"
    assert shown == json.loads((ROOT / "clients/python/examples/mcp_config.json").read_text())
    command = shown["mcpServers"]["zeromem"]["command"]
    assert command in {script.name for script in entry_points(group="console_scripts")}
    return ""


def check_event(block: Block, shown: dict[str, Any]) -> str:
    """An event payload: the envelope every event has, and a type the server emits (tests/consolidation compares
    a documented payload's keys with a real one)."""
    assert set(shown) == {"event", "id", "tenant", "occurred_at", "data"}, block.name
    assert shown["event"] in EVENT_TYPES, block.name
    return ""


def check_alert_rules(block: Block, server: dict[str, str]) -> str:
    from django.test import Client, override_settings

    rules = [rule for group in yaml.safe_load(block.body)["groups"] for rule in group["rules"]]
    with override_settings(ZEROMEMORY_METRICS_TOKEN="docs-test-token"):
        exposed = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer docs-test-token").content.decode()
    served = set(re.findall(r"^# TYPE (zeromem_\w+)", exposed, flags=re.M))
    for rule in rules:
        named = set(re.findall(r"zeromem_\w+", rule["expr"]))
        assert named and named <= served, f"{block.name}: {rule['alert']} names {named - served}, not served"
    return ""


RUNNERS = {"python": run_python, "bash": run_shell, "sh": run_shell, "json": check_json, "yaml": check_alert_rules}


def test_every_block_has_a_runner_or_says_why_it_does_not_run() -> None:
    unknown = [block.name for block in RUNNABLE if block.lang not in RUNNERS]

    assert not unknown, f"no runner for these blocks (annotate `docs-test: skip (reason)` or fence as text): {unknown}"


def test_only_the_api_page_holds_http_examples_and_its_own_test_sends_them() -> None:
    pages = {block.path.relative_to(ROOT).as_posix() for block in BLOCKS if block.lang == "http"}

    assert pages == {"docs/API.md"}
    assert (ROOT / "tests/api/test_api_examples.py").exists()


def test_few_blocks_are_kept_from_running_and_each_says_why() -> None:
    skipped = [block for block in BLOCKS if block.note.startswith("skip")]

    assert all(block.skip_reason for block in skipped), "write `skip (reason)`"
    assert len(skipped) <= MAX_SKIPPED, [block.name for block in skipped]


def test_every_annotation_is_understood() -> None:
    unknown = [block.name for block in BLOCKS if block.note and not (block.skip_reason or block.expected)]

    assert not unknown


def test_the_webhook_receiver_of_the_guide_accepts_a_signed_delivery_and_nothing_else() -> None:
    from consolidation.webhooks import webhook_signature

    [block] = [block for block in BLOCKS if block.path.name == "events.md" and block.lang == "python"]
    namespace: dict[str, Any] = {}
    exec(compile(block.body, block.name, "exec"), namespace)  # noqa: S102 - the guide's own code
    body, timestamp = b'{"event": "memory.merged"}', str(int(time.time()))
    headers = {"X-Zeromem-Timestamp": timestamp,
               "X-Zeromem-Signature": webhook_signature(secret="s3cret", timestamp=timestamp, body=body)}

    assert namespace["verified"](headers, body, "s3cret")
    assert not namespace["verified"](headers, body + b" ", "s3cret")
    assert not namespace["verified"]({**headers, "X-Zeromem-Timestamp": str(int(timestamp) - 3600)}, body, "s3cret")
