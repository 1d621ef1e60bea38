"""zeromem and its client declare `requires-python >= 3.11` with no upper bound: every CPython from 3.11 on that
has wheels for what they need. This checks it for 3.11, 3.12 and 3.13 (this machine runs only 3.11): pip resolves
the server's pins, its dev tools, the client and both client extras for each version from wheels alone
(`--only-binary=:all:`), dependencies included, reading only the packages' metadata (nothing is installed or
built). It needs the package index, as `make install` does; pip's own cache keeps a second run quick."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = ("3.11", "3.12", "3.13")


def requirements() -> list[str]:
    """What an install of the server (with its dev tools) and of the client (with both extras) asks for."""
    server = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    client = tomllib.loads((ROOT / "clients/python/pyproject.toml").read_text())["project"]
    extras = [r for group in client["optional-dependencies"].values() for r in group]
    return [*server["dependencies"], *server["optional-dependencies"]["dev"], *client["dependencies"], *extras]


def resolve(version: str, wanted: list[str], workdir: Path, *, deps: bool = True) -> tuple[bool, str, list[str]]:
    """pip's dry run for CPython `version` from wheels only: (resolved, pip's complaint, the wheels chosen)."""
    workdir.mkdir(parents=True, exist_ok=True)
    report = workdir / f"report-{version}-{deps}.json"
    # --isolated: the public index as anyone else sees it, not this machine's pip configuration (local folders of
    # wheels that nobody else has).
    command = [sys.executable, "-m", "pip", "--isolated", "install", "--dry-run", "--ignore-installed", "--quiet",
               "--only-binary=:all:", "--python-version", version, "--implementation", "cp",
               "--target", str(workdir / "target"), "--report", str(report), *([] if deps else ["--no-deps"]),
               *wanted]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return False, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "pip failed", []
    urls = [item["download_info"]["url"] for item in json.loads(report.read_text())["install"]]
    return True, "", urls


def pins_without_wheels(version: str, wanted: list[str], workdir: Path) -> list[str]:
    """After a failed resolution: which requirements have no wheel of their own for `version` (empty when only a
    dependency further down lacks one)."""
    return [r for r in wanted if not resolve(version, [r], workdir, deps=False)[0]]


def test_every_dependency_installs_from_wheels_on_cpython_3_11_3_12_and_3_13(tmp_path: Path) -> None:
    wanted = requirements()
    with ThreadPoolExecutor(len(VERSIONS)) as pool:
        outcomes = dict(zip(VERSIONS, pool.map(lambda v: resolve(v, wanted, tmp_path / v), VERSIONS), strict=True))
    failures = {v: f"{complaint}; pins without a wheel: {pins_without_wheels(v, wanted, tmp_path / v)}"
                for v, (resolved, complaint, _) in outcomes.items() if not resolved}
    assert not failures, failures
    for version, (_, _, urls) in outcomes.items():
        assert urls and not [u for u in urls if u.startswith("file:")], (version, urls)
        assert any(f"-cp{version.replace('.', '')}-" in u for u in urls), version  # the version's own builds


def test_the_declared_python_range_has_no_upper_bound() -> None:
    for pyproject in (ROOT / "pyproject.toml", ROOT / "clients/python/pyproject.toml"):
        assert tomllib.loads(pyproject.read_text())["project"]["requires-python"] == ">=3.11", pyproject
