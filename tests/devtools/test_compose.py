"""docker-compose.yml and the Dockerfile: the services, their order and healthchecks, the settings passed through,
the image; every command they run exists in this project."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from zeromem.devtools.proof.deployment import ComposeError, app_services, image_of

ROOT = Path(__file__).resolve().parents[2]
LONG_RUNNING = ("web", "worker", "beat")
# Every setting a deployment decides (zeromem/settings.py reads each; the URLs point at compose's own servers).
PASSED_THROUGH = ("ZEROMEMORY_SECRET_KEY", "ZEROMEMORY_ALLOWED_HOSTS", "ZEROMEMORY_LOG_LEVEL",
                  "ZEROMEMORY_METRICS_TOKEN", "ZEROMEMORY_REFLECTION_MODEL", "ZEROMEMORY_DEFAULT_REFLECTION_MODEL",
                  "ZEROMEMORY_LLM_API_BASE", "ZEROMEMORY_LLM_API_KEY", "ZEROMEMORY_EMBEDDING_MODEL",
                  "ZEROMEMORY_EMBEDDING_DIM")


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def services() -> dict:
    return compose()["services"]


def dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def test_it_defines_the_production_services():
    assert {"postgres", "redis", "migrate", "web", "worker", "beat"} <= set(services())
    assert "pgvector" in services()["postgres"]["image"]


def test_every_app_command_exists():
    for name, service in services().items():
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
        assert services()[service]["command"][2] == "zeromem"
    probe = ("import gc, sys, zeromem.celery, zeromem.wsgi; gc.collect(); "
             "pipeline = sys.modules.get('zeromem.language.pipeline'); "
             "print(gc.get_freeze_count(), len(gc.get_objects()), 'zeromem.api.views' in sys.modules, "
             "pipeline is not None and pipeline.nlp.cache_info().currsize == 1)")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    frozen, scanned, urlconf_loaded, spacy_loaded = result.stdout.split()[-4:]
    # What the web app loaded is kept out of the collector's scans (zeromem/wsgi.py): tens of thousands of objects,
    # the URLconf, the embedding model and spaCy's pipeline included, which would load on first use. Loaded
    # after the freeze, they were ~38,000 objects every full collection scanned (10-35 ms pauses in a busy web
    # process).
    assert int(frozen) > 10_000
    assert urlconf_loaded == "True"
    assert spacy_loaded == "True"  # search reads its question with spaCy: ~46,000 more objects
    assert int(scanned) < 5_000


def test_migrate_runs_once_before_the_long_running_services():
    assert services()["migrate"]["command"][-2:] == ["migrate", "--noinput"]
    assert services()["migrate"].get("restart", "no") == "no"
    for name in LONG_RUNNING:
        assert services()[name]["depends_on"] == {"migrate": {"condition": "service_completed_successfully"},
                                                  "postgres": {"condition": "service_healthy"},
                                                  "redis": {"condition": "service_healthy"}}, name


def test_long_running_services_restart_unless_stopped():
    for name in (*LONG_RUNNING, "postgres", "redis"):
        assert services()[name]["restart"] == "unless-stopped", name


def test_every_long_running_service_and_server_has_a_healthcheck():
    for name in (*LONG_RUNNING, "postgres", "redis"):
        assert services()[name]["healthcheck"]["test"], name
    web = " ".join(services()["web"]["healthcheck"]["test"])
    assert "python" in web and "/healthz" in web and "curl" not in web  # the slim image has no curl
    worker = " ".join(services()["worker"]["healthcheck"]["test"])
    assert "inspect ping" in worker and "celery@$$HOSTNAME" in worker  # its own node, not any worker
    beat = " ".join(services()["beat"]["healthcheck"]["test"])
    assert "last_run_at" in beat


def test_every_setting_a_deployment_needs_is_passed_through():
    settings_source = (ROOT / "zeromem" / "settings.py").read_text()
    for name in LONG_RUNNING + ("migrate",):
        environment = services()[name]["environment"]
        for variable in PASSED_THROUGH:
            assert f'"{variable}"' in settings_source, f"settings no longer read {variable}"
            assert re.fullmatch(rf"\$\{{{variable}(:[-?].*)?\}}", environment[variable]), (name, variable)
        assert environment["DATABASE_URL"].startswith("postgresql://") and "@postgres:5432/" in \
            environment["DATABASE_URL"]
        assert environment["REDIS_URL"] == "redis://redis:6379/0"


def test_compose_refuses_to_start_without_a_secret_key():
    with pytest.raises(ComposeError, match="ZEROMEMORY_SECRET_KEY"):
        app_services(compose(), {})
    assert [s.name for s in app_services(compose(), {"ZEROMEMORY_SECRET_KEY": "x" * 48})] == [
        "migrate", "web", "worker", "beat"]


def test_flower_is_optional_and_pinned_only_in_its_own_image():
    flower = services()["flower"]
    assert flower["profiles"] == ["flower"] and flower["build"]["target"] == "flower"
    assert "flower==2.2.0" in dockerfile()
    assert "flower" not in (ROOT / "pyproject.toml").read_text().lower()


def test_the_image_runs_as_a_non_root_user():
    users = re.findall(r"^USER\s+(\S+)", dockerfile().split("AS flower")[0], flags=re.MULTILINE)
    assert users and users[-1] not in {"root", "0"}


def test_the_image_collects_static_files_at_build_without_a_database():
    image = image_of(dockerfile())
    assert image.collectstatic[-2:] == ["collectstatic", "--noinput"]
    assert image.environment["ZEROMEMORY_STATIC_ROOT"].startswith("/app/")
    assert "DATABASE_URL" in image.collectstatic_env  # set, so manage.py starts no embedded services at build


def test_the_image_installs_the_production_wheel_only():
    source = dockerfile()
    assert "pip wheel --no-cache-dir --no-deps" in source and "[dev]" not in source
    copied = re.findall(r"^COPY\s+(?!--from)(\S+)", source, flags=re.MULTILINE)
    assert "tests" not in copied and not any("devtools" in path for path in copied)
    assert "zeromem/devtools" in (ROOT / ".dockerignore").read_text().split()
