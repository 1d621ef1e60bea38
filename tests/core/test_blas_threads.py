"""Every zeromem process computes its matrix products on one BLAS thread: numpy's OpenBLAS otherwise starts one per
core and keeps them spinning after each product, CPU a clustering run paid for nothing (zeromem/__init__.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

BLAS_THREADS = """
import json
{imports}
import numpy
from threadpoolctl import threadpool_info
print(json.dumps([pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]))
"""


def _blas_threads(imports: str) -> list[int]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", BLAS_THREADS.format(imports=imports)], env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return json.loads(out.splitlines()[-1])


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: BLAS starts no second thread to hold back")
def test_numpy_alone_would_use_every_core():
    threads = _blas_threads("")
    assert threads and max(threads) > 1


def test_a_process_that_loads_zeromem_computes_on_one_blas_thread():
    assert _blas_threads("import zeromem") == [1]
