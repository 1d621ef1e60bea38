"""Cross-scope canaries of `prove security`: the leaks a multi-tenant memory store has come through its derived
and background paths (a contradiction inferred between two users' memories, an entity keyed without its tenant),
not through the API's queries, which the authorization matrix covers.

Two tenants, and two users of the first, get near-identical memories: the same entity, the same incident notes,
the same contradicting statements, the same window of events, the same user id across the tenants. Every job kind
then runs on each of them (clustering, knowledge updates and contradictions, window digests, reflection with the
built-in extractive engine, profiles, lifecycle), each tenant with a webhook endpoint; and then no merge
(MemorySource), supersede, relation, ledger row, profile item, event or webhook delivery may link memories of two
scopes. A job kind counts as run only when its output is there in every scope: a canary that nothing exercised
proves nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from consolidation.jobs.clustering import clustering_run_now
from consolidation.jobs.lifecycle import lifecycle_run_now
from consolidation.jobs.reflection import reflection_user_run_now
from consolidation.models import ConsolidationRun, LedgerEntry, RunKind, RunStatus, WebhookDelivery, WebhookEndpoint
from profiles.models import MemoryProfile
from zeromem.core import services
from zeromem.core.events import memory_events_recorded
from zeromem.models import Memory, MemoryRelation, MemorySource, MemoryType, RelationType

DAY = timedelta(days=1)
USER = "canary-user"  # the same user id in both tenants
OTHER_USER = "canary-user-2"
ENTITY = "alice"
JOB_KINDS = ("clustering", "updates", "digests", "reflection", "profiles", "lifecycle")
# Events that list what a tenant-wide run did (lifecycle archives any user's memories): the tenant rule holds for
# them, the one-user rule does not. Every other event names memories that belong together.
LIST_EVENTS = frozenset({"memory.archived", "memory.deleted", "consolidation.run_completed"})

INCIDENT = [f"The billing-api Redis cache hit its memory limit, day {i} of the incident." for i in range(3)]
ALICE = [
    "Alice: I really love hiking in the Alps, we go every summer with my sister Clara.",
    "Alice: I prefer green tea over coffee, coffee makes me jittery.",
    "Alice: I work as a data engineer at Northwind, mostly on the billing pipeline.",
    "Alice: I usually run 10 km every Sunday morning along the river.",
    "Alice: I'm allergic to peanuts, so no satay for me at the team dinner.",
    "Alice: My daughter Mia started violin lessons on Tuesdays.",
    "Alice: We use PostgreSQL 16 with pgvector for the recommendation service.",
    "Alice: I'm reading Dune again, it's my favourite science fiction novel.",
    "Alice: I always review pull requests before lunch, my head is clearer then.",
    "Alice: My husband Tom is a chef at a small Italian restaurant downtown.",
    "Alice: I enjoy painting watercolours of old lighthouses on weekends.",
    "Alice: I moved to Lisbon from Berlin in 2021 for the sunshine.",
]
OUTAGE = [f"Checkout step {i}: the payments gateway answered 503 to {40 + i * 7} requests in a minute."
          for i in range(12)]


@dataclass(frozen=True)
class Scope:
    tenant_id: int
    user_id: str


@dataclass
class Outcome:
    links: list[str] = field(default_factory=list)  # each cross-scope link found, in words
    jobs: dict[str, bool] = field(default_factory=dict)  # job kind -> its output is there in every scope
    events: int = 0
    deliveries: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"cross_scope_links": len(self.links), "cross_scope_link_examples": self.links[:10],
                "cross_scope_jobs": sum(self.jobs.values()),
                "cross_scope_jobs_missing": sorted(k for k, ran in self.jobs.items() if not ran),
                "cross_scope_events": self.events, "cross_scope_deliveries": self.deliveries}


# --- planting ----------------------------------------------------------------------------------------------------

def canary_scopes() -> list[Scope]:
    """Two tenants with the same user id, and a second user in the first: three scopes."""
    suffix = uuid.uuid4().hex[:6]
    first = services.tenant_get_or_create(name=f"canary-a-{suffix}")
    second = services.tenant_get_or_create(name=f"canary-b-{suffix}")
    for tenant in (first, second):
        WebhookEndpoint.objects.create(tenant=tenant, url="http://127.0.0.1:9/canary-hook")
    return [Scope(first.id, USER), Scope(first.id, OTHER_USER), Scope(second.id, USER)]


def plant(scope: Scope, *, now: datetime, with_update: bool) -> None:
    """The same memories in every scope (ages counted back from `now`). `with_update`: also the newer statement
    that supersedes an older one; the scope without it keeps its older statement unless a job reaches across."""
    items = [_item(scope, text, session="incident", at=now - 3 * DAY, entities=["Redis", "billing-api"])
             for text in INCIDENT]
    items += [_item(scope, "Max retries for the payment worker is 3.", session="config-a", at=now - 60 * DAY),
              _item(scope, "The queue limit is 500 messages.", session="queue-a", at=now - 10 * DAY),
              _item(scope, "The queue limit is 800 messages.", session="queue-b",
                    at=now - 10 * DAY + timedelta(minutes=2))]
    if with_update:
        items.append(_item(scope, "We bumped payment worker max retries to 8.", session="config-b", at=now - 5 * DAY))
    items += [_item(scope, text, session="ops", at=now - 4 * DAY + i * timedelta(minutes=3), window="outage")
              for i, text in enumerate(OUTAGE)]
    items += [_item(scope, text, session=f"alice-{i}", at=now - (len(ALICE) + 5 - i) * DAY, entity_id=ENTITY)
              for i, text in enumerate(ALICE)]
    items += [_item(scope, f"A passing remark nobody needed, number {i}.", session="stale", at=now - 400 * DAY,
                    importance=0.01) for i in range(3)]
    items.append(_item(scope, "Good morning!", session="today", at=now))  # the user's current session
    services.memories_ingest(tenant_id=scope.tenant_id, items=items)


def _item(scope: Scope, text: str, *, session: str, at: datetime, **fields: Any) -> services.MemoryInput:
    return services.MemoryInput(content=text, user_id=scope.user_id, session_id=session, created_at=at, **fields)


# --- running every job -------------------------------------------------------------------------------------------

def run_every_job(scopes: list[Scope]) -> None:
    """Clustering (with knowledge updates and window digests) and reflection (with profiles) per scope, one scope
    after another as the workers would; then each tenant's lifecycle."""
    for scope in scopes:
        clustering_run_now(tenant_id=scope.tenant_id, user_id=scope.user_id, trigger="cli", force=True)
        reflection_user_run_now(tenant_id=scope.tenant_id, user_id=scope.user_id, trigger="cli", force=True)
    for tenant_id in sorted({scope.tenant_id for scope in scopes}):
        lifecycle_run_now(tenant_id=tenant_id, trigger="cli")


