from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from consolidation.models import ConsolidationRun
from zeromem.core import services
from zeromem.devtools.browser_check import Page, chromium_binary, screenshot_pages
from zeromem.devtools.demo import demo_run
from zeromem.models import Tenant


def _fresh_user(tenant: Tenant) -> str:
    """A user whose memories all arrived just now: unforced clustering has nothing to read (the recency window).
    And one whose episodes have waited three weeks: the home's lag in days."""
    user = "new-user"
    services.memories_ingest(tenant_id=tenant.id, items=[services.MemoryInput(
        content=text, user_id=user, session_id="today") for text in (
        "We moved the billing standup to 10am.", "The billing-api Redis cache is 512 MB.",
        "Maria owns the on-call rota this week.")])
    services.memories_ingest(tenant_id=tenant.id, items=[services.MemoryInput(
        content="The nightly export writes to the eu-west-2 bucket.", user_id="waiting-user", session_id="old",
        created_at=timezone.now() - timedelta(days=23))])
    return user


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
        tenant = demo_run(say=lambda line: None)
        run = ConsolidationRun.objects.filter(kind="clustering").latest("created_at")
        user = _fresh_user(tenant)
        pages = [Page("index", "/admin/", "Runs of the last 24 h"),
                 Page("dashboard", "/admin/dashboard/", "Memories by state"),
                 Page("review-filtered", f"/admin/review/?tenant={tenant.id}&user={run.user_id}&action=merge",
                      'class="fate"'),
                 Page("review-run", f"/admin/review/?run={run.id}", "Approve all changes of this run"),
                 Page("bulk-approve", f"/admin/review/?run={run.id}", "changes decided",
                      form={"decision": "approve", "run": str(run.id), "next": f"/admin/review/?run={run.id}"},
                      action="/admin/review/bulk/"),
                 Page("run", f"/admin/consolidation/consolidationrun/{run.id}/change/", "changes approved"),
                 Page("user-force", f"/admin/operator/user/?tenant={tenant.id}&user={user}", "recency window"),
                 Page("cluster-unforced", f"/admin/operator/user/?tenant={tenant.id}&user={user}",
                      "will review no memory", form={"tenant": str(tenant.id), "user": user},
                      action="/admin/operator/user/cluster/")]
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
