"""`manage.py bench reflection`: LLM cost of reflection, counted by the provider's side.

20 entities with 10, 15, 20, …, 105 memories (1,150 in all), spread over 4 users (5 entities each, so their calls
can be shared), are reflected through the weekly path (the thresholds, the current-session rule and the shared
calls apply) against a local fake OpenAI-compatible server (zeromem.devtools.fake_llm) that counts the requests
and the prompt tokens it receives and answers with the extractive engine's findings.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from consolidation.domain.insights import parts_from_messages
from consolidation.jobs.reflection import reflection_user_run_now
from consolidation.selectors import reflection_eligible_scopes
from zeromem.core import services
from zeromem.core.policies import policies_for
from zeromem.devtools.bench.texts import memory_texts
from zeromem.devtools.fake_llm import FakeLLM
from zeromem.models import Memory

SIZES = tuple(range(10, 106, 5))  # 20 entities, 1,150 memories
USERS = 4  # entity k belongs to user k % USERS
PERSONAL = [
    "{name}: I prefer {drink} in the morning, {other} keeps me awake at night.",
    "{name}: I usually go {sport} every {day} before work, about {n} km.",
    "{name}: My {relative} {friend} just moved to {city} for a new job.",
    "{name}: I'm allergic to {food}, so please keep it out of team lunches.",
    "{name}: I work as a {job} on the {system}, mostly the on-call rotation.",
    "{name}: The {system} failed again last night because of {cause}.",
    "{name}: I really love {hobby} on weekends, it clears my head.",
    "{name}: We must keep the {system} logs for {n} days for the audit.",
]
VALUES = {
    "drink": ["green tea", "espresso", "oat latte", "black coffee", "mint tea"],
    "other": ["coffee", "black tea", "cola", "matcha"],
    "sport": ["running", "cycling", "swimming", "climbing", "rowing"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Saturday"],
    "relative": ["sister", "brother", "cousin", "daughter", "son"],
    "friend": ["Ana", "Ben", "Chloe", "Dev", "Emil", "Farah"],
    "city": ["Lisbon", "Toronto", "Osaka", "Nairobi", "Lyon", "Denver"],
    "food": ["peanuts", "shellfish", "gluten", "sesame"],
    "job": ["data engineer", "SRE", "backend developer", "product analyst"],
    "system": ["billing-api", "nightly ETL", "search cluster", "payments webhook", "auth service"],
    "cause": ["a missing index", "an expired TLS certificate", "a retry storm", "a full disk"],
    "hobby": ["painting watercolours", "baking sourdough", "playing chess", "birdwatching"],
}


def entity_texts(name: str, n: int, rng: random.Random) -> list[str]:
    """About two thirds personal statements, one third incident notes; distinct and deterministic."""
    incidents = memory_texts(n, seed=rng.randint(0, 10**6))
    texts = []
    for i in range(n):
        if i % 3 == 2:
            texts.append(incidents[i])
            continue
        values = {key: rng.choice(options) for key, options in VALUES.items()}
        texts.append(rng.choice(PERSONAL).format(name=name, n=rng.randint(3, 400), **values) + f" (#{i})")
    return texts


def ingest(tenant_id: int) -> int:
    """Entity k under user k % USERS; each memory its own session on its own past day (the newest is the current
    one)."""
    rng = random.Random(11)
    now = timezone.now()
    items = [services.MemoryInput(content=text, user_id=f"user-{k % USERS}", entity_id=f"entity-{k}",
                                  session_id=f"s{i}", created_at=now - timedelta(days=size - i))
             for k, size in enumerate(SIZES) for i, text in enumerate(entity_texts(f"Person{k}", size, rng))]
    result = services.memories_import(tenant_id=tenant_id, batches=[items[i:i + 500]
                                                                    for i in range(0, len(items), 500)])
    return result.created + result.deduplicated


def bench_reflection(*, say: Callable[[str], None]) -> dict[str, Any]:
    tenant = services.tenant_get_or_create(name="bench-reflection")
    ingested = ingest(tenant.id)
    say(f"ingested {ingested} memories for {len(SIZES)} entities")
    with FakeLLM() as server:
        settings.ZEROMEMORY_REFLECTION_MODEL = "openai/fake-reflector"
        settings.ZEROMEMORY_LLM_API_BASE, settings.ZEROMEMORY_LLM_API_KEY = server.api_base, "sk-bench"
        started = time.perf_counter()
        scopes = reflection_eligible_scopes(policies=policies_for(tenant_ids=[tenant.id]), tenant_id=tenant.id)
        users = sorted({scope.user_id for scope in scopes})
        runs = [outcome.run for user in users
                for outcome in reflection_user_run_now(tenant_id=tenant.id, user_id=user, trigger="cli")]
        seconds = time.perf_counter() - started
    sent = distinct_memories_sent(server.requests)
    reflected = Memory.objects.filter(tenant=tenant, state="consolidated").exclude(memory_type="semantic").count()
    # What reflection wrote and kept (a run the safety net undid leaves its memories undone, not active).
    created = Memory.objects.filter(tenant=tenant, state="raw", tags__contains=["reflection"]).count()
    say(f"{len(runs)} runs in {seconds:.1f} s: {sent} memories sent in {len(server.requests)} calls, "
        f"{server.prompt_tokens} prompt tokens")
    return {
        "ingested": ingested, "memories": sent, "entities": len(runs), "llm_calls": len(server.requests),
        "prompt_tokens": server.prompt_tokens, "completion_tokens": server.completion_tokens,
        "repairs": sum(int(run.result.get("repairs", 0)) for run in runs),
        "calls_per_1000": round(1000 * len(server.requests) / sent, 1) if sent else 0.0,
        "prompt_tokens_per_memory": round(server.prompt_tokens / sent, 1) if sent else 0.0,
        "semantic_created": created, "consolidated": reflected,
        "new_semantic_per_reflected": round(created / reflected, 3) if reflected else 0.0,
        **written_by_reflection(tenant.id),
        "failed_runs": sum(run.status != "succeeded" for run in runs),
        "canaries_failed_runs": sum(bool(run.result.get("canaries", {}).get("failed")) for run in runs),
        "runs_llm_calls": sum(run.llm_calls for run in runs), "seconds": round(seconds, 1),
        "shared_calls": sum(len(parts_from_messages(r["messages"])) > 1 for r in server.requests),
        "targets": {"calls_per_1000": 34, "prompt_tokens_per_memory": 150, "new_semantic_per_reflected": 0.35},
    }


def distinct_memories_sent(requests: list[dict[str, Any]]) -> int:
    """Memories the provider received, each counted once however many calls (repairs) carried it."""
    return len({(subject, m["date"], m["text"]) for request in requests
                for _, subject, memories in parts_from_messages(request["messages"]) for m in memories})


def written_by_reflection(tenant_id: int) -> dict[str, Any]:
    """What the kept semantic memories are: condensed passages (how full, how many episodes each) and insights."""
    kept = Memory.objects.filter(tenant_id=tenant_id, state="raw", tags__contains=["reflection"])
    passages = list(kept.filter(tags__contains=["condensed"]).values_list("content", "metadata__source_count"))
    return {"passages": len(passages), "insight_memories": kept.filter(tags__contains=["insight"]).count(),
            "passage_chars_mean": round(sum(len(c) for c, _ in passages) / len(passages)) if passages else 0,
            "episodes_per_passage": round(sum(n for _, n in passages) / len(passages), 2) if passages else 0.0}
