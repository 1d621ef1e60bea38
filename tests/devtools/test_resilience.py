"""`prove resilience --quick` inside the suite: a worker killed -9 mid-run (clustering and reflection), four
triggers at once, six faults, a short load run and a short churn (20 clients adding, correcting, deleting,
searching, and putting and deleting by key, on 3 users) against gunicorn, then with two workers and beat:
PostgreSQL and the broker restarted mid-run, and a worker killed -9 and left dead; all on real processes."""

from __future__ import annotations

import pytest

from zeromem.devtools.proof.resilience import Churn, prove_resilience


@pytest.mark.django_db(transaction=True)
def test_prove_resilience_quick(tmp_path):
    said: list[str] = []
    report = prove_resilience(rounds=1, load_requests=150, load_seconds=40, logs=tmp_path, say=said.append,
                              churn_plan=Churn(seconds=8, requests=100), restart_rounds=1,
                              dead_worker_rounds=1).as_json()
    # What each round said goes with any failure: a flaky round is diagnosed from CI's output alone.
    print("\n".join(said))
    assert report["crash_rounds"] == 2
    assert report["lost"] == report["duplicated"] == report["unfinished_runs"] == 0, report
    assert report["overlap_extra_runs"] == 0
    assert report["fault_cases"] >= 6 and report["fault_failures"] == 0
    assert report["load_requests"] >= 100 and report["load_errors"] == 0
    assert report["churn_requests"] >= 100 and report["churn_errors"] == report["churn_5xx"] == 0, report["notes"]
    assert report["churn_unreadable"] == report["churn_undeleted"] == report["churn_stats_drift"] == 0
    assert report["duplicate_keys"] == 0
    assert report["pg_restart_rounds"] == report["broker_restart_rounds"] == 1
    assert report["restart_late_runs"] == 0 and report["restart_finish_max_s"] <= 120
    assert report["dead_worker_rounds"] == 1 and report["dead_worker_recovery_s"] <= 90
