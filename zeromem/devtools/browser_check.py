"""`make browser-check`: the operator pages rendered once in a real headless Chromium (Debian's package), with
screenshots under var/browser-check/. Not part of `make test` (it needs the chromium package).

A throwaway database gets the demo scenario (ingest, clustering, reflection); a local WSGI server, started
here and stopped after, serves the admin and its static files with a staff session cookie injected into each
request, so Chromium needs no login form. Nothing is fetched from the internet.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.contrib.auth.models import User
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.wsgi import get_wsgi_application
from django.test import Client

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


@dataclass(frozen=True)
class Page:
    name: str
    path: str
    expect: str  # text the rendered DOM must contain


@dataclass
class Shot:
    name: str
    path: str
    screenshot: str
    bytes: int
    rendered: bool


def chromium_binary() -> str | None:
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve_as(session_key: str) -> Iterator[str]:
    """The project's WSGI app on 127.0.0.1 with the staff session cookie added to every request."""
    app = StaticFilesHandler(get_wsgi_application())

    def with_session(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        environ["HTTP_COOKIE"] = f"sessionid={session_key}"
        return app(environ, start_response)

    server = make_server("127.0.0.1", 0, with_session, server_class=_ThreadingServer, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def staff_session() -> str:
    user, _ = User.objects.get_or_create(username="browser-check", defaults={"is_staff": True, "is_superuser": True})
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def _chromium(binary: str, profile: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def screenshot_pages(pages: list[Page], *, out: Path, binary: str, say: Callable[[str], None]) -> list[Shot]:
    out.mkdir(parents=True, exist_ok=True)
    shots = []
    with serve_as(staff_session()) as base, tempfile.TemporaryDirectory(prefix="zm-chromium-") as profile:
        for page in pages:
            target = out / f"{page.name}.png"
            target.unlink(missing_ok=True)
            dom = _chromium(binary, profile, "--dump-dom", base + page.path).stdout
            _chromium(binary, profile, "--window-size=1400,2000", f"--screenshot={target}", base + page.path)
            size = target.stat().st_size if target.exists() else 0
            shots.append(Shot(page.name, page.path, str(target), size, page.expect in dom))
            say(f"  {page.name:<10} {page.path:<60} {size:>9,} bytes  {'ok' if page.expect in dom else 'MISSING'}")
    return shots
