from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from tqdm import tqdm

from zeromem.devtools.evaluation import language as language_evaluation
from zeromem.devtools.evaluation import locomo, longmemeval, nightly, runs, scoreboard, updates
from zeromem.devtools.evaluation.opsignals import SCENARIOS
from zeromem.devtools.evaluation.retrieval import CATEGORIES
from zeromem.devtools.evaluation.splits import ALL, SPLITS
from zeromem.devtools.language.labelled import LABELLED_PATH
from zeromem.devtools.results import ROOT, commit_of, machine_info
from zeromem.language.readers import READERS


class Command(BaseCommand):
    help = ("Quality measured on ../shared/eval (own throwaway database). `evaluate locomo`: retrieval before "
            "and after clustering; `evaluate nightly`: each conversation replayed night by night on a simulated "
            "clock, beat's jobs as scheduled, then a year of idle nights. `--split dev|test` takes one half of the "
            "frozen split (tune on dev, report test; default: every item). With --json the last stdout line is one "
            "JSON object.")

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="which", required=True)
        run = sub.add_parser("locomo", help="store size and retrieval before/after clustering on LoCoMo")
        run.add_argument("--path", default=str(locomo.DEFAULT_PATH))
        run.add_argument("--conversations", type=int, default=0, help="only the first N (0 = all)")
        cases = sub.add_parser("updates", help="knowledge updates: stale values superseded, true ones kept")
        cases.add_argument("--path", default=None, help="cases.jsonl (default ../shared/eval/updates/)")
        cases.add_argument("--reader", choices=sorted(READERS), default=None,
                           help="the language reader judging the pairs (default: the policy's, updates.reader)")
        merges = sub.add_parser("merges", help="what clustering writes on LoCoMo: empty merges, fragments, paraphrases")
        merges.add_argument("--path", default=str(locomo.DEFAULT_PATH))
        merges.add_argument("--conversations", type=int, default=0, help="only the first N (0 = all)")
        profiles = sub.add_parser("profiles", help="reflection on LoCoMo: every speaker's profile, linked to turns")
        profiles.add_argument("--path", default=str(locomo.DEFAULT_PATH))
        profiles.add_argument("--conversations", type=int, default=0, help="only the first N (0 = all)")
        lme = sub.add_parser("longmemeval", help="LongMemEval knowledge updates: current above stale, stale retired")
        lme.add_argument("--variant", choices=longmemeval.VARIANTS, default="oracle",
                         help="oracle: evidence sessions only; s: with ~45 filler sessions")
        lme.add_argument("--data", default=None, help="a folder holding oracle/ (and s/); default "
                                                      "../shared/eval/longmemeval/")
        lme.add_argument("--questions", type=int, default=0, help="only the first N answerable questions (0 = all)")
        ops = sub.add_parser("opsignals", help="an incident's monitoring events: flags and supersedes after clustering")
        ops.add_argument("--window-as", choices=("field", "tags"), default="field",
                         help="the window as MemoryInput.window (field) or as a tag window:<name> (tags)")
        ops.add_argument("--scenario", choices=SCENARIOS, default="incident",
                         help="incident: latency, errors, alerts of one outage; capacity: six days of other readings "
                              "and a few configuration changes that should be superseded")
        night = sub.add_parser("nightly", help="a year of nights: conversations replayed one session day at a time "
                                               "with the scheduled clustering and weekly reflection, then idle nights")
        night.add_argument("--data", choices=("locomo", "longmemeval"), default="locomo")
        night.add_argument("--path", default=None, help="the LoCoMo json, or a folder holding LongMemEval's oracle/ "
                                                       "(default: in ../shared/eval/)")
        night.add_argument("--conversations", type=int, default=0,
                           help="only the first N conversations (LongMemEval: questions; 0 = all)")
        night.add_argument("--nights", type=int, default=0, help="only each conversation's first N nights (0 = all)")
        night.add_argument("--idle-nights", type=int, default=nightly.IDLE_NIGHTS,
                           help="nights without input after the last one (default %(default)s)")
        night.add_argument("--lifecycle", action="store_true",
                           help="also the daily lifecycle (decay, retention, purge) at its scheduled time")
        for evaluation in (run, cases, merges, profiles, lme, ops, night):
            evaluation.add_argument("--split", choices=(*SPLITS, ALL), default=ALL,
                                    help="the frozen split's dev or test half, or all items (default)")
            evaluation.add_argument("--json", action="store_true")
        board = sub.add_parser("scoreboard", help="every quality evaluation once, beside the landed figures")
        board.add_argument("--split", choices=SPLITS, default="test", help="default test, the reported half")
        board.add_argument("--quick", action="store_true",
                           help=f"only the first {runs.QUICK_ITEMS} items of each data set (a smoke run)")
        board.add_argument("--record", action="store_true",
                           help="keep today's figures as the landed ones (run it on the landed code)")
        board.add_argument("--data", default=str(runs.DATA), help="a folder laid out as ../shared/eval/ (default)")
        board.add_argument("--file", default=str(scoreboard.PATH), help="the landed figures (docs/scoreboard.json)")
        board.add_argument("--only", action="append", choices=runs.SCOREBOARD,
                           help="only these evaluations (default: all of them)")
        board.add_argument("--json", action="store_true")
        language = sub.add_parser("language", help="each reader's accuracy per judgement on the labelled language set")
        language.add_argument("--split", choices=(*SPLITS, ALL), default="dev")
        language.add_argument("--reader", action="append", choices=sorted(READERS), help="only these (default: all)")
        language.add_argument("--labelled", default=str(LABELLED_PATH), help="the labelled set (jsonl)")
        language.add_argument("--locomo", default=str(locomo.DEFAULT_PATH), help="LoCoMo data for its labelled turns")
        language.add_argument("--json", action="store_true")

    def handle(self, *args: Any, which: str, **options: Any) -> None:
        # Each evaluation's tenant runs without the safety net (`evaluation_tenant`): it measures retrieval itself.
        handler = {"locomo": self._locomo, "updates": self._updates, "profiles": self._profiles,
                   "longmemeval": self._longmemeval, "opsignals": self._opsignals, "merges": self._merges,
                   "scoreboard": self._scoreboard, "language": self._language,
                   "nightly": self._nightly}[which]
        try:
            handler(options)
        except runs.NothingToEvaluate as error:
            raise CommandError(str(error)) from error

    def _emit(self, result: dict[str, Any], options: dict[str, Any]) -> None:
        self.stderr.write(f"split {result['split']}: {result['items']} of {result['items_total']} items")
        if options["json"]:
            self.stdout.write(json.dumps(result))

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
        progress, close = self._bars()
        result = runs.longmemeval_run(
            root=Path(options["data"]) if options["data"] else longmemeval.DEFAULT_PATH, variant=options["variant"],
            split=options["split"], limit=options["questions"], progress=progress, say=self.stderr.write)
        close()
        write = self.stderr.write
        for item in result["supersedes_outside_evidence_list"]:
            write(f"supersede outside the evidence: {item['question_id']}: {item['older']!r} → {item['newer']!r}")
        figures = ", ".join(f"{key} {result[key]}" for key in (
            "current_above_stale_before", "current_above_stale_after", "current_only_at_10_before",
            "current_only_at_10_after", "ctx_current_no_stale_after", "ctx_newest_is_current_after", "stale_retired",
            "current_lost", "false_retirements", "supersedes_outside_evidence", "flags", "statements_lost"))
        with_stale = sum(q["has_stale"] for q in result["per_question"])
        write(f"{result['questions']} questions ({options['variant']}; {with_stale} with a stale turn), "
              f"{result['memories']} memories: {figures}; {result['seconds']} s")
        self._emit(result, options)

    def _language(self, options: dict[str, Any]) -> None:
        outcome = language_evaluation.evaluate_language_run(
            labelled_path=Path(options["labelled"]), locomo_path=Path(options["locomo"]), split=options["split"],
            reader_names=options["reader"] or list(READERS), workers=settings.ZEROMEMORY_EMBEDDING_WORKERS,
            cache_dir=Path(settings.ZEROMEMORY_MODEL_CACHE_DIR), report=self.stderr.write)
        if options["json"]:
            self.stdout.write(json.dumps(outcome))

    def _nightly(self, options: dict[str, Any]) -> None:
        result = runs.nightly_run(data=options["data"], path=Path(options["path"]) if options["path"] else None,
                                  split=options["split"], limit=options["conversations"], nights=options["nights"],
                                  idle_nights=options["idle_nights"], lifecycle=options["lifecycle"],
                                  say=self.stderr.write)
        self.stderr.write(", ".join(f"{key} {result.get(key)}" for key in nightly.HEADLINE if key in result)
                          + f"; {result['seconds']} s")
        self._emit(result, options)

    def _opsignals(self, options: dict[str, Any]) -> None:
        outcome = runs.opsignals_run(now=timezone.now(), split=options["split"], window_as=options["window_as"],
                                     scenario=options["scenario"], say=self.stderr.write)
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
        self._emit(figures, options)

    def _merges(self, options: dict[str, Any]) -> None:
        result = runs.merges_run(path=Path(options["path"]), split=options["split"], limit=options["conversations"],
                                 say=self.stderr.write)
        self.stderr.write(f"{result['merged_texts']} merged texts: {result['empty_merges']} empty, "
                          f"{result['fragments']} fragments, {result['paraphrase_pairs']} paraphrase pairs, "
                          f"{result['cross_session_joins']} cross-session joins, {result['orphaned_referents']} "
                          f"orphaned referents, {result['content_free']} content-free, {result['statements_lost']} "
                          f"statements lost ({result['seconds']} s)")
        for kind, samples in result["samples"].items():
            for sample in samples:
                self.stderr.write(f"  {kind}: {sample}")
        self._emit(result, options)

    def _profiles(self, options: dict[str, Any]) -> None:
        result = runs.profiles_run(path=Path(options["path"]), split=options["split"],
                                   limit=options["conversations"], say=self.stderr.write)
        self.stdout.write(f"{result['speakers_with_profile']} of {result['speakers']} speakers have a profile; "
                          f"{result['items_linked_to_turns']} of {result['profile_items']} items link to turn ids")
        self._emit(result, options)

    def _updates(self, options: dict[str, Any]) -> None:
        def report(result: updates.CaseResult) -> None:
            self.stderr.write(f"{'PASS' if result.passed else 'FAIL'} {result.id:>8} expect={result.expect:<9} "
                              f"current_above_stale={result.current_above_stale!s:<5} "
                              f"stale_superseded={result.stale_superseded!s:<5} "
                              f"any_superseded={result.superseded_any}")

        path = Path(options["path"]) if options["path"] else updates.DEFAULT_PATH
        result = runs.updates_run(path=path, split=options["split"], report=report, reader=options["reader"])
        self.stderr.write(f"supersede cases: {result['cases']}, current above stale: {result['current_above_stale']}, "
                          f"stale superseded: {result['stale_superseded']}; keep cases: {result['keep_cases']}, "
                          f"false supersedes: {result['false_supersedes']} (reader {result['reader']})")
        self._emit(result, options)

    def _locomo(self, options: dict[str, Any]) -> None:
        progress, close = self._bars()
        result = runs.locomo_run(path=Path(options["path"]), split=options["split"], limit=options["conversations"],
                                 progress=progress)
        close()
        self._table(result, CATEGORIES)
        self._emit(result, options)

    def _scoreboard(self, options: dict[str, Any]) -> None:
        """1. run every quality evaluation on the split; 2. compare with the landed figures and print the table;
        3. with --record, keep today's figures as the landed ones."""
        split, path = options["split"], Path(options["file"])
        if options["record"] and options["quick"]:
            raise CommandError("a --quick run is a smoke run: its figures cannot be recorded as the landed ones")
        progress, close = self._bars()
        results = runs.scoreboard_run(data=Path(options["data"]), split=split, quick=options["quick"],
                                      progress=progress, say=self.stderr.write,
                                      only=tuple(options["only"] or runs.SCOREBOARD))
        close()
        landed, today = scoreboard.landed(split, path), scoreboard.figures_of(results)
        items = scoreboard.items_of(results)
        comparison = scoreboard.compare(landed=landed.get("figures", {}), today=today)
        self.stderr.write(f"split {split}; landed figures: {landed.get('commit', 'none recorded')}")
        for line in scoreboard.table(comparison) + scoreboard.item_changes(landed.get("items", {}), items):
            self.stderr.write(line)
        if options["record"]:
            entry = {"commit": commit_of(ROOT), "recorded_at": timezone.now().strftime("%Y-%m-%d %H:%M UTC"),
                     "machine": machine_info(), "items": items, "figures": today}
            scoreboard.write(split=split, path=path, entry=entry)
            self.stderr.write(f"recorded as the landed figures of the {split} split in {path}")
        if options["json"]:
            totals = {name: result["items_total"] for name, result in results.items()}
            self.stdout.write(json.dumps({"split": split, "quick": options["quick"], "items": items,
                                          "items_total": totals, **comparison}))

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
        write(f"{result['statements_lost']} statements lost" + "".join(
            f"\n  statements_lost: {sample}" for sample in result["samples"]["statements_lost"]))
        for pair in result["supersedes_list"]:
            write(f"superseded: {pair['user_id']}: {pair['older']!r} → {pair['newer']!r}")
        write(f"{result['supersedes']} supersedes ({result['supersedes_per_1000_turns']} per 1000 turns)")
