"""`manage.py evaluate scoreboard`: every quality figure worth watching, today's beside the landed one, so a drop is
seen the day it happens. The landed figures live in docs/scoreboard.json, one entry per split, written by
`evaluate scoreboard --split test --record` on the landed code; docs/results.md renders the test split's.

No Django import: figures in, a comparison out."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PATH = Path(__file__).resolve().parents[3] / "docs" / "scoreboard.json"
HIGHER, LOWER = "higher", "lower"
Number = float | int | None


@dataclass(frozen=True)
class Figure:
    evaluation: str
    key: str  # a top-level number of the evaluation's JSON
    better: str  # HIGHER or LOWER
    noise: float = 0.0  # how far two runs of the same code may differ: a change within it is not worse

    @property
    def name(self) -> str:
        return f"{self.evaluation}.{self.key}"


def _figures(evaluation: str, better: str, *keys: str, noise: float = 0.0) -> tuple[Figure, ...]:
    return tuple(Figure(evaluation, key, better, noise) for key in keys)


# LoCoMo's retrieval shares move by a few questions between two runs of the same code (search ties among memories
# stored in the same instant: 0.5652 → 0.5632 seen on the test split); the other figures repeat exactly.
LOCOMO_NOISE = 0.005


FIGURES: tuple[Figure, ...] = (
    *_figures("updates", HIGHER, "current_above_stale", "stale_superseded"),
    *_figures("updates", LOWER, "false_supersedes"),
    *_figures("opsignals", LOWER, "flags_per_1000", "supersedes"),
    *_figures("longmemeval", HIGHER, "current_above_stale_before", "current_above_stale_after",
              "current_only_at_10_after", "ctx_current_no_stale_after", "ctx_newest_is_current_after",
              "stale_retired"),
    *_figures("longmemeval", LOWER, "current_lost", "false_retirements", "supersedes_outside_evidence", "flags",
              "statements_lost"),
    *_figures("merges", LOWER, "empty_merges", "fragments", "paraphrase_pairs", "cross_session_joins_share",
              "orphaned_referents_share", "content_free", "statements_lost"),
    *_figures("locomo", HIGHER, "recall_at_10_after", "budget_recall_before", "budget_recall_after",
              "budget_recall_text_after", "answer_hit_before", "answer_hit_after", noise=LOCOMO_NOISE),
    *_figures("locomo", LOWER, "active_ratio", "chars_ratio", "evidence_archived_uninformative",
              "supersedes_per_1000_turns", "statements_lost"),
    *_figures("updates_written", HIGHER, "current_above_stale", "stale_superseded"),
    *_figures("updates_written", LOWER, "false_supersedes"),
    *_figures("capacity", LOWER, "flags_per_1000", "supersedes"),
    *_figures("capacity", HIGHER, "expected_superseded"),
    *_figures("language", HIGHER, "default_chatter", "default_change", "default_same_attribute", "default_relation",
              "rules_chatter", "rules_change", "rules_same_attribute", "rules_relation"),
)


def figures_of(results: Mapping[str, Mapping[str, Any]], figures: tuple[Figure, ...] = FIGURES
               ) -> dict[str, Number]:
    """Figure name → today's value, from each evaluation's JSON (None: the evaluation did not give it)."""
    return {f.name: results.get(f.evaluation, {}).get(f.key) for f in figures}


def items_of(results: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    return {evaluation: result["items"] for evaluation, result in results.items()}


def is_worse(figure: Figure, landed: Number, today: Number) -> bool:
    """Today's value is on the wrong side of the landed one, beyond the figure's noise (a figure without both
    values is not compared)."""
    if landed is None or today is None:
        return False
    return today < landed - figure.noise if figure.better == HIGHER else today > landed + figure.noise


def compare(*, landed: Mapping[str, Number], today: Mapping[str, Number],
            figures: tuple[Figure, ...] = FIGURES) -> dict[str, Any]:
    rows = {f.name: {"landed": landed.get(f.name), "today": today.get(f.name),
                     "worse": is_worse(f, landed.get(f.name), today.get(f.name))} for f in figures}
    return {"figures": rows, "worse": [name for name, row in rows.items() if row["worse"]]}


def table(comparison: Mapping[str, Any], figures: tuple[Figure, ...] = FIGURES) -> list[str]:
    """The comparison as text lines: figure, which way is better, landed, today, and a mark where today is worse."""
    better = {f.name: "↑" if f.better == HIGHER else "↓" for f in figures}
    lines = [f"{'figure':44}{'better':>7}{'landed':>12}{'today':>12}"]
    for name, row in comparison["figures"].items():
        mark = "  WORSE" if row["worse"] else ""
        lines.append(f"{name:44}{better[name]:>7}{cell(row['landed']):>12}{cell(row['today']):>12}{mark}")
    return lines


def cell(value: Number) -> str:
    return "–" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def read(path: Path = PATH) -> dict[str, Any]:
    """The recorded scoreboard: split → {commit, machine, recorded_at, items, figures} (empty when none is)."""
    return json.loads(path.read_text()) if path.exists() else {}


def landed(split: str, path: Path = PATH) -> dict[str, Any]:
    return read(path).get(split, {})


def item_changes(landed_items: Mapping[str, int], today_items: Mapping[str, int]) -> list[str]:
    """Evaluations that ran over another number of items than the landed run: their figures do not compare."""
    return [f"{name}: {landed_items[name]} items landed, {count} today" for name, count in today_items.items()
            if name in landed_items and landed_items[name] != count]


def write(*, split: str, entry: Mapping[str, Any], path: Path = PATH) -> None:
    """Keep `entry` as the landed figures of `split`, beside the other split's."""
    recorded = {**read(path), split: dict(entry)}
    path.write_text(json.dumps(dict(sorted(recorded.items())), indent=1, ensure_ascii=False) + "\n")
