"""Reads of a tenant's policy (zeromem/core/domain/policy.py): the defaults with its `overrides` laid over them."""

from __future__ import annotations

import logging

from zeromem.core.domain.policy import DEFAULT_POLICY, Policy, PolicyInvalid, policy_with_overrides
from zeromem.models import Tenant

logger = logging.getLogger(__name__)


def policy_for(*, tenant_id: int) -> Policy:
    """The tenant's policy; PolicyInvalid when its stored overrides do not fit (the admin refuses such overrides,
    so only a write around it stores them)."""
    return policy_with_overrides(Tenant.objects.filter(id=tenant_id).values_list("overrides", flat=True).first())


def policy_of(tenant: Tenant) -> Policy:
    """The policy of a tenant already read (an API key's, kept a few seconds per process): no query."""
    return policy_with_overrides(tenant.overrides)


def policies_for(*, tenant_ids: list[int] | None = None) -> dict[int, Policy]:
    """Each tenant's policy (all tenants without `tenant_ids`), for a selection across tenants (who is due for a
    run). A tenant whose overrides do not fit is selected by the defaults rather than stopping every tenant's
    runs: its own run then fails, saying why (`consolidation.runs.run_policy`)."""
    tenants = Tenant.objects.all() if tenant_ids is None else Tenant.objects.filter(id__in=tenant_ids)
    return {tenant_id: _or_default(tenant_id, overrides)
            for tenant_id, overrides in tenants.values_list("id", "overrides")}


def _or_default(tenant_id: int, overrides: dict[str, object] | None) -> Policy:
    try:
        return policy_with_overrides(overrides)
    except PolicyInvalid as invalid:
        logger.error("tenant %s: %s; selected for runs by the default policy", tenant_id, invalid)
        return DEFAULT_POLICY
