from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = ("Proofs on their own throwaway database. `prove security`: authorization matrix, hostile input, rate "
            "limit. With --json the last stdout line is one JSON object.")

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="which", required=True)
        security = sub.add_parser("security", help="authorization matrix, fuzzing, keys and limits")
        security.add_argument("--fuzz-per-operation", type=int, default=100,
                              help="schemathesis cases per API operation (half valid, half invalid data)")
        security.add_argument("--json", action="store_true")

    def handle(self, *args: Any, which: str, **options: Any) -> None:
        if which == "security":
            self._security(options)

    def _security(self, options: dict[str, Any]) -> None:
        from zeromem.proof.security import prove_security

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
