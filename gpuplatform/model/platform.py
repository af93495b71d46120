"""The Platform: everything a GPU platform team declares about one cluster."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from gpuplatform.model.base import DnsLabel, DnsSubdomain, LabelKey, ReleaseNumber, SpecModel
from gpuplatform.model.classes import BridgeClass, ServiceTier
from gpuplatform.model.nodes import NodePool
from gpuplatform.model.tenants import Tenant, TenantPolicy
from gpuplatform.model.waves import Wave
from gpuplatform.model.workloads import NimService, ValidationWorkload, Workload

__all__ = [
    "Acceptances",
    "Delivery",
    "DraDriver",
    "GpuOperator",
    "Kubernetes",
    "Monitoring",
    "Platform",
]


class Kubernetes(SpecModel):
    """Target Kubernetes release and the feature gates the cluster enables beyond the defaults."""

    version: ReleaseNumber = "1.36.1"
    feature_gates: dict[str, bool] = {}


class GpuOperator(SpecModel):
    """The NVIDIA GPU Operator release and the team's own Helm values (never dropped)."""

    version: ReleaseNumber = "26.3.1"
    namespace: DnsLabel = "gpu-operator"
    driver_version: ReleaseNumber = "580.126.09"
    """NVIDIA data-center driver the operator installs (580+ for DRA)."""
    mode: Literal["clusterPolicy", "gpuCluster"] = "clusterPolicy"
    chart_repository: str = ""
    """Helm repository of the gpu-operator chart; when set, the operator release is rendered too."""
    values: dict[str, Any] = {}


class DraDriver(SpecModel):
    """The NVIDIA DRA driver Helm release (chart `dra-driver-nvidia-gpu`)."""

    chart_version: ReleaseNumber = "0.4.1"
    chart_repository: str = Field(min_length=1)
    """Helm (https://) or OCI (oci://) repository of the chart; a spec field, never hard-coded."""
    namespace: DnsLabel = "nvidia-dra-driver-gpu"
    nvidia_driver_root: str = "/run/nvidia/driver"
    feature_gates: dict[str, bool] = {}
    values: dict[str, Any] = {}


class Delivery(SpecModel):
    """How Argo CD and/or Flux find and apply the rendered tree."""

    engines: tuple[Literal["argocd", "flux"], ...] = ("argocd",)
    repo_url: str = Field(min_length=1)
    revision: str = "main"
    path: str = Field(default="dist", max_length=255, pattern=r"^[\w-][\w.-]*(/[\w-][\w.-]*)*$")
    """Folder of the rendered tree inside the repository: relative, segments never start with `.`."""
    argocd_namespace: DnsLabel = "argocd"
    argocd_service_account: DnsLabel = "argocd-application-controller"
    """ServiceAccount (in `argocdNamespace`) the platform's own Application syncs as once Argo CD
    impersonation is on for the tenants' projects (the platform AppProject's `destinationServiceAccounts`)."""
    flux_namespace: DnsLabel = "flux-system"
    gates_namespace: DnsLabel = "gpuplatform-gates"
    kubectl_image: str = "docker.io/alpine/k8s:1.36.1"
    """Image of the gate Jobs; it must provide `sh`, `kubectl` and `jq` (alpine/k8s does)."""
    cluster_server: str = "https://kubernetes.default.svc"
    """API server Argo CD deploys to (the in-cluster address when Argo CD runs in this cluster)."""
    timeout_minutes: int = Field(default=15, ge=1)
    """How long Flux waits for a layer, and a post-transition gate for its invariant."""


class Monitoring(SpecModel):
    """PrometheusRule alerts for states that must never last."""

    enabled: bool = False
    namespace: DnsLabel = "monitoring"
    claim_pending_minutes: int = Field(default=15, ge=1)


class Acceptances(SpecModel):
    """Risks the team accepts explicitly; everything here is refused unless named."""

    alpha_features: tuple[str, ...] = ()
    """Driver alpha gates allowed in production or first-cutover waves (e.g. `DynamicMIG`)."""
    nim_preview: bool = False


class Platform(SpecModel):
    """One cluster's GPU platform and the waves that move it from the device plugin to DRA."""

    name: DnsLabel
    domain: DnsSubdomain
    """Suffix of the platform's DeviceClass names: tier `t` becomes `t.<domain>`."""
    mode_label: LabelKey | None = None
    """Node label recording the allocator mode; default `gpu-scheduling.<domain>/mode`."""
    kubernetes: Kubernetes = Kubernetes()
    gpu_operator: GpuOperator = GpuOperator()
    dra_driver: DraDriver
    node_pools: tuple[NodePool, ...] = ()
    tiers: tuple[ServiceTier, ...] = ()
    bridges: tuple[BridgeClass, ...] = ()
    tenants: tuple[Tenant, ...] = ()
    tenant_policy: TenantPolicy = TenantPolicy()
    nim_services: tuple[NimService, ...] = ()
    workloads: tuple[Workload, ...] = ()
    validation: ValidationWorkload | None = None
    waves: tuple[Wave, ...] = Field(min_length=1)
    active_wave: DnsLabel
    delivery: Delivery
    monitoring: Monitoring = Monitoring()
    accept: Acceptances = Acceptances()

    @property
    def mode_label_key(self) -> str:
        """The node mode label key (`gpu-scheduling.<domain>/mode` unless set)."""
        return self.mode_label or f"gpu-scheduling.{self.domain}/mode"

    def class_name(self, tier_or_bridge: str) -> str:
        """DeviceClass name of a tier or platform bridge: `<name>.<domain>`."""
        return f"{tier_or_bridge}.{self.domain}"
