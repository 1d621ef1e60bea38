"""The throwaway tenant each evaluation stores its data in."""

from __future__ import annotations

import uuid
from typing import Any

from zeromem.core import services
from zeromem.models import Tenant

# The evaluations measure retrieval themselves: the safety net must not undo the runs they measure.
EVALUATION_OVERRIDES = {"canaries": {"enabled": False}}


def evaluation_tenant(kind: str, overrides: dict[str, Any] | None = None) -> Tenant:
    """A new tenant named after the evaluation, its policy without the safety net and with `overrides` (top-level
    policy sections, e.g. `{"updates": {"reader": "rules"}}` to measure another reader)."""
    tenant = services.tenant_get_or_create(name=f"evaluate-{kind}-{uuid.uuid4().hex[:8]}")
    tenant.overrides = {**EVALUATION_OVERRIDES, **(overrides or {})}
    tenant.save(update_fields=["overrides"])
    return tenant
