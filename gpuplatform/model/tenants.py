"""Tenants: namespaces that consume tiers through ResourceClaims."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpuplatform.model.base import (
    CleanString,
    DnsLabel,
    DnsSubdomain,
    LabelValue,
    NonNegativeInt32,
    NonNegativeInt64,
    SpecModel,
    Token,
)

__all__ = ["ClaimTemplate", "Tenant", "TenantAllowances", "TenantGitOps", "TenantPolicy", "TenantQuota"]


class ClaimTemplate(SpecModel):
    """A ResourceClaimTemplate in the tenant's namespace requesting `count` devices of one tier."""

    name: DnsSubdomain
    """Name of the ResourceClaimTemplate in the tenant's namespace."""
    tier: DnsLabel
    """Tier (DeviceClass) the template requests; the tenant must be allowed to use it."""
    count: int = Field(default=1, strict=True, ge=1, le=32)
    """Devices the claim requests (all from one node)."""
    selectors: tuple[str, ...] = ()
    """Extra CEL selectors ANDed with the tier's class selectors."""
    claims: NonNegativeInt32 = 1
    """Claims of this template in use at peak, one pod each (read by `gpuplatform capacity`)."""


class TenantQuota(SpecModel):
    """Closed-world ResourceQuota limits of a tenant namespace."""

    claims: NonNegativeInt64 = 16
    """`count/resourceclaims.resource.k8s.io` of the namespace."""
    claim_templates: NonNegativeInt64 = 8
    """`count/resourceclaimtemplates.resource.k8s.io` of the namespace."""
    devices: NonNegativeInt64 = 8
    """`<class>.deviceclass.resource.k8s.io/devices` for each of the tenant's tiers."""
    gpus: NonNegativeInt64 = 8
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


class TenantGitOps(SpecModel):
    """The identity the tenant's GitOps applications run under, instead of the shared controllers'.

    Renders a ServiceAccount in the tenant namespace with the claim-deployer Role (and
    `clusterRoles` bound in the namespace); with Argo CD, an AppProject whose
    `destinationServiceAccounts` makes the tenant's Applications sync as that ServiceAccount; with
    Flux, the account the tenant's Kustomizations name in `spec.serviceAccountName`.
    """

    enabled: bool = True
    """Render the tenant's GitOps identity."""
    service_account: DnsLabel = "gitops-deployer"
    """Name of the ServiceAccount the tenant's applications sync as."""
    source_repos: tuple[Token, ...] = ("*",)
    """Repositories the tenant's AppProject lets its Applications read (Argo CD `sourceRepos`)."""
    cluster_roles: tuple[DnsSubdomain, ...] = ()
    """ClusterRoles bound to the ServiceAccount inside the namespace (what the applications deploy)."""


class TenantPolicy(SpecModel):
    """Cluster-wide admission around the tenants."""

    admin_groups: tuple[CleanString, ...] = Field(default=("system:masters",), min_length=1)
    """Groups that may set the `resource.kubernetes.io/admin-access` namespace label."""
    allow_namespaces: tuple[DnsLabel, ...] = ()
    """Namespaces besides the tenants' and the platform's where claims are not restricted
    (e.g. the users of another DRA driver); everywhere else ResourceClaims and templates are refused."""


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
    groups: tuple[CleanString, ...] = ()
    """Groups bound to the claim-operator Role."""
    owner: LabelValue = ""
    """Sets the label `gpuplatform.dev/owner` on the Namespace and on claims from its templates."""
    cost_center: LabelValue = ""
    """Sets the label `gpuplatform.dev/cost-center` on the Namespace and on claims from its templates."""
    gitops: TenantGitOps = TenantGitOps()
    """The identity the tenant's own GitOps applications run under."""
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
