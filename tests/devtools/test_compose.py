"""docker-compose.yml parses and every command it runs exists in this project."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_it_defines_the_production_services():
    services = compose()["services"]
    assert {"postgres", "redis", "web", "worker", "beat"} <= set(services)
    assert "pgvector" in services["postgres"]["image"]


def test_every_app_command_exists():
    for name, service in compose()["services"].items():
        command = service.get("command")
        if not command or name in {"postgres", "redis"}:
            continue
        program = command[0]
        if program == "python":
            assert (ROOT / command[1]).exists()
            if command[1] == "manage.py":
                assert (ROOT / "zeromem" / "management" / "commands").exists() or command[2] == "migrate"
        else:
            assert shutil.which(program, path=str(Path(sys.executable).parent)), f"{program} is not installed"


def test_the_celery_app_and_wsgi_module_named_there_import():
    for service in ("worker", "beat"):
        assert compose()["services"][service]["command"][2] == "zeromem"
    result = subprocess.run([sys.executable, "-c", "import zeromem.celery, zeromem.wsgi"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
