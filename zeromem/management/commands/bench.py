from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm


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

    def handle(self, *args: Any, which: str, **options: Any) -> None:
        if which == "ingest":
            self._ingest(options)

    def _ingest(self, options: dict[str, Any]) -> None:
        from zeromem.bench.ingest import bench_ingest

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
