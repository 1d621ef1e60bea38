"""`manage.py consolidate --dry-run` reports what the run would do, and the run then does exactly that."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from tests.factories import REDIS_BILLING, ingest
from zeromem.models import Memory

pytestmark = pytest.mark.usefixtures("hash_embedder")


def consolidate(*flags: str) -> dict[str, int]:
    out = io.StringIO()
    call_command("consolidate", "--tenant", "acme", "--user", "u1", "--json", *flags, stdout=out,
                 stderr=io.StringIO())
    return json.loads(out.getvalue().strip().splitlines()[-1])


@pytest.mark.django_db(transaction=True)
def test_a_forced_dry_run_counts_the_clusters_it_lists_and_writes_nothing(tenant):
    ingest(tenant, [f"The billing-api Redis cache hit its limit, day {i}." for i in range(3)], entities=REDIS_BILLING)

    planned = consolidate("--dry-run", "--force")

    assert (planned["users"], planned["clusters"], planned["merged"], planned["created"]) == (1, 1, 3, 1)
    assert not Memory.objects.filter(tenant=tenant).exclude(state="raw").exists()
    done = consolidate("--force")
    assert {key: done[key] for key in ("clusters", "merged", "created")} == {
        key: planned[key] for key in ("clusters", "merged", "created")}
