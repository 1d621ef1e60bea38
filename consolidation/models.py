"""Runs, claims and the ledger (ARCHITECTURE.md, "Data model")."""

from __future__ import annotations

import secrets
import uuid

from django.db import models
from django.db.models import Q

from zeromem.models import Tenant


class RunKind(models.TextChoices):
    CLUSTERING = "clustering"
    REFLECTION = "reflection"
    LIFECYCLE = "lifecycle"


class RunTrigger(models.TextChoices):
    BEAT = "beat"
    API = "api"
    ADMIN = "admin"
    CLI = "cli"
    SESSION_END = "session_end"


class RunStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"


ACTIVE_STATUSES = (RunStatus.PENDING, RunStatus.RUNNING)
MEMORY_RUN_KINDS = (RunKind.CLUSTERING, RunKind.REFLECTION)  # both write a user's memories: one at a time


class ConsolidationRun(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=12, choices=RunKind.choices)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="runs")
    user_id = models.CharField(max_length=200, blank=True, default="")
    entity_id = models.CharField(max_length=200, null=True, blank=True)
    namespace = models.CharField(max_length=100, null=True, blank=True)
    trigger = models.CharField(max_length=12, choices=RunTrigger.choices)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.PENDING)
    worker = models.CharField(max_length=200, blank=True, default="")
    # Stamped by the holding worker every few seconds (consolidation.runs): older than the stale-after setting, the
    # worker is gone and the run is released.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    reviewed = models.IntegerField(default=0)
    clusters = models.IntegerField(default=0)
    merged = models.IntegerField(default=0)
    created = models.IntegerField(default=0)
    superseded = models.IntegerField(default=0)
    claims_retired = models.IntegerField(default=0)  # claims of longer memories replaced (the rest kept)
    flagged = models.IntegerField(default=0)  # contradictions left for a person to decide
    archived = models.IntegerField(default=0)
    deleted = models.IntegerField(default=0)
    model = models.CharField(max_length=200, blank=True, default="")
    llm_calls = models.IntegerField(default=0)
    prompt_tokens = models.BigIntegerField(default=0)
    completion_tokens = models.BigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    error = models.TextField(blank=True, default="")
    # The omission check (consolidation/jobs/omissions.py): statements of what the run consolidated searched for
    # after it wrote, and how many no active memory states any more. Above the tenant's share the run is `held`:
    # its changes stay, and wait in the review queue for an operator to release or reject the run as a whole.
    omission_checked = models.IntegerField(default=0)
    omissions = models.IntegerField(default=0)
    held = models.BooleanField(default=False)
    result = models.JSONField(default=dict, blank=True)
    # The policy the run worked under (zeromem/core/domain/policy.py: the defaults with the tenant's overrides).
    policy = models.JSONField(default=dict, blank=True)
    # Lifts the recency window, thresholds and the current-session rule (never the claim). A forced request that
    # meets the same job unforced upgrades it while pending, or sets `forced_follow_up` while it runs: when it
    # finishes, a forced run of the same job follows (consolidation.runs). A force is never silently lost.
    force = models.BooleanField(default=False)
    forced_follow_up = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(name="run_scope", fields=["tenant", "user_id", "created_at"])]
        constraints = [
            # One active clustering or reflection run per (tenant, user): both write the same memories.
            models.UniqueConstraint(
                name="one_active_memory_run_per_user",
                fields=["tenant", "user_id"],
                condition=Q(status__in=list(ACTIVE_STATUSES), kind__in=list(MEMORY_RUN_KINDS)),
            ),
            # One active lifecycle run per tenant (it works over all of the tenant's users).
            models.UniqueConstraint(
                name="one_active_lifecycle_run_per_tenant",
                fields=["tenant"],
                condition=Q(status__in=list(ACTIVE_STATUSES), kind=RunKind.LIFECYCLE),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.user_id or '*'} [{self.status}]"


class LedgerEntry(models.Model):
    """One row per change a job, API key or operator made: enough to audit it and undo what is undoable."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="ledger")
    run = models.ForeignKey(ConsolidationRun, null=True, blank=True, on_delete=models.SET_NULL,
                            related_name="ledger")
    action = models.CharField(max_length=40)
    actor = models.CharField(max_length=200)
    user_id = models.CharField(max_length=200, blank=True, default="")
    memory_ids = models.JSONField(default=list, blank=True)
    inputs = models.JSONField(default=dict, blank=True)
    outputs = models.JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True, default="")
    scores = models.JSONField(default=dict, blank=True)
    undoable = models.BooleanField(default=False)
    undone_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL)
    # The review decision (approve / reject / resolve) an operator recorded for this change, if any.
    reviewed_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "ledger entries"
        indexes = [models.Index(name="ledger_scope", fields=["tenant", "user_id", "created_at"])]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor}"


class SessionEnd(models.Model):
    """An agent said a session is over; the consolidation pass it enqueued runs once however often it is said."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=200)
    session_id = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(name="session_end_once", fields=["tenant", "user_id", "session_id"])]


def webhook_secret() -> str:
    return secrets.token_urlsafe(32)


class WebhookEndpoint(models.Model):
    """A tenant's receiver: events of the subscribed types (all when empty) are POSTed to it, signed with
    HMAC-SHA256 over "<timestamp>.<body>" with its secret."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=100, default=webhook_secret,
                              help_text="shared secret for the X-Zeromem-Signature header (generated; give it to the "
                                        "receiver)")
    event_types = models.JSONField(default=list, blank=True, help_text='e.g. ["memory.merged"]; empty = all')
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.url} ({self.tenant})"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class WebhookDelivery(models.Model):
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.UUIDField()
    event_type = models.CharField(max_length=50)
    payload = models.JSONField()
    status = models.CharField(max_length=10, default=DeliveryStatus.PENDING)  # a DeliveryStatus
    attempts = models.IntegerField(default=0)
    last_status_code = models.IntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        constraints = [models.UniqueConstraint(name="webhook_delivery_once", fields=["endpoint", "event_id"])]
        indexes = [models.Index(name="webhook_delivery_recent", fields=["endpoint", "created_at"])]


class Canary(models.Model):
    """A query an operator wants answered well for one user: after each clustering or reflection run it is
    replayed, and the run is undone when retrieval of its expected memories gets worse (issue 9)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="canaries")
    user_id = models.CharField(max_length=200)
    query = models.TextField()
    expected_memory_ids = models.JSONField(
        default=list, help_text='ids of the memories the query must find, e.g. ["3f2c…"]; a semantic memory that '
                                'cites one (transitively) counts as finding it')
    active = models.BooleanField(default=True)
    note = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "canaries"
        indexes = [models.Index(name="canary_scope", fields=["tenant", "user_id"])]

    def __str__(self) -> str:
        return f"{self.query[:60]} ({self.user_id})"
