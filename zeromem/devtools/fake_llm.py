"""A local OpenAI-compatible chat-completions server for tests and `bench reflection`, so the real litellm path
runs end to end without a provider. It counts the requests and the prompt tokens it receives.

By default it answers like a model would: it reads the memories out of the reflection prompt and replies with
the extractive engine's findings as JSON. Tests script odd replies (`Reply`: a status, a body, a delay) that are
served first, in order. Tokens are counted as words and punctuation marks (regex `\\w+|[^\\w\\s]`), which is at
least the BPE token count for English text: the figures it reports are conservative.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from consolidation.domain.insights import Source, parts_from_messages
from consolidation.domain.reflection_rules import reflect_extractive

_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


@dataclass(frozen=True)
class Reply:
    content: str | None = None  # the assistant message; None = the default (extractive) answer
    status: int = 200
    delay: float = 0.0  # seconds before answering (timeouts)


def extractive_answer(messages: list[dict[str, Any]]) -> str:
    """One part per subject, with the extractive engine's items citing namespaced ids ("A3")."""
    answer = {}
    for key, subject, memories in parts_from_messages(messages):
        reflection = reflect_extractive(subject, [Source(m["id"], m["text"], datetime.fromisoformat(m["date"]))
                                                  for m in memories])
        answer[key] = {"items": [{"category": i.category, "statement": i.statement, "confidence": i.confidence,
                                  "source_ids": [f"{key}{n}" for n in i.sources]} for i in reflection.insights],
                       "summary": reflection.summary}
    return json.dumps(answer)


@dataclass
class FakeLLM:
    """`with FakeLLM() as server:` then point litellm at `server.api_base` with model `openai/<any name>`."""

    script: list[Reply] = field(default_factory=list)
    answer: Callable[[list[dict[str, Any]]], str] = extractive_answer
    requests: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def api_base(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeLLM:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], float]:
        messages = body.get("messages", [])
        prompt = count_tokens(" ".join(str(m.get("content", "")) for m in messages))
        with self._lock:
            self.requests.append(body)
            self.prompt_tokens += prompt
            reply = self.script.pop(0) if self.script else Reply()
        if reply.status != 200:
            return reply.status, {"error": {"message": f"scripted {reply.status}", "type": "server_error"}}, \
                reply.delay
        content = reply.content if reply.content is not None else self.answer(messages)
        completion = count_tokens(content)
        with self._lock:
            self.completion_tokens += completion
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion}}, reply.delay


def _handler_for(server: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            status, payload, delay = server.respond(body)
            if delay:
                time.sleep(delay)
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
