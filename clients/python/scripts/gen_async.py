"""Writes the asyncio client (zeromem_client/_async.py) from the blocking one (zeromem_client/_sync.py), so that the
two cannot drift: edit _sync.py, then run

    python clients/python/scripts/gen_async.py           # rewrites _async.py
    python clients/python/scripts/gen_async.py --check   # exits 1 when _async.py is not what _sync.py gives

(tests/clients/test_async_generated.py runs the check in the suite).

What changes, read from _sync.py's syntax tree rather than its text where a new method can appear:
- a call that does I/O or waits (AWAITED_CALLS) or calls a method that became async is awaited, and a method
  making such a call becomes `async def`;
- a method returning a page iterator (`return self._pages(...)`) stays a plain method returning an AsyncIterator;
  `for ... in` over one becomes `async for`, and `yield from` a loop of `yield`s;
- the class's scaffolding (imports, the httpx client, sleep, the context-manager methods, names, docstrings) is
  rewritten by the fixed replacements in SCAFFOLD, each of which must match (a changed line fails loudly here instead
  of slipping through).
The result is formatted with ruff (the project's pinned version and line length).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "zeromem_client"
SYNC = PACKAGE / "_sync.py"
ASYNC = PACKAGE / "_async.py"

HEADER = "# Generated from _sync.py by clients/python/scripts/gen_async.py: edit _sync.py and re-run it.\n"
MODULE_DOC = '"""`AsyncZeromem`, the asyncio client: the same calls as `Zeromem`, sent with httpx.AsyncClient."""'
CLASS_DOC = ('"""`Zeromem` for asyncio: the same methods, awaited (`list()` and `runs()` are async iterators). Pass\n'
             '    `http_client` to bring your own httpx.AsyncClient; it is then yours to close."""')

# Calls that do I/O or wait in the blocking client: awaited in the async one.
AWAITED_CALLS = {"self._send", "self._attempt", "self._http.request", "self._http.close", "self._sleep", "self.close"}
# The method that yields pages: what returns it gives an async iterator.
PAGES = "self._pages"

SCAFFOLD: list[tuple[str, str]] = [
    ("import builtins\nimport time\n", "import asyncio\nimport builtins\n"),
    ("from collections.abc import Callable, Iterable, Iterator\n",
     "from collections.abc import AsyncIterator, Awaitable, Callable, Iterable\n"),
    ("class Zeromem:", "class AsyncZeromem:"),
    ("http_client: httpx.Client | None", "http_client: httpx.AsyncClient | None"),
    ("else httpx.Client()", "else httpx.AsyncClient()"),
    ("self._sleep: Callable[[float], None] = time.sleep",
     "self._sleep: Callable[[float], Awaitable[None]] = asyncio.sleep"),
    ('f"Zeromem(base_url=', 'f"AsyncZeromem(base_url='),
    ("await self._http.close()", "await self._http.aclose()"),
    ("def __enter__(self) -> Zeromem:", "async def __aenter__(self) -> AsyncZeromem:"),
    ("def __exit__(", "def __aexit__("),
    ("Iterator[", "AsyncIterator["),
]


class GenerationError(Exception):
    """_sync.py uses something this generator cannot translate; extend it (or write the method differently)."""


@dataclass(frozen=True)
class Edit:
    start: int  # byte offsets into _sync.py
    end: int
    text: str


def dotted(node: ast.expr) -> str:
    """`self._http.request` for the attribute chain of a call's function; "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def own_nodes(function: ast.FunctionDef) -> Iterator[ast.AST]:
    """The nodes of a method's body, not those of the functions and lambdas inside it."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in ast.iter_child_nodes(node)
                     if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))


def nested_nodes(function: ast.FunctionDef) -> Iterator[ast.AST]:
    """The nodes inside the lambdas and functions of a method's body (where nothing can be awaited)."""
    for node in ast.walk(function):
        if node is not function and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from ast.walk(node)


def client_class(tree: ast.Module) -> ast.ClassDef:
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Zeromem"]
    if len(classes) != 1:
        raise GenerationError("_sync.py must define exactly one class Zeromem")
    return classes[0]


def methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in cls.body if isinstance(node, ast.FunctionDef)}


def returns(function: ast.FunctionDef, names: set[str]) -> bool:
    """Whether the method returns a call of one of `names` (e.g. `return self._pages(...)`)."""
    return any(isinstance(node, ast.Return) and isinstance(node.value, ast.Call)
               and dotted(node.value.func) in names for node in own_nodes(function))


def calls(function: ast.FunctionDef, names: set[str]) -> bool:
    return any(isinstance(node, ast.Call) and dotted(node.func) in names for node in own_nodes(function))


def loops_over(function: ast.FunctionDef, names: set[str]) -> bool:
    """Whether the method iterates (`for`, `yield from`) over a call of one of `names`."""
    for node in own_nodes(function):
        iterated = node.iter if isinstance(node, ast.For) else node.value if isinstance(node, ast.YieldFrom) else None
        if isinstance(iterated, ast.Call) and dotted(iterated.func) in names:
            return True
    return False


def async_methods(cls: ast.ClassDef) -> tuple[set[str], set[str]]:
    """(the calls to await: I/O and every method that becomes async; the calls answering an async iterator: the
    pages and every method returning one). Each grows until nothing changes: a method over an async one is async."""
    found = {f"self.{name}": fn for name, fn in methods(cls).items()}
    iterators = {PAGES}
    while more := {name for name, fn in found.items() if name not in iterators and returns(fn, iterators)}:
        iterators |= more
    awaited = set(AWAITED_CALLS)
    while more := {name for name, fn in found.items() if name not in awaited | iterators
                   and (calls(fn, awaited) or loops_over(fn, iterators))}:
        awaited |= more
    return awaited, iterators


