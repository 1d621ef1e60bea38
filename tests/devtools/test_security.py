"""The fast part of `prove security`: the whole authorization matrix, a smaller fuzzing run, the rate limit;
and keys are never logged."""

from __future__ import annotations

import logging

import pytest

from zeromem.core.ratelimit import rate_limit_check
from zeromem.devtools.proof.security import api_operations, prove_security

pytestmark = pytest.mark.usefixtures("hash_embedder")


def test_prove_security_fast(db):
    report = prove_security(fuzz_per_operation=12)
    result = report.as_json()
    assert result["authz_failures"] == 0, result["authz_failure_examples"]
    assert result["fuzz_5xx"] == 0, result["fuzz_5xx_examples"]
    assert result["rejected_writes"] == 0 and result["rate_limit_ok"] is True
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
