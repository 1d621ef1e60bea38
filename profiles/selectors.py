from __future__ import annotations

from profiles.models import MemoryProfile


def profile_get(*, tenant_id: int, user_id: str, entity_id: str | None, namespace: str) -> MemoryProfile | None:
    return MemoryProfile.objects.filter(tenant_id=tenant_id, user_id=user_id, entity_id=entity_id or "",
                                        namespace=namespace).first()
