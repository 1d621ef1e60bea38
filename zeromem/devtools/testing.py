"""pytest plugin (loaded with `-p zeromem.devtools.testing` before pytest-django reads settings).

Without DATABASE_URL it starts a throwaway PostgreSQL + Valkey on a temporary data dir and a free broker
port, exports their URLs (so a Celery worker started by a test inherits them), and removes everything when
the session ends: no process is left behind.
"""

from __future__ import annotations

import atexit
import contextlib
import os
from typing import Any

_services: contextlib.ExitStack | None = None


def _start() -> None:
    global _services
    from zeromem.devservices import throwaway_services

    _services = contextlib.ExitStack()
    _services.enter_context(throwaway_services()).export()
    atexit.register(_stop)


def _stop() -> None:
    global _services
    if _services is not None:
        _services.close()
        _services = None


if not os.environ.get("DATABASE_URL"):
    _start()


def pytest_unconfigure(config: Any) -> None:
    _stop()
