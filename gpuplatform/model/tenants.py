"""Tenants: namespaces that consume tiers through ResourceClaims."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

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
from gpuplatform.model.classes import ServiceTier
from gpuplatform.model.fields import Items, Ref, Refs, default

DEFAULT_TIER_DEVICES = 8
"""A tier's device limit when neither `quota.devices` nor `quota.tiers` gives one."""

__all__ = ["ClaimTemplate", "Tenant", "TenantAllowances", "TenantGitOps", "TenantPolicy", "TenantQuota"]


class ClaimTemplate(SpecModel):
    """A ResourceClaimTemplate in the tenant's namespace requesting `count` devices of one tier."""

    name: DnsSubdomain
    """Name of the ResourceClaimTemplate in the tenant's namespace."""
    tier: Ref[ServiceTier]
    """Tier (DeviceClass) the template requests; the tenant must be allowed to use it."""
    count: int = Field(default=1, strict=True, ge=1, le=32)
    """Devices the claim requests (all from one node)."""
    selectors: Items[str] = default(())
    """Extra CEL selectors ANDed with the tier's class selectors."""
    claims: NonNegativeInt32 = 0
    """Claims of this template in use at peak, one pod each (read by `gpuplatform capacity`). 0 (the
    default): no declared workload uses the template yet, so it is a note, not demand: capacity counts
    what runs (`--snapshot` counts the claims a cluster holds of it)."""


class TenantQuota(SpecModel):
    """The tenant namespace's ResourceQuota, as typed: nothing is rendered that is not written here.

    ResourceQuota limits DRA devices per DeviceClass only
    (`<class>.deviceclass.resource.k8s.io/devices`, kubernetes pkg/quota/v1/evaluator/core/
    resource_claims.go): a total across several tiers is enforced by per-tier limits that sum to it.
    """

    devices: NonNegativeInt64 | None = None
    """Devices the tenant's claims may hold at once, in total across all of its tiers. With one
    tier, that tier's limit; with several, `tiers` gives the limit of every tier but at most one,
    which gets the rest (the limits sum to the total). Left out: no total, each tier's limit is
    its entry in `tiers`, else 8."""
    tiers: dict[DnsLabel, NonNegativeInt64] = {}
    """Per-tier limits (`<class>.deviceclass.resource.k8s.io/devices`), parts of `devices` when it is set."""
    gpus: NonNegativeInt64 = 8
    """`requests.nvidia.com/gpu` of the namespace: device-plugin pods and, with `bridge`, bridged
    ones. Nothing is added unless `legacyWorkloads` says so."""
    legacy_workloads: bool = False
    """Add to `requests.nvidia.com/gpu` the GPUs of the namespace's `workloads[]` and replaced NIM
    services still on the device plugin (with a Deployment's rollout surge), up to the wave after
    their move; `plan` and `check` (GP268) print what is added and why."""
    claims: NonNegativeInt64 | None = None
    """`count/resourceclaims.resource.k8s.io` of the namespace (not limited when left out)."""
    claim_templates: NonNegativeInt64 | None = None
    """`count/resourceclaimtemplates.resource.k8s.io` of the namespace (not limited when left out)."""

    def tier_limits(self, tiers: tuple[str, ...]) -> dict[str, int]:
        """Each tier's device limit: the typed ones, and the rest of `devices` for the one left out."""
        limits = {t: self.tiers[t] for t in tiers if t in self.tiers}
        rest = [t for t in tiers if t not in self.tiers]
        if self.devices is None:
            return limits | dict.fromkeys(rest, DEFAULT_TIER_DEVICES)
        if rest:
            limits[rest[0]] = self.devices - sum(limits.values())
        return limits


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
    source_repos: Items[Token] = default(("*",))
    """Repositories the tenant's AppProject lets its Applications read (Argo CD `sourceRepos`)."""
    cluster_roles: Items[DnsSubdomain] = default(())
    """ClusterRoles bound to the ServiceAccount inside the namespace (what the applications deploy)."""


class TenantPolicy(SpecModel):
    """Cluster-wide admission around the tenants."""

    admin_groups: Items[CleanString] = default(("system:masters",), min_length=1)
    """Groups that may set the `resource.kubernetes.io/admin-access` namespace label."""
    allow_namespaces: Items[DnsLabel] = default(())
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
    tiers: Refs[ServiceTier] = default(())
    """Tiers the tenant may claim (admission policy and quota enforce it)."""
    bridge: bool = False
    """May use legacy `nvidia.com/gpu` requests served by the bridge class."""
    groups: Items[CleanString] = default(())
    """Groups bound to the claim-operator Role."""
    owner: LabelValue = ""
    """Sets the label `gpuplatform.dev/owner` on the Namespace and on claims from its templates."""
    cost_center: LabelValue = ""
    """Sets the label `gpuplatform.dev/cost-center` on the Namespace and on claims from its templates."""
    gitops: TenantGitOps = TenantGitOps()
    """The identity the tenant's own GitOps applications run under."""
    claim_templates: Items[ClaimTemplate] = default(())
    """ResourceClaimTemplates rendered into the tenant's namespace."""
    quota: TenantQuota = TenantQuota()
    """Closed-world ResourceQuota of the namespace."""
    allow: TenantAllowances = TenantAllowances()
    """What the tenant's admission policy lets claims carry."""

    @model_validator(mode="after")
    def _quota_sums(self) -> Tenant:
        q = self.quota
        if unknown := sorted(set(q.tiers) - set(self.tiers)):
            raise ValueError(f"quota.tiers names {', '.join(unknown)}, not among the tenant's tiers")
        if q.devices is None:
            return self
        typed = sum(q.tiers.values())
        rest = [t for t in self.tiers if t not in q.tiers]
        if len(rest) > 1:
            raise ValueError(
                f"quota.devices ({q.devices}) is a total across the tenant's tiers and a ResourceQuota "
                f"limits devices per DeviceClass only: give quota.tiers limits for all but one of "
                f"{', '.join(rest)} (they sum to the total; the old per-tier meaning of devices: N is "
                f"tiers: {{{', '.join(f'{t}: N' for t in self.tiers)}}} without devices)"
            )
        if typed > q.devices or (not rest and typed != q.devices):
            word = "above" if typed > q.devices else "not"
            raise ValueError(f"quota.tiers sum to {typed}, {word} quota.devices {q.devices} (the total)")
        return self

    @property
    def ns(self) -> str:
        """The namespace the tenant's objects live in."""
        return self.namespace or self.name
