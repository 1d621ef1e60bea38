from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from consolidation.jobs.reflection import reflection_run_now
from consolidation.models import RunStatus, RunTrigger
from consolidation.selectors import ReflectionScope, reflection_eligible_scopes
from zeromem.core.policies import policies_for
from zeromem.models import Tenant


class Command(BaseCommand):
    help = ("Run reflection now for eligible entities and users (all, a tenant's, a user's, or one entity). "
            "--force lifts the thresholds and the current-session rule (never the run claim).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="tenant name")
        parser.add_argument("--user", help="user id")
        parser.add_argument("--entity", help="entity id (reflects only this entity)")
        parser.add_argument("--namespace", help="only this namespace")
        parser.add_argument("--force", action="store_true")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        scopes = self._scopes(options)
        totals = {"runs": 0, "succeeded": 0, "failed": 0, "skipped": 0, "joined": 0, "memories_reviewed": 0,
                  "new_semantic_memories": 0, "insights": 0, "llm_calls": 0, "prompt_tokens": 0,
                  "completion_tokens": 0}
        for scope in tqdm(scopes, desc="scopes", unit="scope", file=self.stderr._out):
            outcome = reflection_run_now(scope=scope, trigger=RunTrigger.CLI, force=options["force"])
            run = outcome.run
            self._add(totals, run, outcome.joined)
            self.stderr.write(f"{scope.subject} (user {scope.user_id}, {scope.namespace}): run {run.id} {run.status}"
                              f"{' (joined)' if outcome.joined else ''}: {run.reviewed} reviewed, "
                              f"{len(run.result.get('insights', []))} insights, {run.llm_calls} LLM calls"
                              f"{' — ' + run.error if run.error else ''}")
        self.stdout.write(f"reflection: {totals['runs']} runs ({totals['succeeded']} succeeded, {totals['failed']} "
                          f"failed, {totals['skipped']} skipped), {totals['memories_reviewed']} memories reviewed, "
                          f"{totals['insights']} insights, {totals['new_semantic_memories']} semantic memories")
        if options["json"]:
            self.stdout.write(json.dumps(totals))

    @staticmethod
    def _add(totals: dict[str, int], run: Any, joined: bool) -> None:
        totals["runs"] += 1
        totals["joined"] += joined
        if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.SKIPPED):
            totals[run.status] += 1
        totals["memories_reviewed"] += run.reviewed
        totals["new_semantic_memories"] += run.created
        totals["insights"] += len(run.result.get("insights", []))
        for key in ("llm_calls", "prompt_tokens", "completion_tokens"):
            totals[key] += int(getattr(run, key))

    def _scopes(self, options: dict[str, Any]) -> list[ReflectionScope]:
        tenant_id = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(name=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"no tenant named {options['tenant']!r}")
            tenant_id = tenant.id
        policies = policies_for(tenant_ids=None if tenant_id is None else [tenant_id])
        scopes = reflection_eligible_scopes(policies=policies, tenant_id=tenant_id, user_id=options["user"],
                                            entity_id=options["entity"], force=options["force"])
        if options["namespace"]:
            scopes = [s for s in scopes if s.namespace == options["namespace"]]
        if (options["entity"] or options["user"]) and not scopes:
            raise CommandError("nothing to reflect for that entity/user: no unreflected memories"
                               + ("" if options["force"] else " at the threshold (use --force to lift it)"))
        return scopes
