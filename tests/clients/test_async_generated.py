"""The asyncio client is generated from the blocking one (clients/python/scripts/gen_async.py), so they cannot
drift: the committed _async.py is what the generator makes of _sync.py, and the generator turns the shapes a new
method takes (a call, a call that may answer None, a method over another, a loop over pages) into their async form."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType

import pytest
from zeromem_client import AsyncZeromem, Zeromem

SCRIPT = Path(__file__).resolve().parents[2] / "clients/python/scripts/gen_async.py"


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_async", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_the_committed_async_client_is_what_the_generator_makes_of_the_sync_one(gen: ModuleType) -> None:
    assert gen.ASYNC.read_text() == gen.generate(gen.SYNC.read_text()), (
        "zeromem_client/_async.py is stale: run python clients/python/scripts/gen_async.py")
    assert gen.main(["--check"]) == 0


def test_both_clients_have_the_same_methods_with_the_same_parameters() -> None:
    def public(cls: type) -> dict[str, list[str]]:
        return {name: list(inspect.signature(fn).parameters) for name, fn in vars(cls).items()
                if callable(fn) and not name.startswith("_")}

    assert public(AsyncZeromem) == public(Zeromem)
    assert inspect.iscoroutinefunction(AsyncZeromem.search) and not inspect.iscoroutinefunction(AsyncZeromem.list)


NEW_METHODS = '''
    def put(self, key: str, content: str, *, user_id: str) -> Memory:
        return self._send(ops.update(key, content))

    def get_by_key(self, key: str) -> Memory | None:
        try:
            return self._send(ops.get(key))
        except NotFoundError:
            return None

    def replace(self, key: str, content: str) -> Memory:
        self.delete(key)
        return self.put(key, content, user_id="u")

    def count(self, *, user_id: str) -> int:
        total = 0
        for _ in self.mine(user_id=user_id):
            total += 1
        return total

    def mine(self, *, user_id: str) -> Iterator[Memory]:
        return self.list(user_id=user_id)

    # --- sending'''


def test_methods_added_to_the_sync_client_come_out_async(gen: ModuleType) -> None:
    sync = gen.SYNC.read_text().replace("\n    # --- sending", NEW_METHODS, 1)
    made = {node.name: node for node in ast.walk(ast.parse(gen.generate(sync)))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert all(isinstance(made[name], ast.AsyncFunctionDef) for name in ("put", "get_by_key", "replace", "count"))
    awaited = {ast.unparse(node.value.func) for node in ast.walk(made["replace"]) if isinstance(node, ast.Await)
               and isinstance(node.value, ast.Call)}
    assert awaited == {"self.delete", "self.put"}
    assert any(isinstance(node, ast.AsyncFor) for node in ast.walk(made["count"]))
    assert any(isinstance(node, ast.Await) for node in ast.walk(made["get_by_key"]))
    assert isinstance(made["list"], ast.FunctionDef) and isinstance(made["mine"], ast.FunctionDef)  # async iterators
    assert "-> AsyncIterator[Memory]" in ast.unparse(made["mine"])


def test_a_call_it_cannot_translate_fails_loudly(gen: ModuleType) -> None:
    nested = NEW_METHODS.replace("return self._send(ops.get(key))", "return (lambda: self._send(ops.get(key)))()")
    with pytest.raises(gen.GenerationError, match="lambda"):
        gen.generate(gen.SYNC.read_text().replace("\n    # --- sending", nested, 1))
    listed = NEW_METHODS.replace("return self.list(user_id=user_id)", "return [m for m in self.list(user_id=user_id)]")
    with pytest.raises(gen.GenerationError, match="async iterator"):
        gen.generate(gen.SYNC.read_text().replace("\n    # --- sending", listed, 1))
    with pytest.raises(gen.GenerationError, match="time.sleep"):
        gen.generate(gen.SYNC.read_text().replace("= time.sleep", "= sleep_somehow"))
