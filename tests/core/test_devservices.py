"""Embedded services of two checkouts on one machine never cross: own broker port, own database, and a port held
by anything else is an error, never adopted."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis

from zeromem.devservices import STATE_FILE, EmbeddedServices, EmbeddedValkey, ServiceConflict


@pytest.fixture
def checkouts() -> Iterator[tuple[Path, Path]]:
    """Two var directories, as two clones of the repository would have (short paths: unix socket limit)."""
    dirs = (Path(tempfile.mkdtemp(prefix="zm-a-", dir="/tmp")), Path(tempfile.mkdtemp(prefix="zm-b-", dir="/tmp")))
    yield dirs
    for var_dir in dirs:
        EmbeddedServices(var_dir).stop()
        shutil.rmtree(var_dir, ignore_errors=True)


def test_two_checkouts_started_side_by_side_get_their_own_broker_and_database(checkouts):
    first, second = (EmbeddedServices(var_dir).start() for var_dir in checkouts)

    assert first.redis_url != second.redis_url and first.database_url != second.database_url
    redis.Redis.from_url(first.redis_url).set("owner", "first")
    assert redis.Redis.from_url(second.redis_url).get("owner") is None
    with psycopg.connect(first.database_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE only_in_first (id int)")
    with psycopg.connect(second.database_url) as conn:
        assert conn.execute("SELECT to_regclass('only_in_first')").fetchone() == (None,)
    for var_dir, urls in zip(checkouts, (first, second), strict=True):
        state = json.loads((var_dir / STATE_FILE).read_text())
        assert state["redis_url"] == urls.redis_url and state["database_url"] == urls.database_url
        assert urls.redis_url.endswith(f":{state['valkey_port']}/0")


def test_starting_again_finds_its_own_running_services(checkouts):
    services = EmbeddedServices(checkouts[0])
    urls = services.start()
    pids = services.status()

    assert EmbeddedServices(checkouts[0]).start() == urls
    assert EmbeddedServices(checkouts[0]).status() == pids


def test_a_recorded_port_taken_by_another_server_is_an_error_not_adopted(checkouts):
    foreign = EmbeddedValkey(checkouts[1])
    foreign.start()
    state_file = checkouts[0] / STATE_FILE
    state_file.parent.mkdir(parents=True)
    state_file.write_text(json.dumps({"valkey_port": foreign.port}))

    with pytest.raises(ServiceConflict, match=f"port {foreign.port}.*taken by another process"):
        EmbeddedServices(checkouts[0]).start()
    assert EmbeddedServices(checkouts[0]).running_urls() is None


def test_a_server_answering_with_another_pid_is_refused(checkouts):
    foreign = EmbeddedValkey(checkouts[1])
    foreign.start()
    ours = EmbeddedValkey(checkouts[0], port=foreign.port)
    ours.pid_file.parent.mkdir(parents=True)
    with subprocess.Popen(["sleep", "30"]) as impostor:  # a live process that is not the server on that port
        ours.pid_file.write_text(str(impostor.pid))
        with pytest.raises(ServiceConflict, match="another server"):
            ours.start()
        impostor.kill()
    ours.pid_file.unlink()
