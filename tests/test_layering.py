"""The pure modules (DESIGN.md §2) import no Django, and no project module that does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PURE = ["zeromem/transitions.py", "zeromem/recall.py", "zeromem/charts.py", "zeromem/ranking.py",
        "zeromem/entities.py", "zeromem/locomo.py",
        "consolidation/clustering.py", "consolidation/extractive.py", "consolidation/contradictions.py",
        "consolidation/insights.py", "consolidation/reflection_rules.py", "consolidation/extraction.py"]
PURE_MODULES = {p.removesuffix(".py").replace("/", ".") for p in PURE}


def imported(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text())
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return names | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}


@pytest.mark.parametrize("path", PURE)
def test_pure_modules_import_no_django(path):
    for name in imported(path):
        assert not name.startswith(("django", "celery")), f"{path} imports {name}"
        if name.startswith(("zeromem", "consolidation", "profiles")):
            assert name in PURE_MODULES, f"{path} imports {name}, which is not a pure module"
