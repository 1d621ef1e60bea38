"""MemoryProfile (the `memory_profiles` table): what an entity's or user's memories say about them."""

from __future__ import annotations

from django.db import models

from zeromem.models import Tenant


class MemoryProfile(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="profiles")
    user_id = models.CharField(max_length=200)
    # Empty string = the user-wide profile (a real value, so the unique key below holds).
    entity_id = models.CharField(max_length=200, blank=True, default="")
    namespace = models.CharField(max_length=100, default="global")
    # Each item: {"category", "subject", "statement", "confidence", "source_ids": [...]}
    preferences = models.JSONField(default=list, blank=True)
    behaviors = models.JSONField(default=list, blank=True)
    facts = models.JSONField(default=list, blank=True)
    summary = models.TextField(blank=True, default="")
    # The memories the summary was written from: an erasure of any of them clears it.
    summary_source_ids = models.JSONField(default=list, blank=True)
    version = models.IntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "memory_profiles"
        constraints = [models.UniqueConstraint(name="memory_profile_once",
                                               fields=["tenant", "user_id", "entity_id", "namespace"])]

    def __str__(self) -> str:
        return f"{self.entity_id or 'user-wide'} of {self.user_id} ({self.namespace})"
