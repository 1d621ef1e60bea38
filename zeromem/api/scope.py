"""What a key may see and write, in one place: its tenant, and for a key scoped to one user (`ApiKey.user_id`), only
that user.

Every route reads the key's scope through `key_scope(request)` and passes every user it is asked about, and every
memory or run it is asked for by id, through it. A scoped key naming another user, or asking for another user's
memory or run, gets the same 404 an unknown one gets, so nothing tells it that the other user exists; a request that
names no user is narrowed to the key's own.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.http import HttpRequest

from consolidation.models import ConsolidationRun
from consolidation.selectors import run_get
from zeromem.api.errors import NotFound
from zeromem.core.selectors import memory_get
from zeromem.models import ApiKey, Memory


@dataclass(frozen=True)
class KeyScope:
    tenant_id: int
    user_id: str | None  # None: the key sees the whole tenant

    def user(self, asked: str | None) -> str | None:
        """The user a request reads or writes: the one it names (None: any, for a tenant-wide key), narrowed to
        the key's own user for a scoped key. Another user answers 404."""
        if self.user_id is None:
            return asked
        if asked is not None and asked != self.user_id:
            raise NotFound("no such user")
        return self.user_id

    def named_user(self, asked: str) -> str:
        """`user` for a field the request must fill."""
        return self.user(asked) or asked

    def memory(self, memory_id: uuid.UUID) -> Memory:
        memory = memory_get(tenant_id=self.tenant_id, memory_id=memory_id, user_id=self.user_id)
        if memory is None:
            raise NotFound("no such memory")
        return memory

    def run(self, run_id: uuid.UUID) -> ConsolidationRun:
        run = run_get(tenant_id=self.tenant_id, run_id=run_id, user_id=self.user_id)
        if run is None:
            raise NotFound("no such run")
        return run


def key_scope(request: HttpRequest) -> KeyScope:
    key: ApiKey = request.auth  # set by the API's authentication: every keyed route has one
    return KeyScope(tenant_id=int(key.tenant_id), user_id=key.user_id or None)
