"""Recorded figures: every table of docs/results.md is generated from rows that name what produced them.

`manage.py results record -- <bench|evaluate|prove command>` runs the command with `--json`, keeps the JSON object
its last stdout line prints, and appends it to docs/results/data/<command>-<subcommand>.json with the command line,
the commit it ran on (marked when code had uncommitted changes) and the machine (CPU, cores, memory, load average
before and after). `manage.py results render` writes docs/results.md from those files; a test keeps the committed
page equal to the rendering, so no figure in the docs is typed by hand.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from zeromem.devtools.evaluation import scoreboard

ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = ROOT / "docs" / "results" / "data"
PAGE = ROOT / "docs" / "results.md"
RECORDABLE = ("bench", "evaluate", "prove")
REPORTED_SPLIT = "test"
# Changes under these paths cannot move a figure: a recording made beside them still names a clean commit.
DOC_PATHS = (":(exclude)docs", ":(exclude)*.md", ":(exclude)mkdocs.yml")

# What each table is about, and the figures worth a column (dotted paths into the command's JSON). A command not
# listed here gets a column per top-level number or boolean of its JSON.
TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "bench calibrate": (
        "The embedder's cosine on same-fact, related and unrelated sentence pairs, against the clustering floor.",
        ("floor", "same_fact.min", "same_fact.median", "related.max", "related.above_floor", "unrelated.max")),
    "bench clustering": (
        "The clustering core on planted clusters (seconds at 10,000 and 100,000 memories), the index's edge recall "
        "against exact search, the whole job at 10,000 memories, and a 50-memory user's run (CPU seconds).",
        ("rows[method=zeromem,n=10000].seconds", "rows[method=zeromem,n=100000].seconds", "edge_recall",
         "rows[method=full_job].seconds", "rows[method=full_job].cpu_s", "rows[method=full_job].transactions",
         "rows[method=full_job].statements_per_merge", "small_user_cpu_s")),
    "bench ingest": ("Ingestion through the service layer against the bare embedder.",
                     ("n", "per_second", "embedder_per_second", "ratio", "cpu_ms_per_memory", "transactions")),
    "bench reflection": (
        "LLM calls and prompt tokens per memory reflected through the weekly path, counted by a local fake LLM "
        "server; semantic memories kept per episode reflected.",
        ("memories", "calls_per_1000", "prompt_tokens_per_memory", "new_semantic_per_reflected", "repairs",
         "canaries_failed_runs")),
    "bench search": (
        "A search through the HTTP API (gunicorn): CPU and SQL statements per search, latency during another "
        "user's clustering run and for a 100,000-memory user. Wall figures compare only on an idle machine.",
        ("data", "cpu_ms_per_search_3k", "statements_per_search", "p99_ms_3k_during_clustering", "p99_ms_100k")),
    "evaluate locomo": (
        "LoCoMo's 10 conversations before and after a forced clustering run: the store's size (after ÷ before), "
        "recall@10, and budget recall and answer hit within 2,000 characters.",
        ("questions", "active_ratio", "chars_ratio", "recall_at_10_before", "recall_at_10_after",
         "budget_recall_before", "budget_recall_after", "answer_hit_before", "answer_hit_after",
         "evidence_archived_uninformative", "supersedes_per_1000_turns", "statements_lost")),
    "evaluate longmemeval": (
        "Knowledge updates on real chat histories (LongMemEval): current evidence above stale, before and after "
        "clustering; stale claims retired; nothing current lost.",
        ("questions", "memories", "current_above_stale_before", "current_above_stale_after",
         "current_only_at_10_after", "stale_retired", "current_lost", "false_retirements", "flags",
         "statements_lost")),
    "evaluate merges": ("What clustering writes on LoCoMo: empty merges, fragments, paraphrase pairs, joins "
                        "across sessions, orphaned referents, content-free memories, statements lost.",
                        ("merged_texts", "empty_merges", "fragments", "paraphrase_pairs", "cross_session_joins",
                         "orphaned_referents", "content_free", "statements_lost")),
    "evaluate opsignals": ("Monitoring events of four incident windows through clustering: every flag and "
                           "supersede is a defect.", ("memories", "flags", "supersedes", "active_after")),
    "evaluate profiles": (
        "Reflection on LoCoMo: a profile per speaker, every item linked back to turns.",
        ("speakers", "speakers_with_profile", "profile_items", "items_linked_to_turns", "third_person_share",
         "multi_source_share", "new_semantic_per_reflected")),
    "evaluate updates": ("Knowledge-update cases: stale values superseded, still-true ones kept.", ()),
    "prove deployment": ("docker-compose.yml's own commands against embedded services.", ()),
    "prove resilience": ("Crash rounds, overlapping triggers, faults and load on real processes.", ()),
    "prove security": (
        "The authorization matrix, hostile input and the rate limit.",
        ("endpoints", "authz_cases", "authz_failures", "fuzz_cases", "fuzz_5xx", "rejected_writes", "rate_limit_ok")),
}
# A column is a dotted path into the JSON; `rows[method=full_job]` picks the first item of a list whose fields match.
ITEM = re.compile(r"^(?P<key>\w+)\[(?P<match>[^\]]+)\]$")


@dataclass(frozen=True)
class Recording:
    command: str
    commit: str
    machine: dict[str, Any]
    recorded_at: str
    seconds: float
    result: dict[str, Any]


class RecordError(Exception):
    """The command cannot be recorded: not a figure command, it failed, or it printed no JSON object last."""


def record(*, args: list[str], root: Path = ROOT, data_dir: Path = DATA_DIR,
           run: Callable[[list[str]], subprocess.CompletedProcess[str]] | None = None) -> Path:
    """Run one figure command and append what it printed to its data file.

    1. refuse anything but bench / evaluate / prove, and add --json when missing;
    2. note the machine, run `manage.py <args>` (progress stays on stderr), note the load again;
    3. keep the last stdout line's JSON object with the command, the commit and the machine.
    """
    if len(args) < 2 or args[0] not in RECORDABLE:
        raise RecordError(f"record runs one of {', '.join(RECORDABLE)} with a subcommand, not {shlex.join(args)!r}")
    args = args if "--json" in args else [*args, "--json"]
    started, load_start = time.monotonic(), os.getloadavg()
    completed = (run or _run_manage)(args)
    if completed.returncode != 0:
        raise RecordError(f"`manage.py {shlex.join(args)}` exited with {completed.returncode}: nothing recorded")
    machine = {**machine_info(), "load_average_start": _rounded(load_start), "load_average_end":
               _rounded(os.getloadavg())}
    recording = Recording(command=f"manage.py {shlex.join(args)}", commit=commit_of(root), machine=machine,
                          recorded_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                          seconds=round(time.monotonic() - started, 1), result=last_json_object(completed.stdout))
    return append(recording, data_dir / f"{args[0]}-{args[1]}.json")


def _run_manage(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, stdout=subprocess.PIPE,
                          text=True, check=False)


def last_json_object(stdout: str) -> dict[str, Any]:
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        value = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise RecordError("the command's last stdout line is not one JSON object")
    return value


def commit_of(root: Path) -> str:
    """HEAD's short hash, marked when code (not documentation) differs from it."""
    head = _git(root, "rev-parse", "--short=10", "HEAD")
    changed = _git(root, "status", "--porcelain", "--untracked-files=no", "--", ".", *DOC_PATHS)
    return f"{head}+uncommitted" if changed else head


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def machine_info() -> dict[str, Any]:
    return {"cpu": _cpu_model(), "cores": os.cpu_count(), "memory_gib": _memory_gib(),
            "python": platform.python_version(), "system": f"{platform.system()} {platform.machine()}"}


