"""The README's "Use it from an agent" blocks are copy-pasteable: each runs here against the real server over HTTP
(the Python blocks as written, with a stand-in for the reader's LLM), and the MCP configuration is the example file
whose command the client distribution installs."""

from __future__ import annotations

import json
import re
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from zeromem.core import services

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.usefixtures("hash_embedder"), pytest.mark.django_db(transaction=True)]


def section_blocks(language: str) -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Use it from an agent", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)


@pytest.fixture
def server_env(live_server: Any, tenant: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZEROMEM_URL", live_server.url)
    monkeypatch.setenv("ZEROMEM_API_KEY", services.apikey_create(tenant=tenant)[1])


def llm(*, system: str, user: str) -> str:
    return f"(an answer to {user!r})"


def test_the_client_block_remembers_the_turns_and_finds_them(server_env, capsys):
    exec(section_blocks("python")[0], {"llm": llm})  # noqa: S102 - the README's own code

    assert "allergic to peanuts" in capsys.readouterr().out


def test_the_langgraph_block_stores_and_finds_an_item(server_env, capsys):
    exec(section_blocks("python")[1], {})  # noqa: S102 - the README's own code

    printed = capsys.readouterr().out
    assert "Helix" in printed and "['editor']" in printed


def test_the_mcp_configuration_is_the_example_and_its_command_is_installed():
    shown = json.loads(section_blocks("json")[0])

    assert shown == json.loads((ROOT / "clients/python/examples/mcp_config.json").read_text())
    command = shown["mcpServers"]["zeromem"]["command"]
    assert command in {script.name for script in entry_points(group="console_scripts")}
