"""`manage.py end_session` does what POST /sessions/{id}/end does, defaulting to the user's current session."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from consolidation.models import ConsolidationRun, RunKind, SessionEnd
from tests.factories import HOUR, ingest, memory_input


def end_session(*flags: str) -> dict:
    out = io.StringIO()
    call_command("end_session", "--tenant", "acme", "--user", "u1", "--json", *flags, stdout=out,
                 stderr=io.StringIO())
    return json.loads(out.getvalue().strip().splitlines()[-1])


@pytest.mark.django_db
def test_it_ends_the_current_session_once_and_names_the_forced_clustering_run(tenant, now):
    ingest(tenant, [memory_input("an older session", session="s1", created_at=now - 2 * HOUR),
                    memory_input("the current session", session="s2", created_at=now)])

    first, second = end_session(), end_session()

    assert (first["session_id"], first["queued"], second["queued"], second["run_ids"]) == ("s2", True, False, [])
    run = ConsolidationRun.objects.get(id=first["run_ids"][0])
    assert (run.kind, run.force, run.trigger) == (RunKind.CLUSTERING, True, "session_end")
    assert SessionEnd.objects.filter(tenant=tenant, user_id="u1", session_id="s2").count() == 1


@pytest.mark.django_db
def test_a_named_session_is_ended_and_an_unknown_user_is_an_error(tenant):
    assert end_session("--session", "chat-7")["session_id"] == "chat-7"
    with pytest.raises(CommandError, match="no memories"):
        call_command("end_session", "--tenant", "acme", "--user", "nobody", stdout=io.StringIO(),
                     stderr=io.StringIO())
