""""Run clustering now" and "Reflect now" for the admin (the user page's buttons and the memory list's actions):
request the runs through the trigger services and say what will happen, and why a run would read nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.contrib import messages
from django.utils import timezone

from consolidation.models import RunTrigger
from consolidation.selectors import ReflectionScope, clustering_backlog, reflection_eligible_scopes
from consolidation.triggers import clustering_trigger_users, reflection_trigger_scopes
from zeromem.core.policies import policy_for
from zeromem.models import Tenant
from zeromem.operator.run_words import nothing_to_cluster
from zeromem.operator.wording import counted


@dataclass(frozen=True)
class Report:
    done: str  # what was queued
    warnings: list[str] = field(default_factory=list)  # why a run will read nothing, or why nothing was queued


def clustering_now(*, users: Iterable[tuple[int, str]], force: bool) -> Report:
    """Queue a clustering run per (tenant, user), with a warning for each user an unforced run would find
    nothing to read for."""
    users = list(dict.fromkeys(users))
    started, joined = clustering_trigger_users(users=users, trigger=RunTrigger.ADMIN, force=force)
    done = (f"Clustering queued for {counted(started, 'user')}{' (forced)' if force else ''}; "
            f"{joined:,} already had an active run{' (it gets the force)' if force and joined else ''}.")
    if force:
        return Report(done)
    tenants = Tenant.objects.in_bulk({tenant_id for tenant_id, _ in users})
    warnings = []
    for tenant_id, user_id in users:
        why = nothing_to_cluster(clustering_backlog(tenant=tenants[tenant_id], user_id=user_id, now=timezone.now()))
        if why:
            warnings.append(f"For {user_id} ({tenants[tenant_id].name}) the run will review no memory: {why}")
    return Report(done, warnings)


def reflection_now(*, tenant_id: int, user_id: str, force: bool) -> Report:
    """Queue reflection of each of the user's scopes that is due (any scope with an unreflected memory when
    forced); says why when none is."""
    policies = {tenant_id: policy_for(tenant_id=tenant_id)}
    scopes = reflection_eligible_scopes(policies=policies, tenant_id=tenant_id, user_id=user_id, force=force)
    if scopes:
        return reflection_scopes_now(scopes=scopes, force=force)
    waiting = len(reflection_eligible_scopes(policies=policies, tenant_id=tenant_id, user_id=user_id, force=True))
    if not waiting:
        return Report("Reflection queued for no scope.", [f"{user_id} has no unreflected memory."])
    return Report("Reflection queued for no scope.", [
        f"For {user_id}, {counted(waiting, 'entity', 'entities')} {'has' if waiting == 1 else 'have'} unreflected "
        "memories, but fewer than the reflection threshold or only in the current session; use force to reflect "
        "them."])


def reflection_scopes_now(*, scopes: list[ReflectionScope], force: bool) -> Report:
    started, busy = reflection_trigger_scopes(scopes=scopes, trigger=RunTrigger.ADMIN, force=force)
    return Report(f"Reflection queued for {counted(started, 'scope')}{' (forced)' if force else ''}; {busy:,} "
                  "skipped because that user already had an active run (trigger again once it is done).")


def report_to(say: Callable[[str, int], None], report: Report) -> None:
    """Hand the report to `say(text, level)` (a view's messages, an admin action's message_user)."""
    say(report.done, messages.SUCCESS)
    for warning in report.warnings:
        say(warning, messages.WARNING)
