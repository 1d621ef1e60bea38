from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from consolidation.jobs.clustering import clustering_params
from zeromem.core.domain.policy import DEFAULT_POLICY
from zeromem.devtools.bench.clustering import bench_clustering, calibrate
from zeromem.devtools.bench.ingest import bench_ingest
from zeromem.devtools.bench.reflection import bench_reflection
from zeromem.devtools.bench.search import FULL, QUICK, TARGETS, bench_search


class Command(BaseCommand):
    help = ("Benchmarks (on their own throwaway database). `bench ingest --n 10000`. With --json the last "
            "stdout line is one JSON object; progress goes to stderr.")

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="which", required=True)
        ingest = sub.add_parser("ingest", help="memories/s through the service layer vs the bare embedder")
        ingest.add_argument("--n", type=int, default=10_000)
        ingest.add_argument("--prefill", type=int, default=10_000, help="rows already in the indexed table")
        ingest.add_argument("--batch", type=int, default=500)
        ingest.add_argument("--json", action="store_true")
        clustering = sub.add_parser("clustering", help="the clustering core on planted clusters, and the whole job")
        clustering.add_argument("--sizes", default="1000,10000,100000")
        clustering.add_argument("--all-pairs", default="1000,5000")
        clustering.add_argument("--full-job", type=int, default=10_000)
        clustering.add_argument("--recall-n", type=int, default=10_000)
        clustering.add_argument("--json", action="store_true")
        reflection = sub.add_parser("reflection", help="LLM calls and prompt tokens per memory reflected, counted by a "
                                                       "local fake OpenAI-compatible server")
        reflection.add_argument("--json", action="store_true")
        calibrate = sub.add_parser("calibrate", help="cosine scores of the embedder on same-fact/related/unrelated "
                                                     "pairs against the clustering floor")
        calibrate.add_argument("--json", action="store_true")
        search = sub.add_parser("search", help="CPU, SQL statements and latency of a search through the HTTP API "
                                               "(gunicorn), idle, during a clustering run, and for a 100,000-memory "
                                               "user")
        search.add_argument("--quick", action="store_true", help="small sizes and few searches (a minute)")
        search.add_argument("--json", action="store_true")

    def handle(self, *args: Any, which: str, **options: Any) -> None:
        if which == "ingest":
            self._ingest(options)
        elif which == "clustering":
            self._clustering(options)
        elif which == "calibrate":
            self._calibrate(options)
        elif which == "reflection":
            self._reflection(options)
        elif which == "search":
            self._search(options)

    def _search(self, options: dict[str, Any]) -> None:
        result = bench_search(plan=QUICK if options["quick"] else FULL, say=self.stderr.write)
        machine = result["machine"]
        self.stdout.write(f"machine: {machine['cores']} cores, load average at start "
                          f"{' '.join(str(x) for x in machine['load_average_start'])}; {result['note']}")
        for key, target in TARGETS.items():
            self.stdout.write(f"{key}: {result[key]} (target <= {target})")
        if options["json"]:
            self.stdout.write(json.dumps(result))

    def _reflection(self, options: dict[str, Any]) -> None:

        result = bench_reflection(say=self.stderr.write)
        self.stdout.write(f"calls per 1,000 memories sent: {result['calls_per_1000']} (target <= 75); prompt tokens "
                          f"per memory: {result['prompt_tokens_per_memory']} (target <= 150)")
        if options["json"]:
            self.stdout.write(json.dumps(result))

    def _calibrate(self, options: dict[str, Any]) -> None:
        result = calibrate(floor=DEFAULT_POLICY.clustering.cosine_floor)
        for group in ("same_fact", "related", "unrelated"):
            row = result[group]
            self.stderr.write(f"{group:>10}: min {row['min']:.3f}  median {row['median']:.3f}  max {row['max']:.3f}  "
                              f"{row['above_floor']}/{row['pairs']} at or above the floor {result['floor']}")
        if options["json"]:
            self.stdout.write(json.dumps(result))

    def _clustering(self, options: dict[str, Any]) -> None:

        result = bench_clustering(sizes=_ints(options["sizes"]), all_pairs_sizes=_ints(options["all_pairs"]),
                                  full_job_n=options["full_job"], recall_n=options["recall_n"],
                                  params=clustering_params(DEFAULT_POLICY.clustering), say=self.stderr.write)
        if options["json"]:
            self.stdout.write(json.dumps(result))

    def _ingest(self, options: dict[str, Any]) -> None:

        bars: dict[str, tqdm] = {}

        def progress(phase: str, done: int) -> None:
            if phase not in bars:
                bars[phase] = tqdm(total=options["n"], desc=phase, unit="mem", file=self.stderr._out)
            bars[phase].update(done)

        result = bench_ingest(n=options["n"], prefill_rows=options["prefill"], batch=options["batch"],
                              progress=progress)
        for bar in bars.values():
            bar.close()
        self.stderr.write(f"ingest: {result['per_second']}/s through the service layer; bare embedder "
                          f"{result['embedder_per_second']}/s; ratio {result['ratio']}")
        if options["json"]:
            self.stdout.write(json.dumps(result))


def _ints(csv: str) -> list[int]:
    return [int(x) for x in csv.split(",") if x.strip()]
