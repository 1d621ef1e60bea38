"""The policy in the admin: a tenant's overrides validated on save, the policy in effect shown on the tenant's
page, and a run's page showing the policy it worked under."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from consolidation.jobs.lifecycle import lifecycle_run_now
from tests.factories import policy_set
from zeromem.models import Tenant


@pytest.fixture
def staff(db):
    client = Client()
    client.force_login(User.objects.create_superuser("ops", "ops@example.com", "pw"))
    return client


def tenant_form(tenant: Tenant, overrides: object) -> dict[str, object]:
    """The tenant's change form as the admin posts it (no API key rows in the inline)."""
    return {"name": tenant.name, "overrides": json.dumps(overrides), "allowed_models": "[]",
            "monthly_token_budget": "", "api_keys-TOTAL_FORMS": "0", "api_keys-INITIAL_FORMS": "0"}


def test_overrides_that_do_not_fit_the_policy_are_refused_and_nothing_is_saved(staff, tenant):
    policy_set(tenant, {"clustering": {"cosine_floor": 0.6}})
    response = staff.post(f"/admin/zeromem/tenant/{tenant.id}/change/",
                          tenant_form(tenant, {"clustering": {"cosine_flor": 0.7}, "canaries": {"enabled": "no"}}))
    assert response.status_code == 200
    text = response.content.decode()
    assert "clustering.cosine_flor: unknown key (known: cosine_floor," in text
    assert "canaries.enabled: Input should be a valid boolean (got &#x27;no&#x27;)" in text
    assert Tenant.objects.get(id=tenant.id).overrides == {"clustering": {"cosine_floor": 0.6}}


def test_overrides_that_fit_are_saved_and_the_page_shows_the_policy_in_effect(staff, tenant):
    overrides = {"clustering": {"cosine_floor": 0.7}, "purge_days": 7}
    response = staff.post(f"/admin/zeromem/tenant/{tenant.id}/change/", tenant_form(tenant, overrides))
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert Tenant.objects.get(id=tenant.id).overrides == overrides
    page = staff.get(f"/admin/zeromem/tenant/{tenant.id}/change/").content.decode()
    assert "policy in effect" in page
    assert "<code>clustering.cosine_floor</code></td><td><strong>0.7</strong> (default 0.55)" in page
    assert "<code>lifecycle.purge_days</code></td><td><strong>7.0</strong> (default 30.0)" in page
    assert "<code>clustering.max_size</code></td><td>4</td>" in page  # the default, not highlighted


@pytest.mark.django_db(transaction=True)
def test_a_runs_page_shows_the_policy_it_worked_under(staff, tenant):
    policy_set(tenant, {"lifecycle": {"keep_floor": 0.9}})
    run = lifecycle_run_now(tenant_id=tenant.id, trigger="cli").run
    page = staff.get(f"/admin/consolidation/consolidationrun/{run.id}/change/").content.decode()
    assert "<code>lifecycle.keep_floor</code></td><td><strong>0.9</strong> (default 0.7)" in page
    assert "<code>search.vector_weight</code></td><td>0.5</td>" in page
