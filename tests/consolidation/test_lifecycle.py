"""The lifecycle job with controlled time: decay, retention, purge; provenance of purged sources; the command."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command

from consolidation.jobs.lifecycle import lifecycle_run_now
from consolidation.ledger import memory_transition
from consolidation.models import LedgerEntry
from tests.factories import ingest_one
from zeromem.models import Memory, MemorySource

pytestmark = [pytest.mark.lifecycle, pytest.mark.usefixtures("hash_embedder")]
NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)


def add(tenant, *, days_old, importance=0.5, accessed_days_ago=None, text=None, user="u1"):
    """Specific to this file: a memory of a given age and importance (counted back from the fixed NOW the job is
    run at), optionally last read some days ago."""
    text = text or f"memory {days_old} days old at importance {importance} accessed {accessed_days_ago}"
    memory_id = ingest_one(tenant, text, user=user, session=f"s{days_old}", importance=importance,
                           created_at=NOW - timedelta(days=days_old))
    if accessed_days_ago is not None:
        Memory.objects.filter(id=memory_id).update(last_accessed_at=NOW - timedelta(days=accessed_days_ago))
    return memory_id


def run(tenant, now=NOW):
    return lifecycle_run_now(tenant_id=tenant.id, trigger="cli", now=now).run


def expected_activation(importance, days):
    return importance * 2 ** (-days / 30)


def test_decay_archives_exactly_the_memories_below_the_threshold(tenant):
    memories = {}
    for importance in (0.2, 0.5, 0.69, 0.7, 0.9):
        for days in range(0, 301, 10):
            memories[add(tenant, days_old=days, importance=importance)] = (importance, days)
    recently_read = add(tenant, days_old=300, importance=0.5, accessed_days_ago=5)
    result = run(tenant)
    below = {i for i, (imp, days) in memories.items() if imp < 0.7 and expected_activation(imp, days) < 0.05}
    archived = set(Memory.objects.filter(tenant=tenant, state="archived").values_list("id", flat=True))
    assert archived == below and len(below) > 20
    assert Memory.objects.get(id=recently_read).state == "raw"  # activation counts from the last access
    assert all(Memory.objects.get(id=i).state == "raw" for i, (imp, _) in memories.items() if imp >= 0.7)
    assert result.status == "succeeded" and result.archived == len(below) and result.result["decay"] == len(below)
    assert set(Memory.objects.filter(id__in=below).values_list("archive_reason", flat=True)) == {"decay"}
    ledger = LedgerEntry.objects.filter(action="transition.decay", run=result)
    assert {i for row in ledger for i in row.memory_ids} == {str(i) for i in below}
    raw = Memory.objects.get(id=next(i for i, v in memories.items() if v == (0.5, 60)))
    assert raw.activation == pytest.approx(expected_activation(0.5, 60), rel=1e-6)


def test_retention_archives_only_consolidated_low_importance_memories_past_the_window(tenant):
    tenant.overrides = {"archive_threshold": 0.0}  # decay off: only retention acts here
    tenant.save()
    old_low = add(tenant, days_old=120, importance=0.3)
    old_high = add(tenant, days_old=120, importance=0.6)
    young_low = add(tenant, days_old=30, importance=0.3)
    old_raw = add(tenant, days_old=120, importance=0.3, text="still active, never consolidated")
    memory_transition(tenant_id=tenant.id, memory_ids=[old_low, old_high, young_low], operation="consolidate",
                      actor="test")
    result = run(tenant)
    states = dict(Memory.objects.filter(tenant=tenant).values_list("id", "state"))
    assert states == {old_low: "archived", old_high: "consolidated", young_low: "consolidated", old_raw: "raw"}
    assert result.result["retention"] == 1 and Memory.objects.get(id=old_low).archive_reason == "retention"


def test_purge_deletes_only_archived_memories_past_the_purge_window_and_keeps_provenance(tenant, api):
    tenant.overrides = {"archive_threshold": 0.0, "retention_days": 36_500}  # the longest retention: never here
    tenant.save()
    source = add(tenant, days_old=200, text="The staging database runs PostgreSQL 15.")
    recent = add(tenant, days_old=200, text="The billing-api uses Redis for sessions.")
    active = add(tenant, days_old=200, importance=0.9, text="Our on-call rotation changes on Mondays.")
    semantic = Memory.objects.create(tenant=tenant, user_id="u1", memory_type="semantic", content="Staging: PG 15.",
                                     content_hash="x" * 64, created_at=NOW)
    MemorySource.objects.create(memory=semantic, source_id=source, source_memory_id=source,
                                source_content_hash=Memory.objects.get(id=source).content_hash)
    memory_transition(tenant_id=tenant.id, memory_ids=[source, recent], operation="decay", actor="test")
    Memory.objects.filter(id=source).update(archived_at=NOW - timedelta(days=31))
    Memory.objects.filter(id=recent).update(archived_at=NOW - timedelta(days=29))
    result = run(tenant)
    assert result.deleted == 1 and not Memory.objects.filter(id=source).exists()
    assert Memory.objects.get(id=recent).state == "archived" and Memory.objects.get(id=active).state == "raw"
    sources = api.get(f"/memories/{semantic.id}").json()["sources"]
    assert sources == [{"source_memory_id": str(source), "deleted": True, "content": None, "state": None,
                        "source_content_hash": sources[0]["source_content_hash"]}]
    assert len(sources[0]["source_content_hash"]) == 64
    deleted = LedgerEntry.objects.get(action="delete", run=result)
    assert deleted.inputs["deleted"][0]["id"] == str(source)


@pytest.mark.django_db(transaction=True)
def test_every_archive_and_deletion_is_announced_after_commit(tenant, events):
    add(tenant, days_old=300, importance=0.2)
    archived = add(tenant, days_old=300, importance=0.2, text="to be purged")
    memory_transition(tenant_id=tenant.id, memory_ids=[archived], operation="decay", actor="test")
    Memory.objects.filter(id=archived).update(archived_at=NOW - timedelta(days=40))
    run(tenant)
    kinds = [(e["event"], e["data"].get("reason")) for e in events if e["event"] != "consolidation.run_completed"]
    assert kinds == [("memory.archived", "decay"), ("memory.deleted", "purged: archived longer than the purge window")]


def test_the_lifecycle_command_dry_run_changes_nothing(tenant):
    add(tenant, days_old=900, importance=0.2)
    out = io.StringIO()
    call_command("lifecycle", "--tenant", "acme", "--dry-run", "--json", stdout=out, stderr=io.StringIO())
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    assert summary["decay"] == 1 and summary["dry_run"] is True
    assert Memory.objects.get(tenant=tenant).state == "raw"
    out = io.StringIO()
    call_command("lifecycle", "--json", stdout=out, stderr=io.StringIO())
    assert json.loads(out.getvalue().strip().splitlines()[-1])["decay"] == 1
    assert Memory.objects.get(tenant=tenant).state == "archived"


def test_the_daily_schedule_is_upserted(db):
    from django_celery_beat.models import PeriodicTask

    call_command("setup_periodic_tasks", stdout=io.StringIO())
    task = PeriodicTask.objects.get(task="consolidation.lifecycle_fan_out")
    assert (task.crontab.minute, task.crontab.hour) == ("30", "2")
    assert PeriodicTask.objects.filter(task="zeromem.flush_access").exists()
