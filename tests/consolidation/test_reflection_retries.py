"""Retries after an unavailable LLM are decided by a mark the run carries, never by the text of its error."""

from __future__ import annotations

import pytest

from consolidation.jobs.reflection import reflection_run_now
from consolidation.models import ConsolidationRun, RunStatus
from consolidation.runs import run_finish, run_llm_unavailable, run_release, run_request, run_start
from consolidation.selectors import ReflectionScope
from consolidation.tasks import reflection_user_task
from tests.factories import ingest_entity, use_fake_llm
from zeromem.devtools.fake_llm import FakeLLM, Reply

pytestmark = pytest.mark.usefixtures("hash_embedder")
SCOPE = ("u1", "alice", "global")


def test_a_run_failed_by_an_unavailable_llm_is_marked_and_others_are_not(tenant, settings):
    with FakeLLM(script=[Reply(status=503), Reply(content="not json"), Reply(content="still not json")]) as server:
        use_fake_llm(settings, server)
        settings.ZEROMEMORY_LLM_ATTEMPTS = 1
        ingest_entity(tenant, n=10)
        unavailable = reflection_run_now(scope=ReflectionScope(tenant.id, *SCOPE), trigger="cli")
        assert unavailable.run.status == RunStatus.FAILED and unavailable.llm_unavailable
        invalid = reflection_run_now(scope=ReflectionScope(tenant.id, *SCOPE), trigger="cli")
        assert invalid.run.status == RunStatus.FAILED and not invalid.llm_unavailable


@pytest.mark.django_db(transaction=True)
def test_the_user_task_retries_after_an_unavailable_llm(tenant, settings, eager):
    with FakeLLM(script=[Reply(status=503)]) as server:  # then the fake's default answer
        use_fake_llm(settings, server)
        settings.ZEROMEMORY_LLM_ATTEMPTS = 1
        ingest_entity(tenant, n=10)
        assert reflection_user_task.apply(kwargs={"tenant_id": tenant.id, "user_id": "u1"}).get() == 1
        runs = ConsolidationRun.objects.order_by("created_at")
        assert [(r.status, run_llm_unavailable(r)) for r in runs] == [(RunStatus.FAILED, True),
                                                                     (RunStatus.SUCCEEDED, False)]


def test_a_released_run_that_later_succeeds_loses_the_mark(tenant):
    run, _ = run_request(tenant_id=tenant.id, user_id="u1", kind="reflection", trigger="beat", entity_id="alice",
                         namespace="global")
    assert run_start(run_id=run.id, worker="w1") is not None
    assert run_release(run_id=run.id, worker="w1", reason="LLM down", llm_unavailable=True)
    assert run_llm_unavailable(ConsolidationRun.objects.get(pk=run.id))
    assert run_start(run_id=run.id, worker="w2") is not None
    finished = run_finish(run_id=run.id, worker="w2", status=RunStatus.SUCCEEDED)
    assert finished.status == RunStatus.SUCCEEDED and finished.worker == "w2" and not run_llm_unavailable(finished)


def test_run_finish_by_a_worker_that_lost_the_run_changes_nothing(tenant):
    run, _ = run_request(tenant_id=tenant.id, user_id="u1", kind="clustering", trigger="cli")
    assert run_start(run_id=run.id, worker="w1") is not None
    left = run_finish(run_id=run.id, worker="someone-else", status=RunStatus.FAILED, llm_unavailable=True)
    assert left.status == RunStatus.RUNNING and left.worker == "w1" and not run_llm_unavailable(left)