# --- checking ----------------------------------------------------------------------------------------------------

class Owners:
    """memory id -> its scope, for every memory of the canary tenants ever seen (a purged memory keeps its
    owner here, so a link to it still resolves)."""

    def __init__(self, tenant_ids: Iterable[int]) -> None:
        self.tenant_ids = sorted(set(tenant_ids))
        self.of: dict[uuid.UUID, Scope] = {}

    def refresh(self) -> None:
        rows = Memory.objects.filter(tenant_id__in=self.tenant_ids).values_list("id", "tenant_id", "user_id")
        self.of.update({memory_id: Scope(tenant_id, user_id) for memory_id, tenant_id, user_id in rows})

    def scopes(self, ids: Iterable[Any]) -> set[Scope | None]:
        """The scopes of these memory ids; None for an id that is no memory of the canary tenants."""
        return {self.of.get(memory_id) if (memory_id := _as_uuid(i)) else None for i in ids}


def _as_uuid(value: Any) -> uuid.UUID | None:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        return None


def _uuids_in(value: Any) -> Iterator[uuid.UUID]:
    """Every uuid anywhere in a JSON value."""
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
        elif isinstance(node, str) and len(node) == 36 and (found := _as_uuid(node)) is not None:
            yield found


def merge_links(owners: Owners) -> Iterator[str]:
    for memory_id, source_id in MemorySource.objects.filter(memory__tenant_id__in=owners.tenant_ids).values_list(
            "memory_id", "source_memory_id"):
        if owners.scopes([source_id]) != owners.scopes([memory_id]):
            yield f"merge: {memory_id} cites {source_id} of another scope"


def supersede_links(owners: Owners) -> Iterator[str]:
    for memory_id, newer_id in Memory.objects.filter(tenant_id__in=owners.tenant_ids,
                                                     superseded_by__isnull=False).values_list("id", "superseded_by"):
        if owners.scopes([newer_id]) != owners.scopes([memory_id]):
            yield f"supersede: {memory_id} superseded by {newer_id} of another scope"


def relation_links(owners: Owners) -> Iterator[str]:
    relations = MemoryRelation.objects.filter(tenant_id__in=owners.tenant_ids).values_list(
        "tenant_id", "from_memory_id", "to_memory_id", "relation_type")
    for tenant_id, from_id, to_id, kind in relations:
        scopes = owners.scopes([from_id, to_id])
        if len(scopes) != 1 or any(s is None or s.tenant_id != tenant_id for s in scopes):
            yield f"relation {kind}: {from_id} -> {to_id} across scopes"


def ledger_links(owners: Owners) -> Iterator[str]:
    for entry in LedgerEntry.objects.filter(tenant_id__in=owners.tenant_ids):
        named = owners.scopes([*entry.memory_ids, *_uuids_in(entry.inputs), *_uuids_in(entry.outputs)])
        named.discard(None)  # run ids and the like
        if any(s.tenant_id != entry.tenant_id or (entry.user_id and s.user_id != entry.user_id)
               for s in named if s is not None):
            yield f"ledger {entry.action} #{entry.id} of {entry.user_id or 'the tenant'} names another scope"


