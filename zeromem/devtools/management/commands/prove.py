from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from zeromem.devtools.proof.resilience import prove_resilience
from zeromem.devtools.proof.security import prove_security


class Command(BaseCommand):
    help = ("Proofs on their own throwaway database. `prove security`: authorization matrix, hostile input, rate "
            "limit. With --json the last stdout line is one JSON object.")

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="which", required=True)
        security = sub.add_parser("security", help="authorization matrix, fuzzing, keys and limits")
        security.add_argument("--fuzz-per-operation", type=int, default=100,
                              help="schemathesis cases per API operation (half valid, half invalid data)")
        security.add_argument("--json", action="store_true")
        resilience = sub.add_parser("resilience", help="crash rounds, overlapping triggers, faults, load")
        resilience.add_argument("--quick", action="store_true", help="a short version (inside make test)")
        resilience.add_argument("--rounds", type=int, default=None,
                                help="crash rounds per kind (clustering, reflection); default 20, quick 1")
        resilience.add_argument("--json", action="store_true")

    def handle(self, *args: Any, which: str, **options: Any) -> None:
        if which == "security":
            self._security(options)
        elif which == "resilience":
            self._resilience(options)

    def _resilience(self, options: dict[str, Any]) -> None:
        from django.conf import settings


        quick = options["quick"]
        report = prove_resilience(rounds=options["rounds"] or (1 if quick else 20),
                                  load_requests=300 if quick else 6000, load_seconds=60 if quick else 600,
                                  logs=settings.BASE_DIR / "var" / "prove-resilience", say=self.stderr.write)
        result = report.as_json()
        rows = [("crash rounds (killed mid-run)", f"{result['crash_rounds']} ({result['killed_mid_run']})", "≥ 40"),
                ("lost", result["lost"], "0"), ("duplicated", result["duplicated"], "0"),
                ("unfinished runs", result["unfinished_runs"], "0"),
                ("overlap extra runs", result["overlap_extra_runs"], "0"),
                ("fault cases", result["fault_cases"], "≥ 6"), ("fault failures", result["fault_failures"], "0"),
                ("load requests", result["load_requests"], "≥ 5,000"), ("load errors", result["load_errors"], "0"),
                ("load p50 / p99 ms", f"{result['load_p50_ms']} / {result['load_p99_ms']}", ""),
                ("search p50 / p99 ms", f"{result['load_search_p50_ms']} / {result['load_search_p99_ms']}",
                 "p99 ≤ 100 (aim)"),
                ("search p50 / p99 ms, no job running",
                 f"{result['baseline_search_p50_ms']} / {result['baseline_search_p99_ms']}", ""),
                ("requests/s", result["load_requests_per_s"], "")]
        self.stdout.write(f"{'check':<34}{'result':>16}  target")
        for name, value, target in rows:
            self.stdout.write(f"{name:<34}{str(value):>16}  {target}")
        if options["json"]:
            self.stdout.write(json.dumps(result))

    def _security(self, options: dict[str, Any]) -> None:

        report = prove_security(fuzz_per_operation=options["fuzz_per_operation"], say=self.stderr.write)
        result = report.as_json()
        for line in result["authz_failure_examples"] + result["fuzz_5xx_examples"]:
            self.stderr.write(f"  ! {line}")
        rows = [("authorization cases", result["authz_cases"], "≥ 70, every endpoint"),
                ("endpoints and pages covered", result["endpoints"], ""),
                ("authorization failures", result["authz_failures"], "0"),
                ("fuzz cases", result["fuzz_cases"], "≥ 1,000"), ("fuzz 5xx", result["fuzz_5xx"], "0"),
                ("rows written by rejected requests", result["rejected_writes"], "0"),
                ("rate limit answers 429 and releases", result["rate_limit_ok"], "true")]
        self.stdout.write(f"{'check':<40}{'result':>10}  target")
        for name, value, target in rows:
            self.stdout.write(f"{name:<40}{str(value):>10}  {target}")
        if options["json"]:
            self.stdout.write(json.dumps(result))
