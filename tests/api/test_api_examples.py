"""docs/API.md, run: every example request is sent in order through the real API on one tenant, and every answer
must have the documented status and every key shown, with the values shown wherever they are literal.

The format (docs/API.md, "How to read them"): a fenced `http` block with the request (`METHOD /path`, optional
header lines, a blank line, a JSON body), then a fenced `http` block with the answer (`HTTP/1.1 <status> …`, a
blank line, the JSON body). In answers, a bare `…` is any value (closing a list: and maybe more items; closing an
object: and more keys), `…` inside a string is any text, and `"{name}"` binds the value for later requests (or,
once bound, must equal it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from zeromem.api.routes import api as ninja_api

DOC = Path(__file__).resolve().parents[2] / "docs" / "API.md"
BLOCK = re.compile(r"^```http\n(.*?)^```$", re.DOTALL | re.MULTILINE)
REQUEST_LINE = re.compile(r"(GET|POST|PUT|PATCH|DELETE) (/\S*)")
STATUS_LINE = re.compile(r"HTTP/1\.1 (\d{3})\b.*")
PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
ANY = "\x00any"  # a bare … : any value
MORE = "\x00more"  # a bare … closing a list: and maybe more items

pytestmark = [pytest.mark.usefixtures("hash_embedder"), pytest.mark.django_db(transaction=True)]


@dataclass
class Example:
    method: str
    path: str
    headers: dict[str, str]
    body: str
    status: int
    answer: Any
    line: int

    def __str__(self) -> str:
        return f"docs/API.md:{self.line} {self.method} {self.path}"


@dataclass
class Run:
    """The values bound so far by `"{name}"` in documented answers."""

    bound: dict[str, Any] = field(default_factory=dict)

    def substitute(self, text: str) -> str:
        return PLACEHOLDER.sub(lambda m: str(self.bound[m.group(1)]) if m.group(1) in self.bound else m.group(0),
                               text)

    def match(self, documented: Any, real: Any, where: str) -> None:
        if documented == ANY:
            return
        if isinstance(documented, str) and (name := PLACEHOLDER.fullmatch(documented)):
            if name.group(1) in self.bound:
                assert real == self.bound[name.group(1)], f"{where}: {real!r} is not {{{name.group(1)}}}"
            else:
                self.bound[name.group(1)] = real
        elif isinstance(documented, dict):
            assert isinstance(real, dict), f"{where}: {real!r} is not an object"
            for key, value in documented.items():
                assert key in real, f"{where}: no key {key!r} in {sorted(real)}"
                self.match(value, real[key], f"{where}.{key}")
        elif isinstance(documented, list):
            self.match_list(documented, real, where)
        elif isinstance(documented, str) and "…" in documented:
            pattern = ".*".join(re.escape(part) for part in documented.split("…"))
            assert isinstance(real, str) and re.fullmatch(pattern, real, re.DOTALL), f"{where}: {real!r}"
        else:
            assert real == documented and isinstance(real, bool) == isinstance(documented, bool), (
                f"{where}: {real!r}, documented {documented!r}")

    def match_list(self, documented: list[Any], real: Any, where: str) -> None:
        more = bool(documented) and documented[-1] == MORE
        items = documented[:-1] if more else documented
        assert isinstance(real, list), f"{where}: {real!r} is not a list"
        assert len(real) >= len(items) if more else len(real) == len(items), (
            f"{where}: {len(real)} items, documented {len(items)}{' or more' if more else ''}")
        for i, (doc_item, real_item) in enumerate(zip(items, real, strict=False)):
            self.match(doc_item, real_item, f"{where}[{i}]")


def relaxed_json(text: str) -> Any:
    """JSON with bare `…`: as a value it is ANY; closing an object it is dropped (other keys may follow); closing a
    list it is MORE."""
    out: list[str] = []
    in_string = escaped = False
    for i, char in enumerate(text):
        if in_string:
            out.append(char)
            in_string = escaped or char != '"'
            escaped = not escaped and char == "\\"
        elif char == '"':
            in_string = True
            out.append(char)
        elif char != "…":
            out.append(char)
        elif "".join(out).rstrip().endswith(":"):
            out.append(json.dumps(ANY))
        elif text[i + 1:].lstrip().startswith("}"):
            while out and out[-1].isspace():
                out.pop()
            if out and out[-1] == ",":
                out.pop()
        else:
            out.append(json.dumps(MORE if text[i + 1:].lstrip().startswith("]") else ANY))
    return json.loads("".join(out))


def examples() -> list[Example]:
    text = DOC.read_text()
    blocks = [(text.count("\n", 0, m.start()) + 1, m.group(1).rstrip("\n")) for m in BLOCK.finditer(text)]
    assert blocks and len(blocks) % 2 == 0, "every request block is followed by its answer block"
    found = []
    for (line, request), (_, answer) in zip(blocks[::2], blocks[1::2], strict=True):
        request_head, _, request_body = request.partition("\n\n")
        first, *header_lines = request_head.splitlines()
        answer_head, _, answer_body = answer.partition("\n\n")
        request_line, status_line = REQUEST_LINE.fullmatch(first), STATUS_LINE.fullmatch(answer_head.strip())
        assert request_line and status_line, f"docs/API.md:{line}: a request, then its answer"
        headers = dict(h.split(": ", 1) for h in header_lines)
        found.append(Example(method=request_line.group(1), path=request_line.group(2), headers=headers,
                             body=request_body.strip(), status=int(status_line.group(1)),
                             answer=relaxed_json(answer_body) if answer_body.strip() else None, line=line))
    return found


def operations() -> set[tuple[str, str]]:
    schema = ninja_api.get_openapi_schema(path_prefix="")
    return {(method.upper(), path) for path, item in schema["paths"].items() for method in item}


def documented_operation(example: Example) -> tuple[str, str] | None:
    path = example.path.split("?")[0]
    # Literal paths first: /memories/by-key is not /memories/{memory_id}.
    for method, template in sorted(operations(), key=lambda operation: "{" in operation[1]):
        pattern = PLACEHOLDER.sub("[^/]+", re.escape(template).replace(r"\{", "{").replace(r"\}", "}"))
        if method == example.method and re.fullmatch(pattern, path):
            return method, template
    return None


def test_the_relaxed_json_reads_ellipses_as_documented():
    assert relaxed_json('{"a": …, "b": [1, …], "c": {…}, "d": "x…", "e": {"f": …}, …}') == {
        "a": ANY, "b": [1, MORE], "c": {}, "d": "x…", "e": {"f": ANY}}


def test_an_answer_that_drifted_from_its_example_fails():
    documented = relaxed_json('{"id": "{memory_id}", "created": 4, "ids": [1, …], "note": "a…z"}')
    Run().match(documented, {"id": "x", "created": 4, "ids": [1, 2], "note": "abcz", "extra": True}, "ok")
    drifted = [{"id": "x", "ids": [1], "note": "az"},  # a key gone
               {"id": "x", "created": 5, "ids": [1], "note": "az"},  # a literal changed
               {"id": "x", "created": 4, "ids": [], "note": "az"},  # fewer items
               {"id": "x", "created": 4, "ids": [1], "note": "za"}]  # other text around the …
    for answer in drifted:
        with pytest.raises(AssertionError):
            Run().match(documented, answer, "drifted")
    run = Run(bound={"memory_id": "x"})
    with pytest.raises(AssertionError):
        run.match(documented, {"id": "y", "created": 4, "ids": [1], "note": "az"}, "another id")


def test_every_operation_of_the_api_has_an_example():
    documented = {documented_operation(example) for example in examples()}
    assert None not in documented, "an example for a path the API does not have"
    assert documented == operations()


def test_every_example_answers_as_documented(api, eager):
    run = Run()
    for example in examples():
        body = run.substitute(example.body)
        response = api.client.generic(example.method, api.base + run.substitute(example.path), body,
                                      content_type="application/json", headers={**api.headers, **example.headers})
        content = response.content.decode()
        assert response.status_code == example.status, f"{example}: {response.status_code} {content}"
        if example.answer is not None:
            run.match(example.answer, json.loads(content), f"{example}: answer")
