"""Authenticated API keys kept a few seconds per web process (ZEROMEMORY_KEY_CACHE_SECONDS), so a request usually
reads nothing to authenticate. A revocation clears this process's keys at once; other processes refuse the key
once their copy expires."""

from __future__ import annotations

import threading
import time

from django.conf import settings

from zeromem.models import ApiKey

SIZE = 10_000
_entries: dict[str, tuple[float, ApiKey]] = {}  # secret hash → (expires, key)
_lock = threading.Lock()  # threaded web workers


def get(hashed: str) -> ApiKey | None:
    with _lock:
        expires, key = _entries.get(hashed, (0.0, None))
    return key if expires > time.monotonic() else None


def put(hashed: str, key: ApiKey) -> None:
    with _lock:
        if len(_entries) >= SIZE:
            _entries.clear()  # crude and rare: a process seldom sees 10,000 keys within seconds
        _entries[hashed] = (time.monotonic() + settings.ZEROMEMORY_KEY_CACHE_SECONDS, key)


def clear() -> None:
    with _lock:
        _entries.clear()
