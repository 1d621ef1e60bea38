"""`make browser-check`: the operator pages rendered once in a real headless Chromium (Debian's package), with
screenshots under var/browser-check/. Not part of `make test` (it needs the chromium package).

A throwaway database gets the demo scenario (ingest, clustering, reflection). gunicorn serves it as in production
(`zeromem.wsgi`, the static files collected into a STATIC_ROOT and served by WhiteNoise, no test static handler);
Chromium reaches it through a small local proxy that adds a staff session cookie to each request, so it needs no
login form (headless Chromium takes no cookie on its command line). Everything started here is stopped after.
Nothing is fetched from the internet.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from wsgiref.util import is_hop_by_hop

import httpx
from django.contrib.auth.models import User
from django.test import Client

from zeromem.devservices import free_port
from zeromem.devtools.proof.processes import child_env, gunicorn, run_once

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


@dataclass(frozen=True)
class Page:
    name: str
    path: str
    expect: str  # text the rendered DOM must contain
    # A form to submit from `path` (to `action`, with the page's CSRF token), as an operator's click would: the
    # page the POST redirects to is what is shot, its one-time messages included.
    form: dict[str, str] | None = None
    action: str = ""


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
def production_server(logs: Path) -> Iterator[str]:
    """gunicorn on this database, static files collected into a temporary STATIC_ROOT and served by WhiteNoise."""
    logs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="zm-static-") as static_root:
        env = child_env(ZEROMEMORY_STATIC_ROOT=static_root)
        if run_once([sys.executable, "manage.py", "collectstatic", "--noinput"], env, logs / "collectstatic.log",
                    timeout=300) != 0:
            raise RuntimeError(f"collectstatic failed: see {logs / 'collectstatic.log'}")
        port = free_port()
        server = gunicorn(env, logs / "gunicorn.log", port=port).start()
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_answering(base, server.running)
            yield base
        finally:
            server.stop()


def _wait_answering(base: str, running: Callable[[], bool], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and running():
        try:
            httpx.get(f"{base}/admin/login/", timeout=5, trust_env=False)
            return
        except httpx.TransportError:
            time.sleep(0.3)
    raise RuntimeError(f"gunicorn did not answer at {base}")


@contextmanager
def serve_as(session_key: str, upstream: str) -> Iterator[str]:
    """A local proxy in front of `upstream` that adds the staff session cookie to every request."""
    client = httpx.Client(base_url=upstream, trust_env=False, timeout=60)

    def forward(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        query = environ.get("QUERY_STRING", "")
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        # The client's own cookies (CSRF token, one-time messages) travel with the staff session.
        cookies = "; ".join(c for c in (f"sessionid={session_key}", environ.get("HTTP_COOKIE", "")) if c)
        headers = {"Cookie": cookies, "Accept": environ.get("HTTP_ACCEPT", "*/*"),
                   **({"Content-Type": environ["CONTENT_TYPE"]} if environ.get("CONTENT_TYPE") else {})}
        answer = client.request(environ["REQUEST_METHOD"], environ["PATH_INFO"] + (f"?{query}" if query else ""),
                                content=body, headers=headers)
        # httpx has already decoded the body: its length and encoding headers no longer apply.
        start_response(f"{answer.status_code} {answer.reason_phrase}",
                       [(name, value) for name, value in answer.headers.items()
                        if not is_hop_by_hop(name) and name.lower() not in {"content-encoding", "content-length"}])
        return [answer.content]

    server = make_server("127.0.0.1", 0, forward, server_class=_ThreadingServer, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        client.close()


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
    with production_server(out) as upstream, serve_as(staff_session(), upstream) as base, \
            tempfile.TemporaryDirectory(prefix="zm-chromium-") as profile:
        for page in pages:
            target = out / f"{page.name}.png"
            target.unlink(missing_ok=True)
            url = base + page.path if page.form is None else submitted(page, base, out)
            dom = _chromium(binary, profile, "--dump-dom", url).stdout
            _chromium(binary, profile, "--window-size=1400,2000", f"--screenshot={target}", url)
            size = target.stat().st_size if target.exists() else 0
            shots.append(Shot(page.name, page.path, str(target), size, page.expect in dom))
            say(f"  {page.name:<10} {page.path:<60} {size:>9,} bytes  {'ok' if page.expect in dom else 'MISSING'}")
    return shots


_CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def submitted(page: Page, base: str, out: Path) -> str:
    """Submit the page's form through the proxy and keep the page it leads to as a file (with a <base> so its
    styles load from the server): a file:// URL Chromium shows as the operator saw it."""
    assert page.form is not None
    with httpx.Client(base_url=base, trust_env=False, timeout=120, follow_redirects=True) as browser:
        token = _CSRF_FIELD.search(browser.get(page.path).text)
        if token is None:
            raise RuntimeError(f"{page.path} has no form to submit")
        answer = browser.post(page.action, data={**page.form, "csrfmiddlewaretoken": token.group(1)},
                              headers={"Referer": base + page.path})
    saved = out / f"{page.name}.html"
    saved.write_text(answer.text.replace("<head>", f'<head><base href="{base}/">', 1))
    return saved.resolve().as_uri()
