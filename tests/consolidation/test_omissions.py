"""The omission check (issue 34): after a clustering run wrote, a sample of the statements it consolidated is
searched for; a run that lost more of them than the tenant allows is held for review, with its changes in the
review queue, until an operator releases it or rejects it whole."""

from __future__ import annotations

import re

import pytest

from consolidation.corrections.review import ReviewFilter, review_decide_runs, review_queue
from consolidation.domain.merging import Chunk
from consolidation.jobs import clustering as clustering_jobs
from consolidation.jobs.omissions import READ_FACTOR, Omissions, sentences_drawn, statements_sampled
from consolidation.models import ConsolidationRun, LedgerEntry
from tests.consolidation.test_safety_net import INCIDENTS, cluster, incidents, with_neighbours, world
from tests.factories import ingest
from zeromem.language.values import written_in as states
from zeromem.models import Memory

pytestmark = [pytest.mark.operator, pytest.mark.usefixtures("hash_embedder")]
REAL_MERGE = clustering_jobs.merge_cluster


def lossy_merge(members, **kwargs):
    """The real merge with every number struck out of what it writes: each sentence keeps its words (so it is
    still found by them, and the canaries pass), none keeps its value."""
    return [Chunk(re.sub(r"\d+", "", chunk.text), chunk.members) for chunk in REAL_MERGE(members, **kwargs)]


def overrides(tenant, **sections):
    tenant.overrides = sections
    tenant.save()


@pytest.mark.django_db(transaction=True)
def test_a_lossy_merge_lands_the_run_in_the_review_queue_as_held(tenant, monkeypatch, admin_client, now,
                                                                   three_days_ago):
    incidents(tenant, INCIDENTS, created_at=three_days_ago)
    with_neighbours(tenant, now)
    monkeypatch.setattr(clustering_jobs, "merge_cluster", lossy_merge)

    run = cluster(tenant)

    assert run.status == "succeeded" and not run.result["canaries"]["failed"]  # the canaries saw nothing wrong
    assert run.held and run.omissions > 0 and run.omission_checked >= run.omissions
    assert run.result["omissions"]["held"] and run.result["omissions"]["missing"][0].startswith("memory ")
    held = review_queue(scope=ReviewFilter(held=True))
    assert set(held) == set(review_queue(scope=ReviewFilter(run_id=run.id))) and held.filter(action="merge").exists()
    page = admin_client.get("/admin/review/", {"held": "on"}).content.decode()
    assert page.count('class="module review-item"') == held.count()
    assert f"held by the omission check: {run.omissions} of {run.omission_checked}" in page
    run_page = admin_client.get(f"/admin/consolidation/consolidationrun/{run.id}/change/").content.decode()
    assert "is held for review" in run_page
    for incident in INCIDENTS:  # the run's result names memories, never what they say
        assert incident not in str(run.result)


@pytest.mark.django_db(transaction=True)
def test_a_run_that_keeps_every_value_is_checked_and_not_held(tenant, now, three_days_ago):
    incidents(tenant, INCIDENTS, created_at=three_days_ago)
    with_neighbours(tenant, now)

    run = cluster(tenant)

    assert run.status == "succeeded" and run.merged >= 4
    assert run.omission_checked >= 4 and run.omissions == 0 and not run.held
    assert not review_queue(scope=ReviewFilter(held=True)).exists()


@pytest.mark.django_db(transaction=True)
def test_rejecting_a_held_run_undoes_it_whole_and_releases_it(tenant, monkeypatch, now, three_days_ago):
    incidents(tenant, INCIDENTS, created_at=three_days_ago)
    with_neighbours(tenant, now)
    before = world(tenant)
    monkeypatch.setattr(clustering_jobs, "merge_cluster", lossy_merge)
    run = cluster(tenant)
    assert run.held

    decided = review_decide_runs(run_ids=[run.id], decision="reject", actor="admin:ops")

    assert decided.applied >= 2 and not decided.refused
    memories, links, relations = world(tenant)
    created = set(memories) - set(before[0])
    assert created and all(memories[m][0] == "archived" for m in created)
    assert {m: v for m, v in memories.items() if m not in created} == before[0]  # the sources back as they were
    assert links == before[1] and relations == before[2]
    assert not ConsolidationRun.objects.get(id=run.id).held
    assert LedgerEntry.objects.get(run=run, action="run.reject").actor == "admin:ops"
    assert not review_queue(scope=ReviewFilter(run_id=run.id)).exists()


