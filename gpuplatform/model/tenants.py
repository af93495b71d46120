"""Tenants: namespaces that consume tiers through ResourceClaims."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpuplatform.model.base import DnsLabel, DnsSubdomain, LabelValue, SpecModel

__all__ = ["ClaimTemplate", "Tenant", "TenantAllowances", "TenantQuota"]


class ClaimTemplate(SpecModel):
    """A ResourceClaimTemplate in the tenant's namespace requesting `count` devices of one tier."""

    name: DnsSubdomain
    """Name of the ResourceClaimTemplate in the tenant's namespace."""
    tier: DnsLabel
    """Tier (DeviceClass) the template requests; the tenant must be allowed to use it."""
    count: int = Field(default=1, ge=1, le=32)
    """Devices the claim requests (all from one node)."""
    selectors: tuple[str, ...] = ()
    """Extra CEL selectors ANDed with the tier's class selectors."""
    claims: int = Field(default=1, ge=0)
    """Claims of this template in use at peak, one pod each (read by `gpuplatform capacity`)."""


class TenantQuota(SpecModel):
    """Closed-world ResourceQuota limits of a tenant namespace."""

    claims: int = Field(default=16, ge=0)
    """`count/resourceclaims.resource.k8s.io` of the namespace."""
    claim_templates: int = Field(default=8, ge=0)
    """`count/resourceclaimtemplates.resource.k8s.io` of the namespace."""
    devices: int = Field(default=8, ge=0)
    """`<class>.deviceclass.resource.k8s.io/devices` for each of the tenant's tiers."""
    gpus: int = Field(default=8, ge=0)
    """`requests.nvidia.com/gpu` where the tenant may use the bridge."""


class TenantAllowances(SpecModel):
    """What the tenant's admission policy lets claims carry (all off by default)."""

    selectors: bool = False
    """Claims may add their own CEL selectors."""
    admin_access: bool = False
    """Claims may request `adminAccess` (see every device, including allocated ones)."""
    allocation_mode_all: bool = False
    """Claims may request `allocationMode: All`."""
    tolerations: bool = False
    """Claims may carry device tolerations."""
    config: bool = False
    """Claims may pass opaque driver configuration."""


class Tenant(SpecModel):
    """A team namespace: the tiers it may use, who operates its claims, its templates and quota."""

    name: DnsLabel
    """Tenant name (and namespace, unless `namespace` is set)."""
    namespace: DnsLabel | None = None
    """Defaults to the tenant's name."""
    environment: Literal["production", "development"] = "development"
    """Production tenants may not use sharing tiers or NIM preview features."""
    tiers: tuple[DnsLabel, ...] = ()
    """Tiers the tenant may claim (admission policy and quota enforce it)."""
    bridge: bool = False
    """May use legacy `nvidia.com/gpu` requests served by the bridge class."""
    groups: tuple[str, ...] = ()
    """Groups bound to the claim-operator Role."""
    owner: LabelValue = ""
    """Sets the Namespace label `gpuplatform.dev/owner`."""
    cost_center: LabelValue = ""
    """Sets the Namespace label `gpuplatform.dev/cost-center`."""
    claim_templates: tuple[ClaimTemplate, ...] = ()
    """ResourceClaimTemplates rendered into the tenant's namespace."""
    quota: TenantQuota = TenantQuota()
    """Closed-world ResourceQuota of the namespace."""
    allow: TenantAllowances = TenantAllowances()
    """What the tenant's admission policy lets claims carry."""

    @property
    def ns(self) -> str:
        """The namespace the tenant's objects live in."""
        return self.namespace or self.name
