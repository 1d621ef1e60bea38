from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from consolidation.triggers import session_end
from zeromem.models import Memory, MemoryType, Tenant


class Command(BaseCommand):
    help = ("End a user's session, as POST /sessions/{id}/end does: the first time, a consolidation pass is queued "
            "(forced clustering of the user, then reflection of each entity that became eligible); a worker runs "
            "it. Without --session, the user's current session (that of their newest memory).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="tenant name")
        parser.add_argument("--user", required=True, help="user id")
        parser.add_argument("--session", help="session id (default: the user's current session)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, tenant: str, user: str, session: str | None, **options: Any) -> None:
        found = Tenant.objects.filter(name=tenant).first()
        if found is None:
            raise CommandError(f"no tenant named {tenant!r}")
        session_id = session or self._current_session(found, user)
        ended = session_end(tenant_id=found.id, user_id=user, session_id=session_id)
        runs = ", ".join(str(run_id) for run_id in ended.run_ids) or "none"
        self.stderr.write(f"session {session_id!r} of {user!r}: "
                          + (f"consolidation pass queued; run(s) {runs}" if ended.queued else "had already ended"))
        if options["json"]:
            self.stdout.write(json.dumps({"session_id": session_id, "user_id": user, "queued": ended.queued,
                                          "run_ids": [str(run_id) for run_id in ended.run_ids]}))

    @staticmethod
    def _current_session(tenant: Tenant, user: str) -> str:
        """The session of the user's newest episode; one without a session_id belongs to its UTC day."""
        newest = (Memory.objects.filter(tenant=tenant, user_id=user).exclude(memory_type=MemoryType.SEMANTIC)
                  .order_by("-created_at").first())
        if newest is None:
            raise CommandError(f"user {user!r} has no memories in tenant {tenant.name!r}")
        return newest.session_id or newest.created_at.date().isoformat()
