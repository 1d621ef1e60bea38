"""The client's dependencies and extras are ranges (`pydantic>=…,<3`, `mcp>=…,<3`, `langgraph>=…,<2`, …), so it installs
beside the releases an application already has. Both ends run against the real server, each in a throwaway venv
holding only the client:
- "core floors": an application venv with the oldest allowed httpx and pydantic; installing the client keeps them,
  and the agent-loop example runs;
- "extras floors": one with the oldest allowed mcp and langgraph releases; installing the client with both extras
  keeps them;
- "newest": a fresh install, which takes the newest allowed releases (at least those this repository's venv pins).
With the extras, the MCP server is driven by the SDK's own client (extras_check.py) and the LangGraph example graph
runs on ZeromemStore. pip's cache keeps a second run to installs from local wheels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from zeromem.core import services

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("hash_embedder")]

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "python"
CHECK = Path(__file__).with_name("extras_check.py")
GRAPH = CLIENT / "examples" / "langgraph_graph.py"
AGENT_LOOP = CLIENT / "examples" / "agent_loop.py"


def core() -> list[Requirement]:
    return [Requirement(r) for r in tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]["dependencies"]]


def extras() -> list[Requirement]:
    groups = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    return [Requirement(r) for group in groups.values() for r in group]


def lowest(requirement: Requirement) -> str:
    floors = [spec.version for spec in requirement.specifier if spec.operator == ">="]
    assert len(floors) == 1, f"{requirement}: a range needs one lower bound (>=)"
    return floors[0]


def pip_install(python: Path, *wanted: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", *wanted],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


def run(python: Path, script: Path, env: dict[str, str]) -> str:
    # Outside the repository, so that nothing but the venv's own packages is importable.
    done = subprocess.run([str(python), str(script)], capture_output=True, text=True, timeout=300, env=env,
                          cwd=python.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def venv_with(tmp_path: Path, preinstalled: dict[str, str], client: str) -> Path:
    """A throwaway venv holding `preinstalled` (name: release) and then the client (`client`: what to install)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    if preinstalled:
        pip_install(python, *(f"{name}=={release}" for name, release in preinstalled.items()))
    pip_install(python, client)
    return python


def versions(python: Path, names: list[str]) -> dict[str, Version]:
    script = f"import json, importlib.metadata as m; print(json.dumps({{n: m.version(n) for n in {names!r}}}))"
    done = subprocess.run([str(python), "-c", script], capture_output=True, text=True, check=True)
    return {name: Version(release) for name, release in json.loads(done.stdout).items()}


@pytest.fixture
def env(live_server: Any, tenant: Any) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "ZEROMEM_URL": live_server.url,
            "ZEROMEM_API_KEY": services.apikey_create(tenant=tenant)[1]}


def test_on_the_oldest_httpx_and_pydantic_it_allows_the_client_works_and_keeps_them(
        tmp_path: Path, env: dict[str, str], eager: Any) -> None:
    floors = {r.name: lowest(r) for r in core()}
    python = venv_with(tmp_path, floors, str(CLIENT))
    assert versions(python, list(floors)) == {name: Version(floor) for name, floor in floors.items()}
    loop = run(python, AGENT_LOOP, env)
    assert "allergic to peanuts" in loop.split("--- session 2 ---")[1]


@pytest.mark.parametrize("end", ["extras floors", "newest"])
def test_the_mcp_server_and_the_langgraph_store_work_at_each_end_of_the_extras_ranges(
        end: str, tmp_path: Path, env: dict[str, str]) -> None:
    floors = {r.name: lowest(r) for r in extras()}
    python = venv_with(tmp_path, floors if end == "extras floors" else {}, f"{CLIENT}[mcp,langgraph]")

    summary = json.loads(run(python, CHECK, env))
    graph = run(python, GRAPH, env)

    installed = versions(python, list(floors))
    if end == "extras floors":
        assert installed == {name: Version(floor) for name, floor in floors.items()}  # kept: none replaced
    else:
        for requirement in extras():
            assert installed[requirement.name] in requirement.specifier
            assert installed[requirement.name] >= Version(version(requirement.name)), requirement.name
    assert summary["tools"] == summary["tool_names"]
    assert summary["stored"]["created"] is True and summary["found"][:1] == [
        "The range check's note: the deploy runs on Fridays."]
    assert summary["key_accepted"] and summary["wrong_key_refused"]
    assert "recalled:   ['My favourite editor is Helix, with the default keymap.'" in graph
