from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from consolidation.jobs.lifecycle import lifecycle_counts, lifecycle_run_now, lifecycle_summary
from consolidation.models import RunTrigger
from zeromem.models import Tenant


class Command(BaseCommand):
    help = ("Run the lifecycle now (decay and retention → archived, purge of old archived memories) for every "
            "tenant or one; --dry-run counts what each step would take and changes nothing.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="tenant name")
        parser.add_argument("--dry-run", action="store_true")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        tenants = Tenant.objects.order_by("name")
        if options["tenant"]:
            tenants = tenants.filter(name=options["tenant"])
            if not tenants.exists():
                raise CommandError(f"no tenant named {options['tenant']!r}")
        totals = {"tenants": 0, "decay": 0, "retention": 0, "purge": 0, "dry_run": options["dry_run"]}
        for tenant in tqdm(list(tenants), desc="tenants", unit="tenant", file=self.stderr._out):
            row = (lifecycle_counts(tenant=tenant) if options["dry_run"] else
                   lifecycle_summary(lifecycle_run_now(tenant_id=tenant.id, trigger=RunTrigger.CLI).run))
            self.stderr.write(f"{tenant.name}: {row}")
            totals["tenants"] += 1
            for step in ("decay", "retention", "purge"):
                totals[step] += int(row.get(step, 0))
        verb = "would archive" if options["dry_run"] else "archived"
        self.stdout.write(f"lifecycle: {totals['tenants']} tenants; {verb} {totals['decay']} (decay) + "
                          f"{totals['retention']} (retention); {'would delete' if options['dry_run'] else 'deleted'} "
                          f"{totals['purge']} (purge)")
        if options["json"]:
            self.stdout.write(json.dumps(totals))
