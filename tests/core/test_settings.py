"""Settings fail loudly at start-up on bad values (each case imports the settings in a fresh process)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

LOAD = "import django; django.setup(); from django.conf import settings; print(settings.ZEROMEMORY_SEARCH_CONFIG)"


def load_settings(**env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "zeromem.settings", **env}
    return subprocess.run([sys.executable, "-c", LOAD], env=environment, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("env,message", [
    ({"ZEROMEMORY_EMBEDDING_DIM": "many"}, "ZEROMEMORY_EMBEDDING_DIM must be an integer"),
    ({"ZEROMEMORY_EMBEDDING_DIM": "0"}, "ZEROMEMORY_EMBEDDING_DIM must be between"),
    ({"ZEROMEMORY_EMBEDDING_DIM": "768"}, "builtin:minilm produces 384"),
    ({"ZEROMEMORY_EMBEDDING_WORKERS": "0"}, "ZEROMEMORY_EMBEDDING_WORKERS must be between"),
    ({"ZEROMEMORY_MODEL_CACHE_DIR": "models"}, "ZEROMEMORY_MODEL_CACHE_DIR must be an absolute path"),
    ({"ZEROMEMORY_QUERY_CACHE_SIZE": "-1"}, "ZEROMEMORY_QUERY_CACHE_SIZE must be between"),
    ({"ZEROMEMORY_DEBUG": "maybe"}, "ZEROMEMORY_DEBUG must be a boolean"),
    ({"ZEROMEMORY_SEARCH_CONFIG": "klingon"}, "ZEROMEMORY_SEARCH_CONFIG must be one of"),
    ({"DATABASE_URL": "mysql://db/x", "ZEROMEM_EMBEDDED": "0",
      "ZEROMEMORY_SECRET_KEY": "x" * 40}, "DATABASE_URL must be a postgresql:// URL"),
    ({"REDIS_URL": "amqp://broker"}, "REDIS_URL must be a redis:// URL"),
    ({"ZEROMEMORY_SECRET_KEY": "short"}, "at least 32 characters"),
    ({"DATABASE_URL": "postgresql://db.internal/zeromem", "ZEROMEM_EMBEDDED": "0",
      "ZEROMEMORY_SECRET_KEY": ""}, "ZEROMEMORY_SECRET_KEY must be set"),
    ({"ZEROMEMORY_MAX_METADATA_BYTES": "16k"}, "ZEROMEMORY_MAX_METADATA_BYTES must be an integer"),
    ({"ZEROMEMORY_MAX_METADATA_BYTES": "1"}, "ZEROMEMORY_MAX_METADATA_BYTES must be between"),
    ({"ZEROMEMORY_LLM_TIMEOUT_SECONDS": "0"}, "between 0.1 and 600.0"),
    ({"ZEROMEMORY_RUN_HEARTBEAT_SECONDS": "often"}, "ZEROMEMORY_RUN_HEARTBEAT_SECONDS must be a number"),
    ({"ZEROMEMORY_RUN_STALE_SECONDS": "0"}, "ZEROMEMORY_RUN_STALE_SECONDS must be between"),
    ({"ZEROMEMORY_RUN_HEARTBEAT_SECONDS": "10", "ZEROMEMORY_RUN_STALE_SECONDS": "20"}, "at least 3 heartbeats"),
    ({"ZEROMEMORY_RUN_LEASE_SECONDS": "300"}, "ZEROMEMORY_RUN_LEASE_SECONDS is gone"),
])
def test_a_bad_value_stops_start_up_with_a_clear_message(env, message):
    result = load_settings(**env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr


def test_good_values_load():
    result = load_settings(ZEROMEMORY_SEARCH_CONFIG="simple", ZEROMEMORY_DEBUG="true")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "simple"


def test_a_variable_that_moved_to_the_policy_stops_start_up_and_says_where_it_went():
    result = load_settings(ZEROMEMORY_CLUSTER_COSINE_FLOOR="0.6", ZEROMEMORY_CANARIES="false")
    assert result.returncode != 0 and "ImproperlyConfigured" in result.stderr
    assert ("ZEROMEMORY_CLUSTER_COSINE_FLOOR is no longer read from the environment: it is the policy field "
            'clustering.cosine_floor (default 0.55), set per tenant in Tenant.overrides as {"clustering": '
            '{"cosine_floor": …}}') in result.stderr
    assert "ZEROMEMORY_CANARIES is no longer read from the environment: it is the policy field canaries.enabled" \
        in result.stderr


def test_the_environment_holds_45_settings_at_most_every_algorithm_calibration_is_the_policys():
    source = (Path(__file__).resolve().parents[2] / "zeromem" / "settings.py").read_text()
    read = set(re.findall(r"""(?:env_\w+|os\.environ\.get)\(\s*"(ZEROMEMORY_\w+)\"""", source))
    assert 30 <= len(read) <= 45, sorted(read)
