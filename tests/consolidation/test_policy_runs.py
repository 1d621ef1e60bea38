"""Each run works under its tenant's policy, read once as it starts and recorded on the run."""

from __future__ import annotations

import numpy as np
import pytest

from consolidation.jobs.clustering import clustering_run_now
from consolidation.jobs.lifecycle import lifecycle_run_now
from consolidation.models import ConsolidationRun
from tests.factories import DAY, HOUR, ingest, ingest_one, policy_set
from zeromem.core import services
from zeromem.core.domain.policy import policy_with_overrides
from zeromem.models import Memory, Tenant

pytestmark = pytest.mark.usefixtures("hash_embedder")

TRIP = ["We drove to Porto for the long weekend.", "The Porto weekend trip was lovely, great food."]


def two_episodes_at_cosine(tenant: Tenant, cosine: float, when) -> list:
    """The TRIP episodes, in two sessions and without entities (so only their vectors can link them), their
    vectors at `cosine` to each other."""
    ids = [ingest(tenant, text, entities=(), session=f"s{n}", created_at=when + n * HOUR)[0]
           for n, text in enumerate(TRIP)]
    first, second = np.zeros(384), np.zeros(384)
    first[0], second[0], second[1] = 1.0, cosine, np.sqrt(1 - cosine ** 2)
    for memory_id, vector in zip(ids, [first, second], strict=True):
        Memory.objects.filter(id=memory_id).update(embedding=vector.tolist())
    return ids


@pytest.mark.django_db(transaction=True)
def test_one_clustering_job_applies_each_tenants_own_policy_to_the_same_data(tenant, three_days_ago):
    strict = services.tenant_get_or_create(name="strict")
    policy_set(tenant, {"clustering": {"cosine_floor": 0.6}})
    policy_set(strict, {"clustering": {"cosine_floor": 0.8}})
    loose_ids = two_episodes_at_cosine(tenant, 0.7, three_days_ago)
    strict_ids = two_episodes_at_cosine(strict, 0.7, three_days_ago)

    loose_run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True).run
    strict_run = clustering_run_now(tenant_id=strict.id, user_id="u1", trigger="cli", force=True).run

    assert (loose_run.status, loose_run.merged, loose_run.created) == ("succeeded", 2, 1)
    assert set(Memory.objects.filter(id__in=loose_ids).values_list("state", flat=True)) == {"consolidated"}
    assert (strict_run.status, strict_run.merged) == ("succeeded", 0)
    assert set(Memory.objects.filter(id__in=strict_ids).values_list("state", flat=True)) == {"raw"}
    assert not Memory.objects.filter(tenant=strict, memory_type="semantic").exists()
    assert loose_run.policy == policy_with_overrides({"clustering": {"cosine_floor": 0.6}}).as_json()
    assert strict_run.policy["clustering"]["cosine_floor"] == 0.8


@pytest.mark.django_db(transaction=True)
def test_the_updates_policy_decides_whether_a_value_said_two_hours_later_replaces_the_older_one(tenant, now):
    patient = services.tenant_get_or_create(name="patient")
    policy_set(patient, {"updates": {"min_gap_hours": 3.0}})
    for each in (tenant, patient):
        ingest_one(each, "The queue limit is 500 messages.", session="a", created_at=now - 10 * DAY)
        ingest_one(each, "The queue limit is 800 messages.", session="b", created_at=now - 10 * DAY + 2 * HOUR)
        ingest_one(each, "Good morning!", session="today", created_at=now)
    default, patient_run = (clustering_run_now(tenant_id=each.id, user_id="u1", trigger="cli").run
                            for each in (tenant, patient))
    assert (default.superseded, default.flagged) == (1, 0)  # two hours apart: the newer value replaces the older
    assert (patient_run.superseded, patient_run.flagged) == (0, 1)  # within three hours: flagged for a person


@pytest.mark.django_db(transaction=True)
def test_a_run_records_the_policy_it_worked_under_not_the_one_set_after_it(tenant, now):
    policy_set(tenant, {"purge_days": 7})  # a key tenants set before the policy had sections
    run = lifecycle_run_now(tenant_id=tenant.id, trigger="cli").run
    policy_set(tenant, {"lifecycle": {"purge_days": 60}})
    recorded = ConsolidationRun.objects.get(id=run.id).policy
    assert run.status == "succeeded" and recorded["lifecycle"]["purge_days"] == 7
    assert recorded["clustering"] == policy_with_overrides({}).clustering.model_dump()


@pytest.mark.django_db(transaction=True)
def test_overrides_stored_around_the_admin_fail_the_run_with_what_is_wrong_and_change_nothing(tenant,
                                                                                           three_days_ago):
    ids = two_episodes_at_cosine(tenant, 0.9, three_days_ago)
    Tenant.objects.filter(id=tenant.id).update(overrides={"clustering": {"cosine_floor": "high"}})
    run = clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True).run
    assert run.status == "failed"
    assert run.error == ("invalid policy overrides: clustering.cosine_floor: Input should be a valid number "
                         "(got 'high')")
    assert set(Memory.objects.filter(id__in=ids).values_list("state", flat=True)) == {"raw"}
