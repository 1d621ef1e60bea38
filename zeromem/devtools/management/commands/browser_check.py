from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from consolidation.models import ConsolidationRun
from zeromem.devtools.browser_check import Page, chromium_binary, screenshot_pages
from zeromem.devtools.demo import demo_run


class Command(BaseCommand):
    help = ("Render the operator pages (admin index, dashboard, review queue, a run) once in headless Chromium on "
            "a throwaway database with the demo scenario, served by gunicorn with WhiteNoise as in production; "
            "screenshots and the server's log under var/browser-check/.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:

        binary = chromium_binary()
        if binary is None:
            raise CommandError("Chromium not found: `apt-get install chromium` (make browser-check does it)")
        self.stderr.write("Building the demo scenario (ingest, clustering, reflection) …")
        demo_run(say=lambda line: None)
        run = ConsolidationRun.objects.filter(kind="clustering").latest("created_at")
        pages = [Page("index", "/admin/", "Review queue"), Page("dashboard", "/admin/dashboard/", "Memories by state"),
                 Page("review", "/admin/review/", "not yet decided"),
                 Page("run", f"/admin/consolidation/consolidationrun/{run.id}/change/", "Ledger entries")]
        shots = screenshot_pages(pages, out=settings.BASE_DIR / "var" / "browser-check", binary=binary,
                                 say=self.stderr.write)
        ok = all(s.rendered and s.bytes > 10_000 for s in shots)
        self.stdout.write(f"{sum(s.rendered for s in shots)} of {len(shots)} pages rendered; screenshots in "
                          f"var/browser-check/")
        if options["json"]:
            self.stdout.write(json.dumps({"pages": len(shots), "rendered": sum(s.rendered for s in shots), "ok": ok,
                                          "screenshots": {s.name: s.screenshot for s in shots}}))
        if not ok:
            raise CommandError("a page did not render: " + ", ".join(s.name for s in shots if not s.rendered))
