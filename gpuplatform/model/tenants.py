"""Tenants: namespaces that consume tiers through ResourceClaims."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpuplatform.model.base import DnsLabel, DnsSubdomain, LabelValue, SpecModel

__all__ = ["ClaimTemplate", "Tenant", "TenantAllowances", "TenantQuota"]


class ClaimTemplate(SpecModel):
    """A ResourceClaimTemplate in the tenant's namespace requesting `count` devices of one tier."""

    name: DnsSubdomain
    tier: DnsLabel
    count: int = Field(default=1, ge=1, le=32)
    selectors: tuple[str, ...] = ()
    """Extra CEL selectors ANDed with the tier's class selectors."""
    claims: int = Field(default=1, ge=0)
    """Claims of this template in use at peak, one pod each (read by `gpuplatform capacity`)."""


class TenantQuota(SpecModel):
    """Closed-world ResourceQuota limits of a tenant namespace."""

    claims: int = Field(default=16, ge=0)
    claim_templates: int = Field(default=8, ge=0)
    devices: int = Field(default=8, ge=0)
    """`<class>.deviceclass.resource.k8s.io/devices` for each of the tenant's tiers."""
    gpus: int = Field(default=8, ge=0)
    """`requests.nvidia.com/gpu` where the tenant may use the bridge."""


class TenantAllowances(SpecModel):
    """What the tenant's admission policy lets claims carry (all off by default)."""

    selectors: bool = False
    admin_access: bool = False
    allocation_mode_all: bool = False
    tolerations: bool = False
    config: bool = False


class Tenant(SpecModel):
    """A team namespace: the tiers it may use, who operates its claims, its templates and quota."""

    name: DnsLabel
    namespace: DnsLabel | None = None
    """Defaults to the tenant's name."""
    environment: Literal["production", "development"] = "development"
    tiers: tuple[DnsLabel, ...] = ()
    bridge: bool = False
    """May use legacy `nvidia.com/gpu` requests served by the bridge class."""
    groups: tuple[str, ...] = ()
    """Groups bound to the claim-operator Role."""
    owner: LabelValue = ""
    """Sets the Namespace label `gpuplatform.dev/owner`."""
    cost_center: LabelValue = ""
    """Sets the Namespace label `gpuplatform.dev/cost-center`."""
    claim_templates: tuple[ClaimTemplate, ...] = ()
    quota: TenantQuota = TenantQuota()
    allow: TenantAllowances = TenantAllowances()

    @property
    def ns(self) -> str:
        """The namespace the tenant's objects live in."""
        return self.namespace or self.name