def _cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown"
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return names[0] if names else platform.processor() or "unknown"


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        return None


def _rounded(load: tuple[float, float, float]) -> list[float]:
    return [round(value, 2) for value in load]


def append(recording: Recording, path: Path) -> Path:
    rows = load_rows(path)
    rows.append(asdict(recording))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    return path


def load_rows(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text()) if path.exists() else []


def render(*, data_dir: Path = DATA_DIR, scoreboard_path: Path = scoreboard.PATH) -> str:
    """docs/results.md: an introduction, the scoreboard's test-split figures, then one table per recorded command,
    rows in the order recorded."""
    parts = [INTRODUCTION, *render_scoreboard(scoreboard.landed(REPORTED_SPLIT, scoreboard_path))]
    for path in sorted(data_dir.glob("*.json"), key=_table_order):
        parts.append(render_table(path.stem.replace("-", " ", 1), load_rows(path)))
    return "\n".join(parts)


def _table_order(path: Path) -> tuple[int, str]:
    kind = path.stem.split("-", 1)[0]
    return (RECORDABLE.index(kind) if kind in RECORDABLE else len(RECORDABLE), path.stem)


INTRODUCTION = """# Results

<!-- Generated by `manage.py results render` from docs/scoreboard.json and docs/results/data/*.json: do not edit by
hand. -->

Quality is reported on the test half of the frozen split, in the scoreboard below: the figures `manage.py evaluate
scoreboard --split test --record` kept as the landed ones. Every other figure was printed by the command in its row,
on the commit and machine named beside it, and recorded with `manage.py results record -- <command>` (an `evaluate`
row without `--split` covers every item). See [Benchmarks and evaluations](benchmarks.md) for what each command
measures and its targets. A commit marked `+uncommitted` ran with code changes not yet committed. Rows are in the
order they were recorded; git keeps the history of this page.
"""


