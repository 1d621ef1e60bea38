from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test.utils import override_settings
from django.utils import timezone
from tqdm import tqdm

from consolidation.jobs.clustering import clustering_run_now
from consolidation.jobs.reflection import EXTRACTIVE
from zeromem.devtools.evaluation import language as language_evaluation
from zeromem.devtools.evaluation import locomo, longmemeval
from zeromem.devtools.evaluation.merges import evaluate_merges
from zeromem.devtools.evaluation.opsignals import SCENARIOS, evaluate_opsignals
from zeromem.devtools.evaluation.profiles import evaluate_profiles
from zeromem.devtools.evaluation.retrieval import CATEGORIES, evaluate_locomo
from zeromem.devtools.evaluation.splits import ALL, SPLITS
from zeromem.devtools.evaluation.updates import DEFAULT_PATH, evaluate_updates, load_cases
from zeromem.devtools.language.labelled import LABELLED_PATH
from zeromem.language.readers import READERS

# The figures measure the product without an LLM: no reflection model, whatever the environment configures (the
# evaluation tenants keep the default policy, without the extraction phase; `evaluation_tenant`).
NO_LLM: dict[str, Any] = {"ZEROMEMORY_REFLECTION_MODEL": "", "ZEROMEMORY_DEFAULT_REFLECTION_MODEL": EXTRACTIVE}


