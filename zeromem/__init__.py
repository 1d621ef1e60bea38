import numpy  # noqa: F401 — loads its BLAS library, so that the limit below finds it
from threadpoolctl import threadpool_limits

from zeromem.celery import app as celery_app

# One BLAS thread in every process (web, worker, commands). numpy's OpenBLAS starts a thread per core and, after
# each matrix product, keeps them spinning for a while: on the 2-core machine that thread burned ~140 ms of CPU in
# a 50-memory user's clustering run (0.41 s in all; 0.27 s without it) and took a core from the searches. Every
# product here is small (a batch of vectors), so the extra threads never paid for themselves.
threadpool_limits(limits=1, user_api="blas")

__all__ = ["celery_app"]