def render_scoreboard(entry: dict[str, Any]) -> list[str]:
    """The landed scoreboard of the reported split: one row per figure, with the way it is better."""
    if not entry:
        return []
    items = ", ".join(f"{name} {count}" for name, count in entry["items"].items())
    lines = [f"## Scoreboard ({REPORTED_SPLIT} split)", "",
             f"`manage.py evaluate scoreboard --split {REPORTED_SPLIT} --record` on `{entry['commit']}`, "
             f"{_machine_text(entry['machine'])}; {entry['recorded_at']}. Items in the split: {items}.", "",
             _row(["figure", "better", "value"]), _row(["---"] * 3)]
    better = {figure.name: figure.better for figure in scoreboard.FIGURES}
    for name, value in entry["figures"].items():
        lines.append(_row([f"`{name}`", better.get(name, "–"), _cell(value)]))
    return ["\n".join(lines) + "\n"]


def render_table(name: str, rows: list[dict[str, Any]]) -> str:
    about, wanted = TABLES.get(name, ("", ()))
    keys = list(wanted) or _scalar_keys(rows)
    header = ["command", "commit", "machine", *keys]
    lines = [f"## {name}", "", *([about, ""] if about else []), _row(header), _row(["---"] * len(header))]
    for row in rows:
        figures = [_cell(_lookup(row["result"], key)) for key in keys]
        lines.append(_row([f"`{row['command']}`", f"`{row['commit']}`", _machine(row), *figures]))
    return "\n".join(lines) + "\n"


def _scalar_keys(rows: list[dict[str, Any]]) -> list[str]:
    keys: dict[str, None] = {}
    for row in rows:
        keys.update({key: None for key, value in row["result"].items() if isinstance(value, int | float | bool)})
    return list(keys)


def _lookup(result: dict[str, Any], dotted: str) -> Any:
    value: Any = result
    for part in dotted.split("."):
        item = ITEM.match(part)
        value = value.get(item["key"] if item else part) if isinstance(value, dict) else None
        if item and isinstance(value, list):
            value = _first_matching(value, item["match"])
    return value


def _first_matching(items: list[Any], match: str) -> Any:
    wanted = dict(pair.split("=", 1) for pair in match.split(","))
    return next((item for item in items if isinstance(item, dict)
                 and all(str(item.get(key)) == text for key, text in wanted.items())), None)


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|")


def _machine(row: dict[str, Any]) -> str:
    machine = row["machine"]
    load = "→".join(f"{machine[key][0]:g}" for key in ("load_average_start", "load_average_end"))
    return f"{_machine_text(machine)}, load {load}; {row['recorded_at']}, {row['seconds']:g} s"


def _machine_text(machine: dict[str, Any]) -> str:
    return f"{machine['cores']} cores {machine['cpu']}, {machine['memory_gib']:g} GiB"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"