class Command(BaseCommand):
    help = ("Quality measured on ../shared/eval (own throwaway database). `evaluate locomo`: retrieval before "
            "and after clustering. With --json the last stdout line is one JSON object.")

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="which", required=True)
        run = sub.add_parser("locomo", help="store size and retrieval before/after clustering on LoCoMo")
        run.add_argument("--path", default=str(locomo.DEFAULT_PATH))
        run.add_argument("--conversations", type=int, default=0, help="only the first N (0 = all)")
        run.add_argument("--json", action="store_true")
        updates = sub.add_parser("updates", help="knowledge updates: stale values superseded, true ones kept")
        updates.add_argument("--path", default=None, help="cases.jsonl (default ../shared/eval/updates/)")
        updates.add_argument("--reader", choices=sorted(READERS), default=None,
                             help="the language reader judging the pairs (default: the policy's, updates.reader)")
        updates.add_argument("--json", action="store_true")
        merges = sub.add_parser("merges", help="what clustering writes on LoCoMo: empty merges, fragments, paraphrases")
        merges.add_argument("--path", default=str(locomo.DEFAULT_PATH))
        merges.add_argument("--conversations", type=int, default=0, help="only the first N (0 = all)")
        merges.add_argument("--json", action="store_true")
        profiles = sub.add_parser("profiles", help="reflection on LoCoMo: every speaker's profile, linked to turns")
        profiles.add_argument("--path", default=str(locomo.DEFAULT_PATH))
        profiles.add_argument("--conversations", type=int, default=0, help="only the first N (0 = all)")
        profiles.add_argument("--json", action="store_true")
        lme = sub.add_parser("longmemeval", help="LongMemEval knowledge updates: current above stale, stale retired")
        lme.add_argument("--variant", choices=longmemeval.VARIANTS, default="oracle",
                         help="oracle: evidence sessions only; s: with ~45 filler sessions")
        lme.add_argument("--data", default=None, help="a folder holding oracle/ (and s/); default "
                                                      "../shared/eval/longmemeval/")
        lme.add_argument("--questions", type=int, default=0, help="only the first N answerable questions (0 = all)")
        lme.add_argument("--json", action="store_true")
        ops = sub.add_parser("opsignals", help="an incident's monitoring events: flags and supersedes after clustering")
        ops.add_argument("--window-as", choices=("field", "tags"), default="field",
                         help="the window as MemoryInput.window (field) or as a tag window:<name> (tags)")
        ops.add_argument("--scenario", choices=SCENARIOS, default="incident",
                         help="incident: latency, errors, alerts of one outage; capacity: six days of other readings "
                              "and a few configuration changes that should be superseded")
        ops.add_argument("--json", action="store_true")
        language = sub.add_parser("language", help="each reader's accuracy per judgement on the labelled language set")
        language.add_argument("--split", choices=(*SPLITS, ALL), default="dev")
        language.add_argument("--reader", action="append", choices=sorted(READERS), help="only these (default: all)")
        language.add_argument("--labelled", default=str(LABELLED_PATH), help="the labelled set (jsonl)")
        language.add_argument("--locomo", default=str(locomo.DEFAULT_PATH), help="LoCoMo data for its labelled turns")
        language.add_argument("--json", action="store_true")

    def handle(self, *args: Any, which: str, **options: Any) -> None:
        # Each evaluation's tenant runs without the safety net (`evaluation_tenant`): it measures retrieval itself.
        {"locomo": self._locomo, "updates": self._updates, "profiles": self._profiles,
         "longmemeval": self._longmemeval, "opsignals": self._opsignals, "merges": self._merges,
         "language": self._language}[which](options)

    @staticmethod
    def _cluster(tenant_id: int, user_id: str) -> Any:
        return clustering_run_now(tenant_id=tenant_id, user_id=user_id, trigger="cli", force=True)

    def _bars(self) -> tuple[Callable[[str, int, int], None], Callable[[], None]]:
        bars: dict[str, tqdm] = {}

        def progress(phase: str, done: int, total: int) -> None:
            if phase not in bars:
                bars[phase] = tqdm(total=total, desc=phase, unit="", file=self.stderr._out, leave=False)
            bars[phase].update(done)

        def close() -> None:
            for bar in bars.values():
                bar.close()

        return progress, close

    def _longmemeval(self, options: dict[str, Any]) -> None:
        root, variant = Path(options["data"]) if options["data"] else longmemeval.DEFAULT_PATH, options["variant"]
        if not longmemeval.available(root, variant):
            raise CommandError(f"LongMemEval data not found: no {variant}/*.json under {root} (--data expects a "
                               f"folder holding oracle/ and optionally s/, like ../shared/eval/longmemeval/)")
        questions = longmemeval.load(longmemeval.variant_folder(root, variant), options["questions"])
        if not questions:
            raise CommandError(f"no answerable question in {longmemeval.variant_folder(root, variant)}")
        progress, close = self._bars()
        with override_settings(**NO_LLM):
            result = longmemeval.evaluate_longmemeval(questions=questions, cluster=self._cluster, progress=progress,
                                                      report=self.stderr.write)
        close()
        write = self.stderr.write
        for item in result["supersedes_outside_evidence_list"]:
            write(f"supersede outside the evidence: {item['question_id']}: {item['older']!r} → {item['newer']!r}")
        figures = ", ".join(f"{key} {result[key]}" for key in (
            "current_above_stale_before", "current_above_stale_after", "current_only_at_10_before",
            "current_only_at_10_after", "ctx_current_no_stale_after", "ctx_newest_is_current_after", "stale_retired",
            "current_lost", "false_retirements", "supersedes_outside_evidence", "flags"))
        with_stale = sum(q["has_stale"] for q in result["per_question"])
        write(f"{result['questions']} questions ({variant}; {with_stale} with a stale turn), {result['memories']} "
              f"memories: {figures}; {result['seconds']} s")
        if options["json"]:
            self.stdout.write(json.dumps(result))

    def _language(self, options: dict[str, Any]) -> None:
        outcome = language_evaluation.evaluate_language_run(
            labelled_path=Path(options["labelled"]), locomo_path=Path(options["locomo"]), split=options["split"],
            reader_names=options["reader"] or list(READERS), workers=settings.ZEROMEMORY_EMBEDDING_WORKERS,
            cache_dir=Path(settings.ZEROMEMORY_MODEL_CACHE_DIR), report=self.stderr.write)
        if options["json"]:
            self.stdout.write(json.dumps(outcome))

    def _opsignals(self, options: dict[str, Any]) -> None:
        with override_settings(**NO_LLM):
            outcome = evaluate_opsignals(now=timezone.now(), cluster=self._cluster, window_as=options["window_as"],
                                         progress=self.stderr.write, scenario=options["scenario"])
        figures, write = outcome.figures, self.stderr.write
        for older, newer in outcome.flagged_pairs[:10]:
            write(f"flagged: {older!r} ↔ {newer!r}")
        if len(outcome.flagged_pairs) > 10:
            write(f"… and {len(outcome.flagged_pairs) - 10} more flagged pairs")
        for retired, successor in outcome.supersedes:
            write(f"superseded: {retired!r} → {successor!r}")
        for retired, successor in outcome.expected_superseded:
            write(f"superseded as expected: {retired!r} → {successor!r}")
        write(f"{figures['memories']} events; {figures['flags']} flagged contradictions "
              f"({figures['flags_per_1000']} per 1000), {figures['supersedes']} wrong supersedes, "
              f"{figures['expected_superseded']} of {figures['expected_supersedes']} expected ones; "
              f"{figures['active_after']} active after clustering, {figures['semantic_written']} semantic memories; "
              f"{figures['seconds']} s")
        if options["json"]:
            self.stdout.write(json.dumps(figures))

    @staticmethod
    def _conversations(options: dict[str, Any]) -> list[locomo.Conversation]:
        """The LoCoMo conversations asked for (--path, --conversations), or a clear error when the data is absent."""
        path = Path(options["path"])
        if not locomo.available(path):
            raise CommandError(f"LoCoMo data not found at {path}: nothing to evaluate (it lives in ../shared/eval/)")
        return locomo.load(path)[: options["conversations"] or None]

    def _merges(self, options: dict[str, Any]) -> None:
        result = evaluate_merges(conversations=self._conversations(options),
                                 cluster=self._cluster, progress=self.stderr.write)
        self.stderr.write(f"{result['merged_texts']} merged texts: {result['empty_merges']} empty, "
                          f"{result['fragments']} fragments, {result['paraphrase_pairs']} paraphrase pairs "
                          f"({result['seconds']} s)")
        for kind, samples in result["samples"].items():
            for sample in samples:
                self.stderr.write(f"  {kind}: {sample}")
        if options["json"]:
            self.stdout.write(json.dumps(result))

    def _profiles(self, options: dict[str, Any]) -> None:
        result = evaluate_profiles(conversations=self._conversations(options),
                                   progress=self.stderr.write)
        self.stdout.write(f"{result['speakers_with_profile']} of {result['speakers']} speakers have a profile; "
                          f"{result['items_linked_to_turns']} of {result['profile_items']} items link to turn ids")
        if options["json"]:
            self.stdout.write(json.dumps(result))

    def _updates(self, options: dict[str, Any]) -> None:

        path = Path(options["path"]) if options["path"] else DEFAULT_PATH
        if not path.is_file():
            raise CommandError(f"knowledge-update cases not found at {path} (they live in ../shared/eval/)")

        def report(result: Any) -> None:
            self.stderr.write(f"{'PASS' if result.passed else 'FAIL'} {result.id:>8} expect={result.expect:<9} "
                              f"current_above_stale={result.current_above_stale!s:<5} "
                              f"stale_superseded={result.stale_superseded!s:<5} "
                              f"any_superseded={result.superseded_any}")

        result = evaluate_updates(
            cases=load_cases(path), report=report, reader=options["reader"],
            cluster=lambda tenant_id, user_id: clustering_run_now(tenant_id=tenant_id, user_id=user_id,
                                                                  trigger="cli"))
        self.stderr.write(f"supersede cases: {result['cases']}, current above stale: {result['current_above_stale']}, "
                          f"stale superseded: {result['stale_superseded']}; keep cases: {result['keep_cases']}, "
                          f"false supersedes: {result['false_supersedes']} (reader {result['reader']})")
        if options["json"]:
            self.stdout.write(json.dumps(result))

    def _locomo(self, options: dict[str, Any]) -> None:
        conversations = self._conversations(options)
        bars: dict[str, tqdm] = {}

        def progress(phase: str, done: int, total: int) -> None:
            if phase not in bars:
                bars[phase] = tqdm(total=total, desc=phase, unit="", file=self.stderr._out, leave=False)
            bars[phase].update(done)

        result = evaluate_locomo(
            conversations=conversations, progress=progress,
            cluster=lambda tenant_id, user_id: clustering_run_now(tenant_id=tenant_id, user_id=user_id,
                                                                  trigger="cli", force=True))
        for bar in bars.values():
            bar.close()
        self._table(result, CATEGORIES)
        if options["json"]:
            self.stdout.write(json.dumps(result))

    def _table(self, result: dict[str, Any], categories: dict[int, str]) -> None:
        write = self.stderr.write
        write(f"active memories {result['active_before']} → {result['active_after']} "
              f"(× {result['active_ratio']}); characters {result['chars_before']} → {result['chars_after']} "
              f"(× {result['chars_ratio']}); {result['memories_per_cluster']} memories per cluster")
        write(f"{'':14}{'recall@5':>18}{'recall@10':>18}{'recall@25':>18}{'budget recall':>18}"
              f"{'budget (text)':>18}{'answer hit':>18}")
        rows = [("all", result)] + [(name, result["by_category"].get(name, {})) for name in categories.values()]
        for name, row in rows:
            cells = []
            for key in ("recall_at_5", "recall_at_10", "recall_at_25", "budget_recall", "budget_recall_text",
                        "answer_hit"):
                before, after = row.get(f"{key}_before"), row.get(f"{key}_after")
                cells.append(f"{before:.3f} → {after:.3f}" if before is not None else "")
            write(f"{name:14}" + "".join(f"{c:>18}" for c in cells))
        write(f"{result['questions']} questions, {result['seconds']} s; "
              f"{result['evidence_archived_uninformative']} of {result['evidence_turns']} evidence turns archived "
              f"as small talk; {result['query_embeddings']} queries embedded, {result['query_cache_hits']} from the "
              f"query cache")
