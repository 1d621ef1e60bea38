from __future__ import annotations

import json
import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from zeromem.devtools.proof.deployment import prove_deployment
from zeromem.devtools.proof.resilience import Churn, prove_resilience
from zeromem.devtools.proof.security import prove_security


class Command(BaseCommand):
    help = ("Proofs on their own throwaway database. `prove security`: authorization matrix, hostile input, limits, "
            "rate limit, cross-tenant canaries. `prove resilience`: crashes, overlaps, faults, load. "
            "`prove deployment`: docker-compose.yml's own commands against embedded services. With --json the last "
            "stdout line is one JSON object.")

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
        resilience.add_argument("--overlap-only", type=int, default=0, metavar="N",
                                help="only the overlapping-triggers check, N times in a row (its repeatability)")
        resilience.add_argument("--churn-only", action="store_true",
                                help="only the churn (20 clients adding, correcting, deleting, searching 3 users)")
        resilience.add_argument("--json", action="store_true")
        deployment = sub.add_parser("deployment", help="docker-compose.yml's migrate, web, worker and beat, checked")
        deployment.add_argument("--quick", action="store_true",
                                help="one gunicorn worker, shorter waits, no down-healthcheck round (the test suite)")
        deployment.add_argument("--json", action="store_true")

    def handle(self, *args: Any, which: str, **options: Any) -> None:
        if which == "security":
            self._security(options)
        elif which == "resilience":
            self._resilience(options)
        elif which == "deployment":
            self._deployment(options)

    def _deployment(self, options: dict[str, Any]) -> None:
        if os.environ.get("ZEROMEM_EMBEDDED") != "1":
            raise CommandError("prove deployment creates and drops a database and runs a worker on the broker: it "
                               "runs only on the embedded services (unset DATABASE_URL and REDIS_URL)")
        report = prove_deployment(quick=options["quick"], logs=settings.BASE_DIR / "var" / "prove-deployment",
                                  say=self.stderr.write)
        result = report.as_json()
        for note in result["notes"]:
            self.stderr.write(f"  ! {note}")
        rows = [("compose services, in order", " → ".join(result["services"]), "migrate first"),
                ("collectstatic (Dockerfile line)", result["collectstatic_ok"], "true"),
                ("migrate exit 0", result["migrate_ok"], "true"), ("beat schedules", result["schedules"], "> 0"),
                ("admin CSS/JS via gunicorn", f"{result['static_ok']} ({result['static_assets']})", "true"),
                ("/healthz", result["health_ok"], "true"), ("beat dispatched", result["beat_dispatched"], "true"),
                ("session end → run succeeded", result["worker_processed"], "true"),
                ("/docs with nothing off-machine", result["docs_offline"], "true"),
                ("compose healthchecks pass", result["healthchecks_ok"], "true"),
                ("... and fail with services down", result["healthchecks_fail_when_down"], "true (full form)"),
                ("processes left", result["processes_left"], "0"), ("failures", result["failures"], "0")]
        self._table(rows, result, options, widths=(34, 28))

    def _resilience(self, options: dict[str, Any]) -> None:
        quick = options["quick"]
        report = prove_resilience(rounds=options["rounds"] or (1 if quick else 20),
                                  load_requests=300 if quick else 6000, load_seconds=60 if quick else 600,
                                  logs=settings.BASE_DIR / "var" / "prove-resilience", say=self.stderr.write,
                                  overlap_only=options["overlap_only"], churn_only=options["churn_only"],
                                  churn_plan=Churn(seconds=8, requests=100) if quick else Churn(),
                                  restart_rounds=1 if quick else 5, dead_worker_rounds=1 if quick else 2)
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
                ("requests/s", result["load_requests_per_s"], ""),
                ("churn requests (requests/s)", f"{result['churn_requests']} ({result['churn_requests_per_s']})",
                 "≥ 5,000"),
                ("churn errors / 5xx", f"{result['churn_errors']} / {result['churn_5xx']}", "0 / 0"),
                ("churn writes unreadable / deletes undone",
                 f"{result['churn_unreadable']} / {result['churn_undeleted']}", "0 / 0"),
                ("churn retries (invisible to clients)", result["churn_retries"], ""),
                ("churn counters off a recount", result["churn_stats_drift"], "0"),
                ("churn counter rows a term", result["churn_counter_rows_per_term"], "~1"),
                ("duplicate keys", result["duplicate_keys"], "0"),
                ("PostgreSQL / broker restart rounds",
                 f"{result['pg_restart_rounds']} / {result['broker_restart_rounds']}", "≥ 5 / ≥ 5"),
                ("runs late after a restart (slowest s)",
                 f"{result['restart_late_runs']} ({result['restart_finish_max_s']})", "0 (≤ 120)"),
                ("dead-worker rounds, recovery s",
                 f"{result['dead_worker_rounds']}, {result['dead_worker_recovery_s']}", "≤ 90")]
        self._table(rows, result, options, widths=(42, 16))

    def _security(self, options: dict[str, Any]) -> None:
        report = prove_security(fuzz_per_operation=options["fuzz_per_operation"], say=self.stderr.write)
        result = report.as_json()
        for line in (result["authz_failure_examples"] + result["fuzz_5xx_examples"]
                     + result["limit_failure_examples"] + result["cross_scope_link_examples"]):
            self.stderr.write(f"  ! {line}")
        rows = [("authorization cases", result["authz_cases"], "≥ 70, every endpoint"),
                ("endpoints and pages covered", result["endpoints"], ""),
                ("authorization failures", result["authz_failures"], "0"),
                ("fuzz cases", result["fuzz_cases"], "≥ 1,000"), ("fuzz 5xx", result["fuzz_5xx"], "0"),
                ("rows written by rejected requests", result["rejected_writes"], "0"),
                ("limit cases not answered 422 by field", result["limit_failures"], "0"),
                ("property-based metadata (refused)",
                 f"{result['metadata_fuzz_cases']} ({result['fuzz_metadata_422']})", "both sides"),
                ("rate limit answers 429 and releases", result["rate_limit_ok"], "true"),
                ("job kinds run across scopes", result["cross_scope_jobs"], "≥ 6"),
                ("links across tenants or users", result["cross_scope_links"], "0")]
        self._table(rows, result, options, widths=(40, 10))

    def _table(self, rows: list[tuple[str, Any, str]], result: dict[str, Any], options: dict[str, Any], *,
               widths: tuple[int, int]) -> None:
        """The human table (check, result, target), then with --json the result as the last stdout line."""
        name_width, value_width = widths
        self.stdout.write(f"{'check':<{name_width}}{'result':>{value_width}}  target")
        for name, value, target in rows:
            self.stdout.write(f"{name:<{name_width}}{str(value):>{value_width}}  {target}")
        if options["json"]:
            self.stdout.write(json.dumps(result))
