"""Core data model (ARCHITECTURE.md, "Data model"): tenants, API keys, memories and the links between them.

State fields are never assigned here or in views: `zeromem.core.services.memory_transition` owns them.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q
from pgvector.django import HnswIndex, VectorField


class Tenant(models.Model):
    name = models.CharField(max_length=100, unique=True)
    # Per-tenant overrides of job settings, e.g. {"recency_window_hours": 24}.
    overrides = models.JSONField(default=dict, blank=True)
    # Ranked list of litellm model names this tenant may use for reflection (first configured one wins).
    allowed_models = models.JSONField(default=list, blank=True)
    monthly_token_budget = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class ApiKey(models.Model):
    """Stored as sha256 of the secret with a visible prefix; looked up by prefix, compared in constant time."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    # A key scoped to one user sees and writes only that user's memories, runs and profiles; null: the whole tenant.
    user_id = models.CharField(max_length=200, null=True, blank=True,
                               help_text="only this user's memories, runs and profiles; empty: the whole tenant")
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        scope = f", user {self.user_id}" if self.user_id else ""
        return f"{self.prefix}… ({self.tenant}{scope})"


class MemoryType(models.TextChoices):
    EPISODIC = "episodic"
    WORKING = "working"
    SEMANTIC = "semantic"


class MemoryState(models.TextChoices):
    RAW = "raw"
    CONSOLIDATED = "consolidated"
    ARCHIVED = "archived"


class MemoryKind(models.TextChoices):
    OBSERVATION = "observation"
    DECISION = "decision"
    QUESTION = "question"
    PREFERENCE = "preference"
    OUTCOME = "outcome"
    FACT = "fact"
    META = "meta"


# Numbers Memory.insertion_order (created, backfilled and owned by the migration memory_insertion_order).
INSERTION_ORDER_SEQUENCE = "zeromem_memory_insertion_order"


