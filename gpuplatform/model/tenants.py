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
    tier: DnsLabel
    count: int = Field(default=1, ge=1, le=32)
    selectors: tuple[str, ...] = ()
    """Extra CEL selectors ANDed with the tier's class selectors."""
    claims: NonNegativeInt32 = 1
    """Claims of this template in use at peak, one pod each (read by `gpuplatform capacity`)."""


class TenantQuota(SpecModel):
    """Closed-world ResourceQuota limits of a tenant namespace."""

    claims: NonNegativeInt64 = 16
    claim_templates: NonNegativeInt64 = 8
    devices: NonNegativeInt64 = 8
    """`<class>.deviceclass.resource.k8s.io/devices` for each of the tenant's tiers."""
    gpus: NonNegativeInt64 = 8
    """`requests.nvidia.com/gpu` where the tenant may use the bridge."""


class TenantAllowances(SpecModel):
    """What the tenant's admission policy lets claims carry (all off by default)."""

    selectors: bool = False
    admin_access: bool = False
    allocation_mode_all: bool = False
    tolerations: bool = False
    config: bool = False


class TenantGitOps(SpecModel):
    """The identity the tenant's GitOps applications run under, instead of the shared controllers'.

    Renders a ServiceAccount in the tenant namespace with the claim-deployer Role (and
    `clusterRoles` bound in the namespace); with Argo CD, an AppProject whose
    `destinationServiceAccounts` makes the tenant's Applications sync as that ServiceAccount; with
    Flux, the account the tenant's Kustomizations name in `spec.serviceAccountName`.
    """

    enabled: bool = True
    service_account: DnsLabel = "gitops-deployer"
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
    namespace: DnsLabel | None = None
    """Defaults to the tenant's name."""
    environment: Literal["production", "development"] = "development"
    tiers: tuple[DnsLabel, ...] = ()
    bridge: bool = False
    """May use legacy `nvidia.com/gpu` requests served by the bridge class."""
    groups: tuple[CleanString, ...] = ()
    """Groups bound to the claim-operator Role."""
    owner: LabelValue = ""
    """Sets the label `gpuplatform.dev/owner` on the Namespace and on claims from its templates."""
    cost_center: LabelValue = ""
    """Sets the label `gpuplatform.dev/cost-center` on the Namespace and on claims from its templates."""
    gitops: TenantGitOps = TenantGitOps()
    claim_templates: tuple[ClaimTemplate, ...] = ()
    quota: TenantQuota = TenantQuota()
    allow: TenantAllowances = TenantAllowances()

    @property
    def ns(self) -> str:
        """The namespace the tenant's objects live in."""
        return self.namespace or self.name