@pytest.mark.django_db(transaction=True)
def test_approving_a_held_run_keeps_its_changes_and_releases_it(tenant, monkeypatch, now, three_days_ago):
    incidents(tenant, INCIDENTS, created_at=three_days_ago)
    with_neighbours(tenant, now)
    monkeypatch.setattr(clustering_jobs, "merge_cluster", lossy_merge)
    run = cluster(tenant)
    semantic = set(Memory.objects.filter(tenant=tenant, memory_type="semantic", state="raw").values_list("id"))

    review_decide_runs(run_ids=[run.id], decision="approve", actor="admin:ops")

    assert not ConsolidationRun.objects.get(id=run.id).held
    assert LedgerEntry.objects.filter(run=run, action="run.release").count() == 1
    assert set(Memory.objects.filter(tenant=tenant, memory_type="semantic", state="raw").values_list("id")) == semantic


@pytest.mark.django_db(transaction=True)
def test_the_share_of_lost_statements_that_holds_a_run_is_the_tenants(tenant, monkeypatch, now, three_days_ago):
    overrides(tenant, omissions={"max_share": 1.0})
    incidents(tenant, INCIDENTS, created_at=three_days_ago)
    with_neighbours(tenant, now)
    monkeypatch.setattr(clustering_jobs, "merge_cluster", lossy_merge)

    run = cluster(tenant)

    assert run.omissions > 0 and not run.held  # counted, within what this tenant allows
    assert run.result["omissions"]["max_share"] == 1.0


@pytest.mark.django_db(transaction=True)
def test_a_tenant_can_turn_the_check_off(tenant, monkeypatch, now, three_days_ago):
    overrides(tenant, omissions={"enabled": False})
    incidents(tenant, INCIDENTS, created_at=three_days_ago)
    with_neighbours(tenant, now)
    monkeypatch.setattr(clustering_jobs, "merge_cluster", lossy_merge)

    run = cluster(tenant)

    assert run.merged and run.omission_checked == 0 and not run.held and "omissions" not in run.result


def test_a_value_is_found_whole_case_and_spacing_aside():
    assert states(("03:00 UTC", "4gb"), "We moved vacuum to 03:00  utc and raised maxmemory to 4GB.")
    assert not states(("3",), "It happened in 2023.")
    assert not states(("40",), "Replica lag hit  seconds.")


def test_a_value_is_found_with_the_date_a_merge_anchored_inside_it():
    """A merged text writes the date a relative phrase stands for right after it, inside a longer value."""
    assert states(("last month's",), "Last month (August 2023)'s bill was lower.")
    assert states(("next Wednesday to Sunday",), "From next Wednesday (the Wednesday after 29 May 2023) to Sunday.")
    assert not states(("3.5",), "It was 3 (or so).5 km.")  # an anchor stands between words only


def test_statements_are_the_drawn_sentences_that_state_a_value():
    import uuid

    lisbon, lovely, cats = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    drawn = [(lisbon, "I moved to Lisbon in March 2021."), (lovely, "That's lovely to hear!"),
             (cats, "We have 2 cats.")]
    sampled = statements_sampled(drawn=drawn, sample=5)
    assert [(s.source, s.values) for s in sampled] == [(lisbon, ("lisbon", "march 2021")), (cats, ("2",))]
    assert len(statements_sampled(drawn=drawn, sample=1)) == 1


@pytest.mark.django_db(transaction=True)
def test_memories_whose_stored_parse_found_a_fact_are_drawn_first_with_that_clause(tenant, three_days_ago):
    chatter = ingest(tenant, [f"Alice: Nice chat number {i}! See you." for i in range(30)], created_at=three_days_ago)
    rent = ingest(tenant, "Alice: Thanks! My rent is 1,400 euros.", created_at=three_days_ago)[0]
    clause = {"facts": [[["rent", []], "1400", "euro", False]]}
    Memory.objects.filter(id=rent).update(features={"claims": {"My rent is 1,400 euros.": clause, "Thanks!": {}}})

    for seed in ("run-1", "run-2", "run-3"):
        drawn = sentences_drawn(seed=seed, memory_ids=[*chatter, rent], sample=2)
        assert drawn[0] == (rent, "My rent is 1,400 euros.") and len(drawn) == 2 * READ_FACTOR
        assert drawn == sentences_drawn(seed=seed, memory_ids=[*chatter, rent], sample=2)


@pytest.mark.parametrize(("missing", "held"), [(0, False), (1, False), (2, True)])
def test_one_statement_lost_of_twenty_is_exactly_the_default_share_and_passes(missing, held):
    import uuid

    assert Omissions(20, [uuid.uuid4() for _ in range(missing)], 0.05).held is held
