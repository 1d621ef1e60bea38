"""The cost readings benches take from processes: CPU of a process tree, exited children included."""

from __future__ import annotations

import os
import subprocess
import sys

from zeromem.devtools.bench.costs import tree_cpu_s

BURN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"


def test_a_process_tree_keeps_the_cpu_of_children_that_have_exited():
    before = tree_cpu_s(os.getpid())
    subprocess.run([sys.executable, "-c", BURN], check=True)  # started, burnt 0.3 s of CPU, exited, reaped

    assert tree_cpu_s(os.getpid()) - before >= 0.3


def test_a_process_that_is_gone_costs_nothing():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()

    assert tree_cpu_s(child.pid) == 0.0
