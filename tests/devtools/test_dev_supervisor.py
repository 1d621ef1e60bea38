"""`make dev` keeps its worker and beat up: one that exits is restarted after a backoff, its log appended to, while
the web server's exit still stops the stack. Real processes; the supervisor's clock is the test's."""

from __future__ import annotations

import os
import sys

from tests.conftest import wait_until
from zeromem.devtools.management.commands.dev import log_mark
from zeromem.devtools.proof.processes import RESTART_DELAYS, Managed, Supervisor


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def crashing(tmp_path, name="worker"):
    """A process that writes a line and exits with status 3, as a worker that lost its broker for good does."""
    code = "import os, sys; print('up', os.getpid(), file=sys.stderr); sys.exit(3)"
    return Managed([sys.executable, "-c", code], dict(os.environ), tmp_path / f"{name}.log")


def test_a_worker_that_exits_is_restarted_after_a_backoff_and_its_log_appended(tmp_path):
    clock, said = Clock(), []
    worker = crashing(tmp_path).start()
    first_pid = worker.pid
    supervisor = Supervisor(processes={"worker": worker}, restartable={"worker"}, clock=clock,
                            say=lambda name, line: said.append(line))
    assert wait_until(lambda: not worker.running(), 30)
    assert supervisor.tick() == []
    assert said == [f"worker exited with status 3 after 0 s; restarting it in 1 s (see {worker.log})"]
    assert supervisor.tick() == [] and worker.pid == first_pid  # not yet due
    clock.now += RESTART_DELAYS[0]
    assert supervisor.tick() == []
    assert worker.pid != first_pid and said[-1] == f"worker restarted (pid {worker.pid})"
    assert wait_until(lambda: not worker.running(), 30)
    assert worker.log.read_text().splitlines() == [f"up {first_pid}", f"up {worker.pid}"]  # both runs' output


def test_the_backoff_grows_while_it_keeps_exiting_and_starts_afresh_after_a_healthy_run(tmp_path):
    clock, said = Clock(), []
    worker = crashing(tmp_path)
    supervisor = Supervisor(processes={"worker": worker.start()}, restartable={"worker"}, clock=clock,
                            say=lambda name, line: said.append(line))
    delays = []
    for _ in range(len(RESTART_DELAYS) + 1):
        assert wait_until(lambda: not worker.running(), 30)
        supervisor.tick()
        delays.append(float(said[-1].split("restarting it in ")[1].split(" s")[0]))
        clock.now += delays[-1]
        supervisor.tick()
    assert delays == [*RESTART_DELAYS, RESTART_DELAYS[-1]]  # bounded: the last delay repeats
    clock.now += 3600  # this run stayed up an hour
    assert wait_until(lambda: not worker.running(), 30)
    supervisor.tick()
    assert "restarting it in 1 s" in said[-1]


def test_the_web_servers_exit_is_reported_not_restarted(tmp_path):
    web = crashing(tmp_path, "web").start()
    supervisor = Supervisor(processes={"web": web}, restartable={"worker", "beat"}, say=lambda name, line: None)
    assert wait_until(lambda: not web.running(), 30)
    assert supervisor.tick() == ["web"]


def test_a_new_make_dev_appends_to_the_logs_it_points_at(tmp_path):
    log = tmp_path / "worker.log"
    log.write_text("Traceback of the crash the error message pointed at\n")
    log_mark(log, "make dev starts it")
    assert log.read_text().startswith("Traceback of the crash")
    assert "make dev starts it" in log.read_text().splitlines()[-1]
