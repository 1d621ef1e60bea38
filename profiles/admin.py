from __future__ import annotations

from django.contrib import admin

from profiles.models import MemoryProfile


@admin.register(MemoryProfile)
class MemoryProfileAdmin(admin.ModelAdmin):
    list_display = ("tenant", "user_id", "entity_id", "namespace", "version", "updated_at")
    list_filter = ("tenant", "namespace")
    search_fields = ("user_id", "entity_id", "summary")
    readonly_fields = ("version", "created_at", "updated_at")
