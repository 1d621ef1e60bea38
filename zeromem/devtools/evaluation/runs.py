"""The evaluations as `manage.py evaluate` and its scoreboard run them: the data read, one frozen split taken
(splits.py), the evaluation run, and its JSON figures labelled with the split (`split`), the items it covered
(`items`) and the items the data set holds (`items_total`).

Split keys: a LoCoMo conversation's sample_id (locomo, merges, profiles), a LongMemEval question_id, an update
case's question, a monitoring event's service (opsignals: `opsignals.split_key`). `limit` keeps the first N items
of the split (0: all of them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.test.utils import override_settings
from django.utils import timezone

from consolidation.jobs.clustering import clustering_run_now
from consolidation.jobs.reflection import EXTRACTIVE
from zeromem.devtools.evaluation import locomo, longmemeval, nightly, opsignals, updates
from zeromem.devtools.evaluation.language import evaluate_language_run
from zeromem.devtools.evaluation.merges import evaluate_merges
from zeromem.devtools.evaluation.profiles import evaluate_profiles
from zeromem.devtools.evaluation.retrieval import evaluate_locomo
from zeromem.devtools.evaluation.splits import ALL, in_split
from zeromem.devtools.language.labelled import LABELLED_PATH
from zeromem.language.readers import READERS

# The figures measure the product without an LLM: no reflection model, whatever the environment configures (the
# evaluation tenants keep the default policy, without the extraction phase; `evaluation_tenant`).
NO_LLM: dict[str, Any] = {"ZEROMEMORY_REFLECTION_MODEL": "", "ZEROMEMORY_DEFAULT_REFLECTION_MODEL": EXTRACTIVE}
OPS_USER = "ops"
# Update cases written for the project and never tuned on: the held-out check beside ../shared/eval/updates.
WRITTEN_CASES = Path(__file__).with_name("data") / "update_cases.jsonl"
DATA = locomo.DEFAULT_PATH.parents[1]  # ../shared/eval, beside the project
# Items per data set in a quick scoreboard (a smoke run: its figures compare with nothing).
QUICK_ITEMS = 2

T = TypeVar("T")
Progress = Callable[[str, int, int], None]  # (phase, done now, phase total)
Say = Callable[[str], None]


class NothingToEvaluate(Exception):
    """The data is not where it was looked for, or the split holds none of it."""


@dataclass(frozen=True)
class Chosen(Generic[T]):
    items: list[T]
    split: str
    total: int

    def label(self, figures: dict[str, Any]) -> dict[str, Any]:
        return {"split": self.split, "items": len(self.items), "items_total": self.total, **figures}


def choose(items: list[T], *, split: str, limit: int, key: Callable[[T], str], what: str) -> Chosen[T]:
    chosen = Chosen(in_split(items, split, key)[: limit or None], split, len(items))
    if not chosen.items:
        raise NothingToEvaluate(f"no {what} in the {split} split ({len(items)} in the data set)")
    return chosen


def cluster_forced(tenant_id: int, user_id: str) -> Any:
    return clustering_run_now(tenant_id=tenant_id, user_id=user_id, trigger="cli", force=True)


def cluster_when_due(tenant_id: int, user_id: str) -> Any:
    return clustering_run_now(tenant_id=tenant_id, user_id=user_id, trigger="cli")


def locomo_conversations(path: Path, *, split: str, limit: int) -> Chosen[locomo.Conversation]:
    if not locomo.available(path):
        raise NothingToEvaluate(f"LoCoMo data not found at {path}: nothing to evaluate (it lives in ../shared/eval/)")
    return choose(locomo.load(path), split=split, limit=limit, key=lambda c: c.sample_id, what="LoCoMo conversation")


def locomo_run(*, path: Path = locomo.DEFAULT_PATH, split: str = ALL, limit: int = 0,
               progress: Progress) -> dict[str, Any]:
    chosen = locomo_conversations(path, split=split, limit=limit)
    return chosen.label(evaluate_locomo(conversations=chosen.items, cluster=cluster_forced, progress=progress))


def merges_run(*, path: Path = locomo.DEFAULT_PATH, split: str = ALL, limit: int = 0, say: Say) -> dict[str, Any]:
    chosen = locomo_conversations(path, split=split, limit=limit)
    return chosen.label(evaluate_merges(conversations=chosen.items, cluster=cluster_forced, progress=say))


def profiles_run(*, path: Path = locomo.DEFAULT_PATH, split: str = ALL, limit: int = 0, say: Say) -> dict[str, Any]:
    chosen = locomo_conversations(path, split=split, limit=limit)
    return chosen.label(evaluate_profiles(conversations=chosen.items, progress=say))


def longmemeval_questions(root: Path, variant: str, *, split: str, limit: int) -> Chosen[longmemeval.Question]:
    if not longmemeval.available(root, variant):
        raise NothingToEvaluate(f"LongMemEval data not found: no {variant}/*.json under {root} (--data expects a "
                                f"folder holding oracle/ and optionally s/, like ../shared/eval/longmemeval/)")
    folder = longmemeval.variant_folder(root, variant)
    return choose(longmemeval.load(folder), split=split, limit=limit, key=lambda q: q.question_id,
                  what=f"answerable question of {folder}")


def longmemeval_run(*, root: Path = longmemeval.DEFAULT_PATH, variant: str = "oracle", split: str = ALL,
                    limit: int = 0, progress: Progress, say: Say) -> dict[str, Any]:
    chosen = longmemeval_questions(root, variant, split=split, limit=limit)
    with override_settings(**NO_LLM):
        result = longmemeval.evaluate_longmemeval(questions=chosen.items, cluster=cluster_forced,
                                                  progress=progress, report=say)
    return chosen.label(result)


def nightly_run(*, data: str, path: Path | None = None, split: str = ALL, limit: int = 0, nights: int = 0,
                idle_nights: int = nightly.IDLE_NIGHTS, lifecycle: bool = False, say: Say) -> dict[str, Any]:
    """`evaluate nightly` on LoCoMo conversations or LongMemEval (oracle) questions, one user each."""
    replayed: list[nightly.Replayed]
    if data == "locomo":
        conversations = locomo_conversations(path or locomo.DEFAULT_PATH, split=split, limit=limit)
        chosen: Chosen[Any] = conversations
        replayed = [nightly.from_locomo(c) for c in conversations.items]
    else:
        questions = longmemeval_questions(path or longmemeval.DEFAULT_PATH, "oracle", split=split, limit=limit)
        chosen, replayed = questions, [nightly.from_longmemeval(q) for q in questions.items]
    with override_settings(**NO_LLM):
        result = nightly.evaluate_nightly(replayed=replayed, nights=nights, idle_nights=idle_nights,
                                          lifecycle=lifecycle, say=say)
    return chosen.label({"data": data, **result})


def update_cases(path: Path, *, split: str, limit: int) -> Chosen[dict[str, Any]]:
    if not path.is_file():
        raise NothingToEvaluate(f"knowledge-update cases not found at {path} (they live in ../shared/eval/)")
    return choose(updates.load_cases(path), split=split, limit=limit, key=lambda case: str(case["question"]),
                  what="update case")


def updates_run(*, path: Path = updates.DEFAULT_PATH, split: str = ALL, limit: int = 0,
                report: Callable[[updates.CaseResult], None], reader: str | None = None) -> dict[str, Any]:
    chosen = update_cases(path, split=split, limit=limit)
    return chosen.label(updates.evaluate_updates(cases=chosen.items, cluster=cluster_when_due, report=report,
                                                 reader=reader))


def opsignal_events(now: datetime, *, split: str, window_as: str = "field", scenario: str = "incident"
                    ) -> tuple[Chosen[Any], tuple[tuple[str, str], ...]]:
    items, expected = opsignals.scenario_items(scenario, user_id=OPS_USER, now=now, window_as=window_as)
    return choose(items, split=split, limit=0, key=opsignals.split_key, what="monitoring event"), expected


def opsignals_run(*, now: datetime, split: str = ALL, window_as: str = "field", scenario: str = "incident",
                  say: Say) -> opsignals.Outcome:
    chosen, expected = opsignal_events(now, split=split, window_as=window_as, scenario=scenario)
    with override_settings(**NO_LLM):
        outcome = opsignals.evaluate_opsignals(items=chosen.items, cluster=cluster_forced, progress=say,
                                               scenario=scenario, expected=expected)
    return replace(outcome, figures=chosen.label(outcome.figures))


SCOREBOARD = ("updates", "opsignals", "longmemeval", "merges", "locomo", "updates_written", "capacity", "language")


def scoreboard_run(*, data: Path = DATA, split: str, quick: bool, progress: Progress, say: Say,
                   only: tuple[str, ...] = SCOREBOARD) -> dict[str, dict[str, Any]]:
    """Every quality evaluation (or those named in `only`) once on one split, as its subcommand runs it with the
    data under `data` (laid out as ../shared/eval/); --quick: a few items each. The project's own data (the written
    update cases, the capacity scenario, the labelled language set) come from the repository."""
    limit = QUICK_ITEMS if quick else 0
    conversations = data / locomo.DEFAULT_PATH.relative_to(DATA)

    def phases_of(name: str) -> Progress:
        return lambda phase, done, total: progress(f"{name}: {phase}", done, total)

    runs: dict[str, Callable[[], dict[str, Any]]] = {
        "updates": lambda: updates_run(path=data / updates.DEFAULT_PATH.relative_to(DATA), split=split, limit=limit,
                                       report=lambda result: None),
        "opsignals": lambda: opsignals_run(now=timezone.now(), split=split, say=say).figures,
        "longmemeval": lambda: longmemeval_run(root=data / longmemeval.DEFAULT_PATH.relative_to(DATA), split=split,
                                               limit=limit, progress=phases_of("longmemeval"), say=lambda line: None),
        "merges": lambda: merges_run(path=conversations, split=split, limit=limit, say=say),
        "locomo": lambda: locomo_run(path=conversations, split=split, limit=limit, progress=phases_of("locomo")),
        "updates_written": lambda: updates_run(path=WRITTEN_CASES, split=split, limit=limit,
                                               report=lambda result: None),
        "capacity": lambda: opsignals_run(now=timezone.now(), split=split, scenario="capacity", say=say).figures,
        "language": lambda: language_figures(locomo_path=conversations, split=split, say=say),
    }
    results = {}
    for name, run in runs.items():
        if name not in only:
            continue
        say(f"scoreboard: evaluate {name} --split {split}")
        try:
            results[name] = run()
        except NothingToEvaluate as absent:  # a data set wholly in the other split (capacity is one stream)
            say(f"scoreboard: {name}: {absent}")
    return results


def language_figures(*, locomo_path: Path, split: str, say: Say) -> dict[str, Any]:
    """`evaluate language` on the split, flattened: `<reader>_<judgement>` → accuracy."""
    outcome = evaluate_language_run(labelled_path=LABELLED_PATH, locomo_path=locomo_path, split=split,
                                    reader_names=list(READERS), workers=settings.ZEROMEMORY_EMBEDDING_WORKERS,
                                    cache_dir=Path(settings.ZEROMEMORY_MODEL_CACHE_DIR), report=lambda line: None)
    return {"split": split, "items": outcome["items"], "items_total": outcome["items_total"],
            **{f"{reader}_{judgement}": accuracy for reader, scores in outcome["readers"].items()
               for judgement, accuracy in scores.items()}}
