"""The fast part of `prove security`: the whole authorization matrix, a smaller fuzzing run, the limit cases, the
rate limit and the cross-scope canaries; the canaries find a leak when there is one; keys are never logged."""

from __future__ import annotations

import logging

import pytest
from django.db import transaction

from zeromem.api import limits
from zeromem.core.events import event_emit
from zeromem.core.ratelimit import rate_limit_check
from zeromem.devtools.proof import canaries
from zeromem.devtools.proof.canaries import check_cross_scope
from zeromem.devtools.proof.security import (
    Report,
    api_operations,
    build_world,
    check_limits,
    fuzz_metadata,
    prove_security,
)
from zeromem.models import Memory, MemoryRelation, MemorySource

pytestmark = pytest.mark.usefixtures("hash_embedder")


@pytest.mark.django_db(transaction=True)  # the canaries' jobs commit as the workers' do
def test_prove_security_fast():
    report = prove_security(fuzz_per_operation=12)
    result = report.as_json()
    assert result["authz_failures"] == 0, result["authz_failure_examples"]
    assert result["fuzz_5xx"] == 0, result["fuzz_5xx_examples"]
    assert result["rejected_writes"] == 0 and result["rate_limit_ok"] is True
    assert result["limit_cases"] >= 10 and result["limit_failures"] == 0, result["limit_failure_examples"]
    # The property-based metadata landed on both sides of the limits.
    assert 0 < result["fuzz_metadata_422"] < result["metadata_fuzz_cases"]
    assert result["cross_scope_jobs"] == 6, result["cross_scope_jobs_missing"]
    assert result["cross_scope_links"] == 0, result["cross_scope_link_examples"]
    assert result["cross_scope_events"] > 0 and result["cross_scope_deliveries"] > 0
    assert result["authz_cases"] >= 70 and result["fuzz_cases"] >= 200
    every_api_operation = {f"{m} /api/v1/public/memory/v2/{r}" for m, r in api_operations()}
    assert every_api_operation <= report.endpoints and len(every_api_operation) >= 13
    assert any(e.startswith("GET /admin/zeromem/memory/") for e in report.endpoints)


def test_the_rate_limit_answers_429_with_retry_after(api, settings):
    settings.ZEROMEMORY_RATE_LIMIT_REQUESTS = 3
    settings.ZEROMEMORY_RATE_LIMIT_WINDOW_SECONDS = 3600
    statuses = [api.get("/memories", limit=1) for _ in range(5)]
    assert [r.status_code for r in statuses] == [200, 200, 200, 429, 429]
    assert 1 <= int(statuses[3]["Retry-After"]) <= 3600
    assert statuses[3].json()["error"]["code"] == "rate_limited"


def test_the_window_ends_and_the_key_is_served_again(settings):
    settings.ZEROMEMORY_RATE_LIMIT_REQUESTS = 1
    settings.ZEROMEMORY_RATE_LIMIT_WINDOW_SECONDS = 10
    rate_limit_check(key_prefix="window-test", now=1000.0)
    with pytest.raises(Exception, match="retry in 10 s"):
        rate_limit_check(key_prefix="window-test", now=1000.5)
    rate_limit_check(key_prefix="window-test", now=1010.0)  # the next window


def test_keys_are_never_logged(api, anonymous_api, caplog, tenant):
    secret = api.headers["Authorization"].split()[1]
    with caplog.at_level(logging.DEBUG):
        api.get("/memories", limit=1)
        api.post("/search", {"query": "x", "top_k": 0})
        anonymous_api.client.get(anonymous_api.base + "/memories", headers={"Authorization": f"Bearer {secret}x"})
    assert caplog.records and not any(secret in record.getMessage() for record in caplog.records)


def test_the_limit_cases_fail_when_the_server_stops_enforcing_the_limits(db, monkeypatch):
    monkeypatch.setattr(limits, "json_limit_broken", lambda value, *, limits: None)
    report = Report()
    world = build_world()
    check_limits(world, report)
    fuzz_metadata(world, report, examples=12)
    assert any("metadata" in failure and "201" in failure for failure in report.limit_failures)
    assert any(failure.startswith("metadata {") for failure in report.limit_failures)  # the property-based ones


@pytest.mark.django_db(transaction=True)
def test_the_canaries_find_a_job_that_links_two_scopes(monkeypatch):
    """A leaking job, simulated after the real ones: the first user's memory cites the second user's (a merge),
    is superseded by the other tenant's, relates to it, and an event names both users. Each is found."""
    real_jobs = canaries.run_every_job

    def leaking_jobs(scopes):
        real_jobs(scopes)
        first, second, other_tenant = (Memory.objects.filter(tenant_id=s.tenant_id, user_id=s.user_id).first()
                                       for s in scopes)
        MemorySource.objects.create(memory=first, source=second, source_memory_id=second.id,
                                    source_content_hash=second.content_hash)
        Memory.objects.filter(id=first.id).update(superseded_by=other_tenant)
        MemoryRelation.objects.create(tenant_id=first.tenant_id, from_memory=first, to_memory=other_tenant,
                                      relation_type="related")
        with transaction.atomic():
            event_emit(event="memory.merged", tenant_id=first.tenant_id,
                       data={"memory_id": str(first.id), "source_ids": [str(second.id)]})

    monkeypatch.setattr(canaries, "run_every_job", leaking_jobs)
    links = check_cross_scope().links
    for kind in ("merge:", "supersede:", "relation related:", "event memory.merged", "webhook delivery"):
        assert any(link.startswith(kind) for link in links), (kind, links)
