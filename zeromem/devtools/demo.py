"""`make demo`: a guided tour on the embedded defaults. Ingests a real conversation and searches it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db.models import Count

from consolidation.corrections.erasure import scope_erase
from consolidation.jobs.clustering import clustering_run_now
from consolidation.jobs.reflection import reflection_run_now
from consolidation.selectors import reflection_eligible_scopes
from profiles.selectors import profile_get
from zeromem.core import services
from zeromem.core.policies import policy_of
from zeromem.core.selectors import MemoryFilter, memories_search
from zeromem.devtools.evaluation import locomo
from zeromem.models import ApiKey, Memory, Tenant

SAMPLE = [  # used when ../shared/eval/locomo/ is absent
    ("Ana", 1, "Ana: We decided to move the nightly ETL to 02:00 UTC because the warehouse is idle then."),
    ("Ben", 1, "Ben: Good call. The billing-api timed out twice last week after 30 minutes of load."),
    ("Ben", 1, "Ben: Those billing-api timeouts came from the Redis cache running out of memory at 512 MB."),
    ("Ana", 1, "Ana: I prefer Postgres over MySQL for the new service, mostly for pgvector."),
    ("Ben", 2, "Ben: The Redis cache hit its 512 MB limit again; I raised it to 1 GB."),
    ("Ana", 2, "Ana: My daughter started pottery classes on Tuesdays, she made a bowl!"),
    ("Ben", 2, "Ben: Reminder: the TLS certificate for api.example.com expires on 3 March."),
]
SAMPLE_QUESTIONS = ["When does the nightly ETL run?", "What is the Redis cache limit?",
                    "Which database does Ana prefer?"]


@dataclass(frozen=True)
class DemoData:
    user_id: str
    items: list[services.MemoryInput]
    questions: list[str]
    source: str


def demo_data() -> DemoData:
    if locomo.available():
        conversation = locomo.load()[0]
        items = [services.MemoryInput(content=t.text, user_id="demo-user", entity_id=t.speaker,
                                      session_id=f"session-{t.session}", role=t.speaker, created_at=t.at,
                                      metadata={"dia_id": t.dia_id}) for t in conversation.turns]
        return DemoData("demo-user", items, [q.question for q in conversation.questions[:4]],
                        f"LoCoMo conversation {conversation.sample_id} ({len(items)} turns)")
    day = datetime(2024, 3, 1, 9, tzinfo=UTC)
    items = [services.MemoryInput(content=text, user_id="demo-user", entity_id=speaker, session_id=f"s{session}",
                                  role=speaker, created_at=day.replace(day=session))
             for speaker, session, text in SAMPLE]
    return DemoData("demo-user", items, SAMPLE_QUESTIONS, "bundled sample conversation")


def demo_run(*, say: Callable[[str], None]) -> Tenant:
    """Idempotent: the demo user's memories and profiles of an earlier run are erased first, so every run shows
    its own results; the demo key of an earlier run is revoked and replaced (a secret is never stored to reuse)."""
    tenant = services.tenant_get_or_create(name="demo")
    data = demo_data()
    forgotten = scope_erase(tenant_id=tenant.id, actor="demo", user_id=data.user_id)
    if forgotten.get("deleted"):
        say(f"Erased the previous demo run's {forgotten['deleted']} memories of {data.user_id!r}: starting afresh.")
    replaced = _demo_keys_revoke(tenant)
    _, secret = services.apikey_create(tenant=tenant, name="demo")
    say(f"Ingesting {data.source} for user {data.user_id!r} …")
    batches = (data.items[i:i + 200] for i in range(0, len(data.items), 200))
    result = services.memories_import(tenant_id=tenant.id, batches=batches)
    say(f"  stored {result.created} new memories ({result.deduplicated} already there), "
        f"{result.embedded} embedded")
    for question in data.questions:
        say(f"\nQ: {question}")
        for hit in memories_search(scope=MemoryFilter(tenant_id=tenant.id, user_id=data.user_id), query=question,
                                   top_k=3, policy=policy_of(tenant).search):
            say(f"   {hit.score:.2f}  {hit.memory.content[:110]}")
    demo_clustering(tenant=tenant, user_id=data.user_id, say=say)
    demo_reflection(tenant=tenant, user_id=data.user_id, say=say)
    counts = Memory.objects.filter(tenant=tenant).values("memory_type", "state").annotate(n=Count("id"))
    say("\nStored for tenant 'demo': " + ", ".join(f"{c['n']} {c['memory_type']}/{c['state']}" for c in counts))
    say(f"\nAPI key for tenant 'demo' (shown once{'; the previous demo key is revoked' if replaced else ''}): {secret}")
    say("API:   python manage.py runserver, then http://127.0.0.1:8000/api/v1/public/memory/v2/docs\n"
        "       curl -H 'Authorization: Bearer <key>' -H 'Content-Type: application/json' \\\n"
        "            -d '{\"query\": \"pottery\", \"user_id\": \"demo-user\"}' "
        "http://127.0.0.1:8000/api/v1/public/memory/v2/search\n"
        "Admin: python manage.py createsuperuser, then http://127.0.0.1:8000/admin/")
    return tenant


def _demo_keys_revoke(tenant: Tenant) -> int:
    keys = ApiKey.objects.filter(tenant=tenant, name="demo", revoked_at__isnull=True)
    for key in keys:
        services.apikey_revoke(key=key)
    return len(keys)


def demo_clustering(*, tenant: Tenant, user_id: str, say: Callable[[str], None]) -> None:
    """Cluster the demo user (forced: the conversation is history) and show a few merges with their sources."""

    active = Memory.objects.filter(tenant=tenant, user_id=user_id, state="raw")
    before = active.count()
    run = clustering_run_now(tenant_id=tenant.id, user_id=user_id, trigger="cli", force=True).run
    say(f"\nClustering ({run.status}): active memories {before} → {active.count()}; {run.merged} memories merged "
        f"into {run.created} new semantic memories ({run.clusters} merges); {run.superseded} superseded")
    for stale in Memory.objects.filter(tenant=tenant, user_id=user_id, superseded_by__isnull=False)[:3]:
        say(f"  superseded: {stale.content[:100]}\n          by: {stale.superseded_by.content[:100]}")
    for semantic in Memory.objects.filter(tenant=tenant, user_id=user_id, memory_type="semantic",
                                          source_links__isnull=False).distinct().order_by("created_at")[:3]:
        say(f"\n  semantic: {semantic.content}")
        # In the order they were said (ties by text): without ORDER BY rows come as the table happens to lie.
        links = semantic.source_links.select_related("source").order_by("source__created_at", "source__content")
        for link in links[:5]:
            say(f"    ← {link.source.content[:110] if link.source else '(deleted)'}")


def demo_reflection(*, tenant: Tenant, user_id: str, say: Callable[[str], None]) -> None:
    """Reflect every speaker (forced: lifts the thresholds and the current-session rule) and print each profile."""

    for scope in reflection_eligible_scopes(policies={tenant.id: policy_of(tenant)}, tenant_id=tenant.id,
                                            user_id=user_id, force=True):
        run = reflection_run_now(scope=scope, trigger="cli", force=True).run
        say(f"\nReflection on {scope.subject} ({run.status}, model {run.model}): {run.reviewed} memories reviewed, "
            f"{run.created} semantic memories written")
        profile = profile_get(tenant_id=tenant.id, user_id=user_id, entity_id=scope.entity_id,
                              namespace=scope.namespace)
        if profile is None:
            continue
        say(f"  profile v{profile.version}: {profile.summary[:200]}")
        for name in ("preferences", "behaviors", "facts"):
            for item in getattr(profile, name)[:4]:
                say(f"    {name[:-1]:<10} {item['confidence']:.2f}  {item['statement'][:100]}  "
                    f"(sources: {len(item['source_ids'])})")
