from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from consolidation.jobs.clustering import clustering_dry_run, clustering_run_now
from consolidation.models import RunTrigger
from zeromem.models import Memory, MemoryState, MemoryType, Tenant


class Command(BaseCommand):
    help = ("Run clustering now for one user, a tenant's users, or everyone with eligible memories. "
            "--force lifts the recency window and the current-session rule (never the run claim).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="tenant name")
        parser.add_argument("--user", help="user id (needs --tenant when several tenants have it)")
        parser.add_argument("--dry-run", action="store_true", help="show what would merge, write nothing")
        parser.add_argument("--force", action="store_true")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        targets = self._targets(options["tenant"], options["user"])
        summary = {"users": 0, "clusters": 0, "merged": 0, "created": 0, "joined": 0}
        for tenant_id, user_id in tqdm(targets, desc="users", unit="user", file=self.stderr._out):
            summary["users"] += 1
            if options["dry_run"]:
                planned = self._show_plan(tenant_id, user_id, options["force"])
                for key in ("clusters", "merged", "created"):
                    summary[key] += planned[key]
                continue
            outcome = clustering_run_now(tenant_id=tenant_id, user_id=user_id, trigger=RunTrigger.CLI,
                                         force=options["force"])
            run = outcome.run
            summary["joined"] += outcome.joined
            for key in ("clusters", "merged", "created"):
                summary[key] += getattr(run, key)
            self.stderr.write(f"{user_id}: run {run.id} {run.status}{' (joined)' if outcome.joined else ''}: "
                              f"{run.reviewed} reviewed, {run.clusters} clusters, {run.merged} merged, "
                              f"{run.created} semantic memories created")
        verb = ("would be merged", "nothing written (dry run)") if options["dry_run"] else ("merged", "")
        self.stdout.write(f"clustering: {summary['users']} users, {summary['clusters']} clusters, "
                          f"{summary['merged']} memories {verb[0]} into {summary['created']} new semantic memories"
                          + (f"; {verb[1]}" if verb[1] else ""))
        if options["json"]:
            self.stdout.write(json.dumps(summary))

    def _targets(self, tenant_name: str | None, user_id: str | None) -> list[tuple[int, str]]:
        memories = Memory.objects.all()
        if tenant_name:
            tenant = Tenant.objects.filter(name=tenant_name).first()
            if tenant is None:
                raise CommandError(f"no tenant named {tenant_name!r}")
            memories = memories.filter(tenant=tenant)
        if user_id:
            memories = memories.filter(user_id=user_id)
        pending = memories.filter(state=MemoryState.RAW).exclude(memory_type=MemoryType.SEMANTIC)
        targets = list(pending.values_list("tenant_id", "user_id").distinct().order_by("tenant_id", "user_id"))
        if user_id and not targets:
            # A user whose memories another run consolidated already has nothing to do (its run says so); a user
            # with no memory at all is most likely a typo.
            targets = list(memories.values_list("tenant_id", "user_id").distinct().order_by("tenant_id"))
            if not targets:
                raise CommandError(f"user {user_id!r} has no memories")
        return targets

    def _show_plan(self, tenant_id: int, user_id: str, force: bool) -> dict[str, int]:
        """Print what a run would merge; the counts the summary adds up (as a run would report them)."""
        plan = clustering_dry_run(tenant_id=tenant_id, user_id=user_id, force=force)
        self.stdout.write(f"{user_id}: {len(plan.loaded.ids)} memories reviewed, {len(plan.merges)} merges")
        for merge in plan.merges[:20]:
            self.stdout.write(f"  {len(merge.members)} → {merge.text[:150]}")
        return {"clusters": len(plan.merges), "merged": sum(len(m.members) for m in plan.merges),
                "created": sum(m.base is None for m in plan.merges)}
