"""Reflection eligibility, model resolution, the token budget, task retries, the weekly schedule, the command,
the admin, and LoCoMo profiles (extractive default)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from consolidation.jobs.reflection import reflection_model, reflection_run_now
from consolidation.models import ConsolidationRun
from consolidation.schedules import SCHEDULES
from consolidation.selectors import ReflectionScope, reflection_eligible_scopes
from profiles.models import MemoryProfile
from tests.factories import MINUTE, ingest, ingest_entity, memory_input, policy_set, use_fake_llm
from zeromem.core.domain.policy import Policy
from zeromem.devtools.evaluation import locomo
from zeromem.devtools.fake_llm import FakeLLM, Reply
from zeromem.models import LlmUsage, Memory

pytestmark = pytest.mark.usefixtures("hash_embedder")
SCOPE = ("u1", "alice", "global")
DEFAULTS: dict[int, Policy] = {}  # every tenant on the default policy


def scopes(tenant):
    return [(s.user_id, s.entity_id, s.namespace)
            for s in reflection_eligible_scopes(policies=DEFAULTS, tenant_id=tenant.id)]


def test_nine_inputs_are_not_eligible_ten_are_and_reflected_ones_stop_counting(tenant):
    ingest_entity(tenant, n=9)
    assert scopes(tenant) == []
    ingest_entity(tenant, n=1, week=1)
    assert scopes(tenant) == [SCOPE]
    run = reflection_run_now(scope=ReflectionScope(tenant.id, *SCOPE), trigger="cli").run
    assert run.status == "succeeded" and run.reviewed == 10
    assert scopes(tenant) == []


def test_users_need_fifty_inputs_without_an_entity_outside_the_current_session(tenant, now):
    items = [memory_input(f"Deploy note number {i} about the billing-api.", user="u9", session=f"s{i}",
                          created_at=now - (60 - i) * MINUTE) for i in range(51)]
    ingest(tenant, items[:50])
    assert scopes(tenant) == []  # the newest is the current session: 49 a run would take
    ingest(tenant, items[50:])
    assert scopes(tenant) == [("u9", None, "global")]


def test_an_entity_whose_inputs_are_all_in_the_current_session_is_not_eligible_unless_forced(tenant):
    ingest(tenant, [f"Alice note {i}: she plans a trip to Lisbon." for i in range(12)], entity_id="alice",
           session="today")
    assert scopes(tenant) == []
    forced = reflection_eligible_scopes(policies=DEFAULTS, tenant_id=tenant.id, force=True)
    assert [(s.user_id, s.entity_id) for s in forced] == [("u1", "alice")]


def test_semantic_memories_from_clustering_count_until_reflected(tenant):
    from consolidation.jobs.clustering import clustering_run_now

    policy_set(tenant, {"clustering": {"max_span_days": 0}})  # alice's memories are a day apart each
    ingest_entity(tenant, n=9)
    ingest(tenant, "Alice: I really love hiking in the Alps, we go every summer with my sister Clara!!",
           entity_id="alice", session="x")
    clustering_run_now(tenant_id=tenant.id, user_id="u1", trigger="cli", force=True)
    semantic = Memory.objects.filter(tenant=tenant, memory_type="semantic", state="raw")
    assert semantic.exists()
    reflection_run_now(scope=ReflectionScope(tenant.id, *SCOPE), trigger="cli", force=True)
    clustered = semantic.exclude(tags__contains=["reflection"])
    assert clustered.exists() and all(m.reflected_at is not None for m in clustered)  # read, and still active
    assert scopes(tenant) == []


def test_model_resolution(tenant, settings, monkeypatch):
    settings.ZEROMEMORY_REFLECTION_MODEL = ""
    settings.ZEROMEMORY_LLM_API_BASE = settings.ZEROMEMORY_LLM_API_KEY = None
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    tenant.allowed_models = ["anthropic/claude-3-5-haiku-latest", "openai/gpt-4o-mini"]
    assert reflection_model(tenant) == "openai/gpt-4o-mini"  # the first one whose credentials are configured
    monkeypatch.delenv("OPENAI_API_KEY")
    assert reflection_model(tenant) == "builtin:extractive"  # none configured: the default
    settings.ZEROMEMORY_REFLECTION_MODEL = "openai/gpt-4.1"
    assert reflection_model(tenant) == "openai/gpt-4.1"


def test_over_the_monthly_token_budget_reflection_is_skipped(tenant, settings, now):
    with FakeLLM() as server:
        use_fake_llm(settings, server)
        tenant.monthly_token_budget = 1000
        tenant.save()
        LlmUsage.objects.create(tenant=tenant, month=now.date().replace(day=1), purpose="reflection", calls=3,
                                prompt_tokens=900, completion_tokens=200)
        memories = ingest_entity(tenant, n=10, now=now)
        run = reflection_run_now(scope=ReflectionScope(tenant.id, *SCOPE), trigger="cli").run
        assert run.status == "skipped" and "monthly token budget exhausted: 1100 of 1000" in run.error
        assert server.requests == []
        assert Memory.objects.filter(id__in=[m.id for m in memories], state="raw").count() == 10


def run_task(tenant):
    from consolidation.triggers import reflection_trigger

    run, _ = reflection_trigger(scope=ReflectionScope(tenant.id, *SCOPE), trigger="beat")
    return run


@pytest.mark.django_db(transaction=True)
def test_an_unavailable_llm_releases_the_run_and_the_task_retries_it(tenant, settings, eager):
    with FakeLLM(script=[Reply(status=503)]) as server:
        use_fake_llm(settings, server)
        settings.ZEROMEMORY_LLM_ATTEMPTS = 1
        ingest_entity(tenant, n=10)
        run = run_task(tenant)  # the first attempt meets a 503, the retry succeeds
        run.refresh_from_db()
        assert run.status == "succeeded" and len(server.requests) == 2
        assert ConsolidationRun.objects.count() == 1 and run.reviewed == 10


@pytest.mark.django_db(transaction=True)
def test_past_the_last_retry_the_run_fails_with_the_reason(tenant, settings, eager):
    from consolidation.tasks import reflection_run_task

    with FakeLLM(script=[Reply(status=500)] * 20) as server:
        use_fake_llm(settings, server)
        settings.ZEROMEMORY_LLM_ATTEMPTS = 1
        memories = ingest_entity(tenant, n=10)
        run = run_task(tenant)
        run.refresh_from_db()
        assert run.status == "failed" and "LLM unavailable after" in run.error
        assert len(server.requests) == reflection_run_task.max_retries + 1
        assert Memory.objects.filter(id__in=[m.id for m in memories], state="raw").count() == 10


def test_the_weekly_schedule_is_sunday_0445_utc():
    weekly = next(s for s in SCHEDULES if s.task == "consolidation.reflection_fan_out")
    assert (weekly.minute, weekly.hour, weekly.day_of_week) == ("45", "4", "0")


@pytest.mark.django_db(transaction=True)
def test_the_weekly_fan_out_reflects_every_eligible_scope(tenant, eager):
    from consolidation.tasks import reflection_fan_out_task

    ingest_entity(tenant, n=12)
    ingest_entity(tenant, n=10, entity="bob", user="u2")
    ingest_entity(tenant, n=5, entity="carol", user="u2")  # below the threshold
    assert reflection_fan_out_task() == 2
    runs = ConsolidationRun.objects.filter(kind="reflection")
    assert sorted(runs.values_list("entity_id", "status", "trigger")) == [
        ("alice", "succeeded", "beat"), ("bob", "succeeded", "beat")]
    assert reflection_fan_out_task() == 0  # nothing left: a rerun does no work twice


def test_the_reflect_command(tenant):
    ingest_entity(tenant, n=12)
    out = io.StringIO()
    call_command("reflect", "--tenant", "acme", "--json", stdout=out, stderr=io.StringIO())
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    assert summary["runs"] == 1 and summary["succeeded"] == 1 and summary["memories_reviewed"] == 12
    ingest_entity(tenant, n=3, week=1)
    with pytest.raises(Exception, match="use --force"):
        call_command("reflect", "--user", "u1", "--entity", "alice", stdout=io.StringIO(), stderr=io.StringIO())
    out = io.StringIO()
    call_command("reflect", "--user", "u1", "--entity", "alice", "--force", "--json", stdout=out,
                 stderr=io.StringIO())
    assert json.loads(out.getvalue().strip().splitlines()[-1])["memories_reviewed"] == 3


def test_the_profile_admin_links_items_to_their_sources(tenant, admin_client, eager):
    memories = ingest_entity(tenant, n=12)
    reflection_run_now(scope=ReflectionScope(tenant.id, *SCOPE), trigger="cli")
    profile = MemoryProfile.objects.get(tenant=tenant)
    page = admin_client.get(f"/admin/profiles/memoryprofile/{profile.id}/change/").content.decode()
    cited = {s for item in profile.preferences + profile.behaviors + profile.facts for s in item["source_ids"]}
    assert cited and all(f"/admin/zeromem/memory/{s}/change/" in page for s in cited)
    assert {str(m.id) for m in memories} >= cited


@pytest.mark.django_db(transaction=True)
def test_admin_actions_trigger_reflection(tenant, admin_client, eager):
    ingest_entity(tenant, n=4)
    ids = [str(m.id) for m in Memory.objects.filter(entity_id="alice")]
    admin_client.post("/admin/zeromem/memory/", {"action": "trigger_reflection", "_selected_action": ids})
    run = ConsolidationRun.objects.get(kind="reflection")
    assert (run.trigger, run.status, run.entity_id, run.reviewed) == ("admin", "succeeded", "alice", 4)
    profile = MemoryProfile.objects.get(tenant=tenant)
    ingest_entity(tenant, n=3, week=1)
    admin_client.post("/admin/profiles/memoryprofile/", {"action": "trigger_reflection",
                                                        "_selected_action": [profile.id]})
    assert ConsolidationRun.objects.filter(kind="reflection", trigger="admin", reviewed=3).exists()


@pytest.mark.skipif(not locomo.available(), reason="LoCoMo data not found in ../shared/eval/locomo/")
def test_every_locomo_speaker_gets_a_profile_linked_to_turn_ids(db):
    from zeromem.devtools.evaluation.profiles import evaluate_profiles

    result = evaluate_profiles(conversations=locomo.load()[:2], progress=lambda line: None)
    assert result["speakers"] == 4 and result["speakers_with_profile"] == 4 and result["failed_runs"] == 0
    assert result["profile_items"] >= 10 and result["items_linked_to_turns"] == result["profile_items"]


@pytest.mark.django_db(transaction=True)
def test_what_reflection_writes_is_parsed_once_by_a_worker_after_its_run_commits(tenant, eager):
    from consolidation.tasks import reflection_fan_out_task
    from zeromem.language.default import FEATURES_VERSION

    ingest_entity(tenant, n=12)
    assert reflection_fan_out_task() == 1
    written = Memory.objects.filter(tenant=tenant, memory_type="semantic")
    assert written.exists() and {m.features["v"] for m in written} == {FEATURES_VERSION}