class Rewriter:
    """The edits that turn _sync.py's class into the async one, by position in the source."""

    def __init__(self, source: bytes, tree: ast.Module) -> None:
        self.source = source
        self.lines = [0]
        for line in source.splitlines(keepends=True):
            self.lines.append(self.lines[-1] + len(line))
        self.tree = tree
        self.edits: list[Edit] = []

    def offset(self, line: int, col: int) -> int:
        return self.lines[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        end_line, end_col = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
        return self.offset(node.lineno, node.col_offset), self.offset(end_line, end_col)  # type: ignore[attr-defined]

    def insert(self, node: ast.AST, text: str) -> None:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        self.edits.append(Edit(start, start, text))

    def replace(self, node: ast.AST, text: str) -> None:
        self.edits.append(Edit(*self.span(node), text))

    def run(self) -> str:
        docstring = self.tree.body[0]
        if not (isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)):
            raise GenerationError("_sync.py must start with its docstring")
        self.replace(docstring, MODULE_DOC)
        cls = client_class(self.tree)
        awaited, iterators = async_methods(cls)
        for function in methods(cls).values():
            self.method(function, awaited, iterators)
        out = self.source
        for edit in sorted(self.edits, key=lambda e: (e.start, e.end), reverse=True):
            out = out[:edit.start] + edit.text.encode() + out[edit.end:]
        return out.decode()

    def method(self, function: ast.FunctionDef, awaited: set[str], iterators: set[str]) -> None:
        if function.name == "__enter__":
            return  # a scaffold replacement
        for node in nested_nodes(function):
            if isinstance(node, ast.Call) and dotted(node.func) in awaited:
                raise GenerationError(f"{function.name}: {dotted(node.func)}() inside a lambda or nested function "
                                      "cannot be awaited; call it in the method's own body")
        becomes_async = calls(function, awaited) or loops_over(function, iterators)
        for node in own_nodes(function):
            self.node(function, node, awaited, iterators)
        if becomes_async:
            self.insert(function, "async ")

    def node(self, function: ast.FunctionDef, node: ast.AST, awaited: set[str], iterators: set[str]) -> None:
        if isinstance(node, ast.Call) and dotted(node.func) in awaited:
            self.insert(node, "await ")
        elif isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and dotted(node.iter.func) in iterators:
            self.insert(node, "async ")
        elif isinstance(node, ast.YieldFrom):
            self.yield_from(node)
        elif isinstance(node, ast.Call) and dotted(node.func) in iterators and not self.returned_or_looped(
                function, node):
            raise GenerationError(f"{function.name}: {dotted(node.func)}() is an async iterator in the async "
                                  "client; only `return` it or loop over it with `for`")

    def yield_from(self, node: ast.YieldFrom) -> None:
        """`yield from xs` (a statement) becomes `for item in xs: yield item` (no `yield from` in async code)."""
        statement = next((s for s in ast.walk(self.tree) if isinstance(s, ast.Expr) and s.value is node), None)
        if statement is None:
            raise GenerationError("`yield from` only as a statement of its own")
        indent = " " * statement.col_offset
        iterated = self.source[slice(*self.span(node.value))].decode()
        self.replace(statement, f"for item in {iterated}:\n{indent}    yield item")

    @staticmethod
    def returned_or_looped(function: ast.FunctionDef, call: ast.Call) -> bool:
        return any((isinstance(n, ast.Return) and n.value is call) or (isinstance(n, ast.For) and n.iter is call)
                   for n in own_nodes(function))


def scaffold(text: str) -> str:
    for old, new in SCAFFOLD:
        if old not in text:
            raise GenerationError(f"_sync.py no longer contains {old!r}: update SCAFFOLD in gen_async.py")
        text = text.replace(old, new)
    return text


def class_docstring(text: str) -> str:
    """The async class's own docstring in place of the blocking one's."""
    tree = ast.parse(text)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "AsyncZeromem")
    doc = cls.body[0]
    if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)):
        raise GenerationError("class Zeromem must start with its docstring")
    lines = text.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:doc.lineno - 1]) + doc.col_offset
    end = sum(len(line) for line in lines[:doc.end_lineno - 1]) + doc.end_col_offset  # type: ignore[operator]
    return text[:start] + CLASS_DOC + text[end:]


def ruff_format(text: str) -> str:
    done = subprocess.run([sys.executable, "-m", "ruff", "format", "--stdin-filename", str(ASYNC), "-"],
                          input=text, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise GenerationError(f"ruff format refused the generated code: {done.stderr}")
    return done.stdout


def generate(sync_source: str) -> str:
    """The async client's module for the blocking client's source."""
    source = sync_source.encode()
    rewritten = Rewriter(source, ast.parse(source)).run()
    text = class_docstring(scaffold(rewritten))
    ast.parse(text)  # fails here, not at import time, if a rewrite broke the syntax
    return ruff_format(HEADER + text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if _async.py differs from the generated code")
    args = parser.parse_args(argv)
    wanted = generate(SYNC.read_text())
    if args.check:
        if ASYNC.read_text() != wanted:
            print(f"{ASYNC} is not what {SYNC.name} generates: run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    ASYNC.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