class Memory(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memories")
    user_id = models.CharField(max_length=200)
    entity_id = models.CharField(max_length=200, null=True, blank=True)
    namespace = models.CharField(max_length=100, default="global")
    session_id = models.CharField(max_length=200, null=True, blank=True)
    # The caller's name for the memory (PUT /memories/by-key): one memory per user, entity, namespace and key;
    # null for memories written without one.
    key = models.CharField(max_length=500, null=True, blank=True)
    memory_type = models.CharField(max_length=10, choices=MemoryType.choices, default=MemoryType.EPISODIC)
    state = models.CharField(max_length=12, choices=MemoryState.choices, default=MemoryState.RAW)
    # Why a memory was archived (decay, supersede, retract, retention): restore refuses retracted ones.
    archive_reason = models.CharField(max_length=20, blank=True, default="")
    kind = models.CharField(max_length=12, choices=MemoryKind.choices, default=MemoryKind.OBSERVATION)
    role = models.CharField(max_length=50, blank=True, default="")
    content = models.TextField()
    content_hash = models.CharField(max_length=64)
    # Never an empty vector: a memory that could not be embedded keeps NULL and is found by keyword.
    embedding = VectorField(dimensions=settings.ZEROMEMORY_EMBEDDING_DIM, null=True, blank=True)
    entities = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    window = models.CharField(max_length=200, null=True, blank=True)
    # What the language reader kept of the parse of this memory's claims ({"claims": {clause: features}}), stored
    # at ingestion so a memory is parsed once in its life; None: not parsed yet (clustering parses and stores it).
    features = models.JSONField(null=True, blank=True, editable=False)
    importance = models.FloatField(default=0.5)
    confidence = models.FloatField(default=0.5)
    corroboration_count = models.IntegerField(default=1)
    activation = models.FloatField(default=0.5)
    access_count = models.IntegerField(default=0)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    reward_score = models.FloatField(default=0.0)
    stability_score = models.FloatField(default=0.0)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()
    # The order memories were written in, from a database sequence at insert (no value is ever sent, so
    # concurrent writers and bulk imports number in commit-independent, increasing order): the tie-break after
    # created_at, since a batch import of a chat gives every turn of a session the same created_at.
    insertion_order = models.BigIntegerField(db_default=models.Func(models.Value(INSERTION_ORDER_SEQUENCE),
                                                                    function="nextval",
                                                                    output_field=models.BigIntegerField()),
                                             editable=False)
    updated_at = models.DateTimeField(auto_now=True)
    consolidated_at = models.DateTimeField(null=True, blank=True)
    reflected_at = models.DateTimeField(null=True, blank=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_to = models.DateTimeField(null=True, blank=True)
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="supersedes_memories")

    class Meta:
        verbose_name_plural = "memories"
        indexes = [
            # Vector and GIN indexes hold active memories only: search defaults to them and every query that
            # needs these indexes says `state = 'raw'` as a literal (a bound parameter could not match the
            # predicate). A row leaving raw then adds no entry to them, the costliest part of a state change
            # (never a HOT update: state is in index predicates). The tsvector's GIN index, with a key
            # for the user's scope beside it, is in migration 0012 (SQL: the tsvector is outside the model state).
            HnswIndex(name="memory_active_hnsw", fields=["embedding"], m=16, ef_construction=64,
                      opclasses=["vector_cosine_ops"], condition=Q(state="raw")),
            GinIndex(name="memory_active_entities_gin", fields=["entities"], condition=Q(state="raw")),
            GinIndex(name="memory_active_tags_gin", fields=["tags"], condition=Q(state="raw")),
            # The jobs read only raw memories, through this partial index, never scanning the table.
            models.Index(name="memory_raw_scope", fields=["tenant", "user_id", "entity_id", "created_at"],
                         condition=Q(state="raw")),
            models.Index(name="memory_list", fields=["tenant", "user_id", "created_at", "id"]),
        ]
        constraints = [
            # Content-hash dedupe per user and session: a retried write stores nothing twice. A keyed memory is
            # exempt: its key makes the write idempotent, and two keys may hold the same text.
            models.UniqueConstraint(
                name="memory_dedupe_per_session",
                fields=["tenant", "user_id", "session_id", "content_hash"],
                condition=~Q(memory_type="semantic") & Q(key__isnull=True),
                nulls_distinct=False,
            ),
            # One memory per key in a scope: concurrent keyed writes meet on this index (INSERT ... ON CONFLICT).
            models.UniqueConstraint(
                name="memory_key_once",
                fields=["tenant", "user_id", "entity_id", "namespace", "key"],
                condition=Q(key__isnull=False),
                nulls_distinct=False,
            ),
            models.CheckConstraint(name="memory_importance_range",
                                   condition=Q(importance__gte=0) & Q(importance__lte=1)),
            models.CheckConstraint(name="memory_confidence_range",
                                   condition=Q(confidence__gte=0) & Q(confidence__lte=1)),
        ]

    def __str__(self) -> str:
        return f"{self.memory_type}/{self.state}: {self.content[:60]}"


class MemorySource(models.Model):
    """A semantic memory cites a source; the source's id and hash outlive its deletion."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="source_links")
    source = models.ForeignKey(Memory, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="cited_by_links")
    source_memory_id = models.UUIDField()
    source_content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(name="memory_source_once",
                                               fields=["memory", "source_memory_id"])]


class RelationType(models.TextChoices):
    SUPERSEDES = "supersedes"
    CONTRADICTS = "contradicts"
    DERIVED_FROM = "derived_from"
    RELATED = "related"
    IMPLIES = "implies"
    SPECIALIZES = "specializes"
    CAUSES = "causes"


class MemoryRelation(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE)
    from_memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="relations_out")
    to_memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="relations_in")
    relation_type = models.CharField(max_length=20, choices=RelationType.choices)
    flagged = models.BooleanField(default=False)  # needs an operator's review
    resolved_at = models.DateTimeField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # Led by the tenant like every unique constraint of a tenant's rows (tests/test_schema_tenant_rule.py); the
        # same rule as before, since a relation's tenant is its memories' tenant.
        constraints = [models.UniqueConstraint(name="memory_relation_once",
                                               fields=["tenant", "from_memory", "to_memory", "relation_type"])]


class IdempotencyKey(models.Model):
    """The answer to a write request, replayed when the same key comes again."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE)
    key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64)
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(name="idempotency_key_once", fields=["tenant", "key"])]


class TermStat(models.Model):
    """BM25 document frequency of a lexeme within one user's memories, kept up to date at ingestion so
    search never counts documents at query time. Rows are deltas (a write appends +n or -n, never updates a row),
    so the frequency is the sum of a term's rows; a fold after each write sums them back into one row
    (`zeromem.core.services.search_stats_fold`)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=200)
    term = models.CharField(max_length=200)
    doc_count = models.IntegerField(default=0)

    class Meta:
        indexes = [models.Index(name="term_stat_scope", fields=["tenant", "user_id", "term"])]


class UserSearchStats(models.Model):
    """Per-user document count and total document length (in lexemes), for BM25's avgdl: deltas summed, like
    TermStat's."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=200)
    doc_count = models.IntegerField(default=0)
    total_length = models.BigIntegerField(default=0)

    class Meta:
        indexes = [models.Index(name="user_search_stats_scope", fields=["tenant", "user_id"])]


class LlmUsage(models.Model):
    """LLM calls, tokens and cost per tenant, month and purpose (reflection, extraction): what the monthly token
    budget is checked against and what an operator bills by."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="llm_usage")
    month = models.DateField()  # first day of the month (UTC)
    purpose = models.CharField(max_length=20)
    calls = models.IntegerField(default=0)
    prompt_tokens = models.BigIntegerField(default=0)
    completion_tokens = models.BigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=6, default=0)

    class Meta:
        verbose_name_plural = "LLM usage"
        constraints = [models.UniqueConstraint(name="llm_usage_once", fields=["tenant", "month", "purpose"])]

    def __str__(self) -> str:
        return f"{self.tenant} {self.month:%Y-%m} {self.purpose}"