def profile_links(owners: Owners) -> Iterator[str]:
    for profile in MemoryProfile.objects.filter(tenant_id__in=owners.tenant_ids):
        own = Scope(profile.tenant_id, profile.user_id)
        items = [*profile.preferences, *profile.behaviors, *profile.facts]
        cited = [*profile.summary_source_ids, *(i for item in items for i in _uuids_in(item))]
        foreign = owners.scopes(cited) - {own}
        if foreign:
            yield f"profile {profile.id} of {profile.user_id} cites memories of {sorted(map(str, foreign))}"


def event_links(payload: dict[str, Any], owners: Owners, *, where: str) -> Iterator[str]:
    scopes = owners.scopes(_uuids_in(payload.get("data")))
    scopes.discard(None)  # run ids, event ids
    if any(s is not None and s.tenant_id != payload["tenant"] for s in scopes):
        yield f"{where} {payload['event']} of tenant {payload['tenant']} names another tenant's memories"
    elif payload["event"] not in LIST_EVENTS and len(scopes) > 1:
        yield f"{where} {payload['event']} links memories of {len(scopes)} users"


def delivery_links(owners: Owners) -> Iterator[str]:
    deliveries = WebhookDelivery.objects.filter(endpoint__tenant_id__in=owners.tenant_ids).select_related("endpoint")
    for delivery in deliveries:
        if delivery.payload.get("tenant") != delivery.endpoint.tenant_id:
            yield f"webhook delivery {delivery.id}: another tenant's event to this tenant's endpoint"
        else:
            yield from event_links(delivery.payload, owners, where=f"webhook delivery {delivery.id}:")


# --- evidence that each job kind ran in every scope ---------------------------------------------------------------

def jobs_that_ran(scopes: list[Scope]) -> dict[str, bool]:
    def every_scope(count: Any) -> bool:
        return all(count(scope) > 0 for scope in scopes)

    def mine(scope: Scope) -> Any:
        return Memory.objects.filter(tenant_id=scope.tenant_id, user_id=scope.user_id)

    return {
        "clustering": every_scope(lambda s: mine(s).filter(memory_type=MemoryType.SEMANTIC,
                                                          metadata__source_type="consolidated").count()),
        "updates": every_scope(lambda s: MemoryRelation.objects.filter(
            from_memory__in=mine(s), relation_type__in=[RelationType.SUPERSEDES, RelationType.CONTRADICTS]).count()),
        "digests": every_scope(lambda s: mine(s).filter(metadata__source_type="window_digest").count()),
        "reflection": every_scope(lambda s: ConsolidationRun.objects.filter(
            tenant_id=s.tenant_id, user_id=s.user_id, kind=RunKind.REFLECTION, status=RunStatus.SUCCEEDED,
            created__gt=0).count()),
        "profiles": every_scope(lambda s: sum(
            len(p.preferences) + len(p.behaviors) + len(p.facts)
            for p in MemoryProfile.objects.filter(tenant_id=s.tenant_id, user_id=s.user_id))),
        "lifecycle": every_scope(lambda s: ConsolidationRun.objects.filter(
            tenant_id=s.tenant_id, kind=RunKind.LIFECYCLE, status=RunStatus.SUCCEEDED, archived__gt=0).count()),
    }


# --- all of it ---------------------------------------------------------------------------------------------------

def check_cross_scope(*, now: datetime | None = None) -> Outcome:
    """Plant, run every job kind, then look for links between scopes (module docstring)."""
    now = now or timezone.now()
    scopes = canary_scopes()
    owners = Owners(scope.tenant_id for scope in scopes)
    for index, scope in enumerate(scopes):
        plant(scope, now=now, with_update=index != 1)
    owners.refresh()
    recorded: list[dict[str, Any]] = []

    def record(sender: Any, payloads: list[dict[str, Any]], **kwargs: Any) -> None:
        recorded.extend(p for p in payloads if p["tenant"] in owners.tenant_ids)

    # Recorded inside the emitting transaction: the same payloads the stream and the webhooks get.
    memory_events_recorded.connect(record)
    try:
        run_every_job(scopes)
    finally:
        memory_events_recorded.disconnect(record)
    owners.refresh()
    outcome = Outcome(jobs=jobs_that_ran(scopes), events=len(recorded),
                      deliveries=WebhookDelivery.objects.filter(endpoint__tenant_id__in=owners.tenant_ids).count())
    for found in (merge_links(owners), supersede_links(owners), relation_links(owners), ledger_links(owners),
                  profile_links(owners), delivery_links(owners),
                  (link for payload in recorded for link in event_links(payload, owners, where="event"))):
        outcome.links.extend(found)
    return outcome
