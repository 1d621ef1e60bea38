"""LangGraph's own store tests, obtained at test time from the Python package index and never copied into this
repository: the sdist of `langgraph-checkpoint-postgres` (pinned version and sha256) ships them in `tests/`.

`pip download` fetches the sdist into var/ once (later runs reuse it), its digest is checked, and the test modules are
loaded from the archive. Their `from tests.conftest import ...` names the upstream package's conftest, not ours: a
module holding what they take from it is in `sys.modules["tests.conftest"]` while they load."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
import types
from pathlib import Path
from typing import Any

PACKAGE = "langgraph-checkpoint-postgres"
VERSION = "3.2.0"  # the release whose store tests run against ZeromemStore (the dev extra pins the same one)
SHA256 = "dffef0e6822d7c614019f7f2c4bdbef42859746aee2d3e6d9d9747cf3744ca90"
SDIST = f"langgraph_checkpoint_postgres-{VERSION}.tar.gz"
CACHE = Path(__file__).resolve().parents[2] / "var" / "langgraph-upstream"


def sdist() -> Path:
    """The pinned sdist, downloaded once with pip; a file with another digest is refused."""
    path = CACHE / SDIST
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                        f"{PACKAGE}=={VERSION}", "--dest", str(CACHE)], check=True)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SHA256:
        raise RuntimeError(f"{path} has sha256 {digest}, not the pinned {SHA256}: delete it and run again")
    return path


def source(archive: tarfile.TarFile, name: str) -> str:
    member = archive.extractfile(f"langgraph_checkpoint_postgres-{VERSION}/tests/{name}")
    assert member is not None, name
    return member.read().decode("utf-8")


def module(name: str, text: str, filename: str) -> types.ModuleType:
    loaded = types.ModuleType(name)
    loaded.__file__ = filename
    exec(compile(text, filename, "exec"), loaded.__dict__)  # noqa: S102 - the pinned, digest-checked upstream tests
    return loaded


def load(*names: str) -> dict[str, types.ModuleType]:
    """The upstream test modules `names` (e.g. "test_store.py"), keyed by name."""
    path = sdist()
    with tarfile.open(path) as archive:
        texts = {name: source(archive, name) for name in ("embed_test_utils.py", *names)}
    embed_utils = module("langgraph_upstream_embed_test_utils", texts["embed_test_utils.py"],
                         f"{path}/tests/embed_test_utils.py")
    upstream_conftest = types.ModuleType("langgraph_upstream_conftest")
    # Only what the test modules import from their conftest; the database URI is never connected to here.
    shared: dict[str, Any] = {"DEFAULT_URI": "postgres://unused", "VECTOR_TYPES": ["vector", "halfvec"],
                              "CharacterEmbeddings": embed_utils.CharacterEmbeddings}
    upstream_conftest.__dict__.update(shared)
    ours = sys.modules.get("tests.conftest")
    sys.modules["tests.conftest"] = upstream_conftest
    try:
        return {name: module(f"langgraph_upstream_{name[:-3]}", texts[name], f"{path}/tests/{name}")
                for name in names}
    finally:
        if ours is not None:
            sys.modules["tests.conftest"] = ours
