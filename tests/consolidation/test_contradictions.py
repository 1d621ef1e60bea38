"""Contradiction rules (pure) and what the clustering job does with them (database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from consolidation.domain.contradictions import COMPATIBLE, CONTRADICTS, SUPERSEDE, Statement, judge
from consolidation.jobs.clustering import clustering_run_now
from consolidation.models import LedgerEntry
from tests.factories import DAY, MINUTE, ingest_one
from zeromem.models import Memory, MemoryRelation

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def verdict(older, newer, gap=timedelta(days=30)):
    return judge(Statement.parse(older, T0), Statement.parse(newer, T0 + gap)).kind


@pytest.mark.parametrize("older,newer", [
    ("The nightly backup runs at 02:00.", "We moved the nightly backup to 03:30."),
    ("Our Redis has 2 GB of memory.", "Redis memory was raised to 4 GB."),
    ("I am vegetarian.", "I am not vegetarian anymore."),
    ("The release train leaves every 14 days.", "The release train leaves every 7 days."),
    ("My favourite editor is Vim.", "I switched my editor from Vim to Helix."),
])
def test_a_later_update_supersedes(older, newer):
    assert verdict(older, newer) == SUPERSEDE


@pytest.mark.parametrize("older,newer", [
    ("The deploy window is Tuesday.", "We also deploy hotfixes on Friday."),
    ("I drink coffee every morning.", "I drink tea in the afternoon."),
    ("Tom is my manager.", "Sarah manages the design team."),
    ("The staging database has 2 replicas.", "The analytics database has 5 replicas."),
    ("I went to Paris in May.", "I went to Paris in May."),
])
def test_compatible_statements_are_left_alone(older, newer):
    assert verdict(older, newer) == COMPATIBLE


def test_statements_made_at_the_same_time_are_flagged_not_superseded():
    assert verdict("The queue limit is 500.", "The queue limit is 800.", gap=timedelta(minutes=1)) == CONTRADICTS


def test_a_changed_name_without_an_update_cue_is_flagged_not_superseded():
    assert verdict("The on-call engineer this week is Priya Shah.",
                   "The on-call engineer this week is Omar Haddad.") == CONTRADICTS


@pytest.mark.django_db(transaction=True)
def test_a_supersede_archives_the_older_statement_with_ledger_row_relation_and_event(tenant, events, now):
    old = ingest_one(tenant, "Max retries for the payment worker is 3.", session="a", created_at=now - 60 * DAY)
    new = ingest_one(tenant, "We bumped payment worker max retries to 8.", session="b", created_at=now - 5 * DAY)
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli").run
    stale = Memory.objects.get(id=old)
    assert run.superseded == 1
    assert stale.state == "archived" and stale.superseded_by_id == new and stale.valid_to is not None
    assert MemoryRelation.objects.filter(from_memory_id=new, to_memory_id=old, relation_type="supersedes").exists()
    entry = LedgerEntry.objects.get(action="supersede")
    assert entry.inputs["older"]["content"].startswith("Max retries") and entry.reason == "update cue"
    assert "memory.superseded" in [e["event"] for e in events]


@pytest.mark.django_db(transaction=True)
def test_a_flagged_contradiction_leaves_both_active_with_a_ledger_row(tenant, now):
    first = ingest_one(tenant, "The queue limit is 500 messages.", session="a", created_at=now - 10 * DAY)
    second = ingest_one(tenant, "The queue limit is 800 messages.", session="a2",
                        created_at=now - 10 * DAY + 2 * MINUTE)  # said two minutes later: a contradiction
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    relation = MemoryRelation.objects.get(relation_type="contradicts")
    assert relation.flagged and {relation.from_memory_id, relation.to_memory_id} == {first, second}
    assert not Memory.objects.filter(id__in=[first, second], state="archived").exists()
    assert LedgerEntry.objects.filter(action="contradiction.flagged").count() == 1


@pytest.mark.django_db(transaction=True)
def test_still_true_statements_are_neither_superseded_nor_archived(tenant, now):
    ids = [ingest_one(tenant, "The staging cluster has 3 nodes.", session="a", created_at=now - 60 * DAY),
           ingest_one(tenant, "The production cluster has 12 nodes.", session="b", created_at=now - 5 * DAY)]
    ingest_one(tenant, "Good morning!", session="today", created_at=now)
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli")
    assert not Memory.objects.filter(id__in=ids, state="archived").exists()
    assert not MemoryRelation.objects.filter(relation_type="supersedes").exists()


def test_a_long_turn_is_superseded_only_when_everything_it_says_is_replaced():
    from consolidation.domain.contradictions import judge_texts

    older = "Melanie: I'm painting a lot these days. My daughter loves the beach and we go every weekend."
    newer = "Melanie: I finished my painting class, now I'm doing pottery."
    assert judge_texts(older, T0, newer, T0 + timedelta(days=20)).kind != SUPERSEDE
    assert judge_texts("Our Postgres is version 14.", T0, "We upgraded Postgres to version 17.",
                       T0 + timedelta(days=20)).kind == SUPERSEDE
