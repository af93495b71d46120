"""The Platform: everything a GPU platform team declares about one cluster."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from gpuplatform.model.base import DnsLabel, DnsSubdomain, LabelKey, ReleaseNumber, SpecModel
from gpuplatform.model.classes import BridgeClass, ServiceTier
from gpuplatform.model.nodes import NodePool
from gpuplatform.model.tenants import Tenant
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
    """Kubernetes release of the cluster (`1.36.1`): drives the API versions and the version rules."""
    feature_gates: dict[str, bool] = {}
    """Feature gates the cluster sets beyond its release's defaults (`DRAExtendedResource: true`)."""


class GpuOperator(SpecModel):
    """The NVIDIA GPU Operator release and the team's own Helm values (never dropped)."""

    version: ReleaseNumber = "26.3.1"
    """GPU Operator release (the `gpu-operator` chart version)."""
    namespace: DnsLabel = "gpu-operator"
    """Namespace of the GPU Operator release."""
    driver_version: ReleaseNumber = "580.126.09"
    """NVIDIA data-center driver the operator installs (580+ for DRA)."""
    mode: Literal["clusterPolicy", "gpuCluster"] = "clusterPolicy"
    """How the operator is configured: a ClusterPolicy, or GPUCluster (GPU Operator 26.7+)."""
    chart_repository: str = ""
    """Helm repository of the gpu-operator chart; when set, the operator release is rendered too."""
    values: dict[str, Any] = {}
    """The team's own Helm values; the migration's values are merged on top, nothing set here is dropped."""


class DraDriver(SpecModel):
    """The NVIDIA DRA driver Helm release (chart `dra-driver-nvidia-gpu`)."""

    chart_version: ReleaseNumber = "0.4.1"
    """Version of the `dra-driver-nvidia-gpu` chart (25.x calendar releases, then 0.x)."""
    chart_repository: str = Field(min_length=1)
    """Helm (https://) or OCI (oci://) repository of the chart; a spec field, never hard-coded."""
    namespace: DnsLabel = "nvidia-dra-driver-gpu"
    """Namespace of the DRA driver release (its kubelet plugin runs there)."""
    nvidia_driver_root: str = "/run/nvidia/driver"
    """`nvidiaDriverRoot` of the chart: where the NVIDIA driver is on the host (the operator's driver: `/run/nvidia/driver`)."""
    feature_gates: dict[str, bool] = {}
    """The driver's `featureGates` (alpha ones are refused in production unless accepted)."""
    values: dict[str, Any] = {}
    """The team's own Helm values for the driver; the migration's are merged on top."""


class Delivery(SpecModel):
    """How Argo CD and/or Flux find and apply the rendered tree."""

    engines: tuple[Literal["argocd", "flux"], ...] = ("argocd",)
    """GitOps engines to render entry points for (`argocd`, `flux` or both)."""
    repo_url: str = Field(min_length=1)
    """Git repository the engines read the rendered tree from."""
    revision: str = "main"
    """Branch (Flux `ref.branch`) or revision (Argo CD `targetRevision`) to follow."""
    path: str = Field(default="dist", max_length=255, pattern=r"^[\w-][\w.-]*(/[\w-][\w.-]*)*$")
    """Folder of the rendered tree inside the repository: relative, segments never start with `.`."""
    argocd_namespace: DnsLabel = "argocd"
    """Namespace of Argo CD (its AppProject and Applications)."""
    flux_namespace: DnsLabel = "flux-system"
    """Namespace of Flux (its GitRepository and Kustomizations)."""
    gates_namespace: DnsLabel = "gpuplatform-gates"
    """Namespace of the gate Jobs and their read-only identity."""
    kubectl_image: str = "docker.io/alpine/k8s:1.36.1"
    """Image of the gate Jobs; it must provide `sh`, `kubectl` and `jq` (alpine/k8s does)."""
    cluster_server: str = "https://kubernetes.default.svc"
    """API server Argo CD deploys to (the in-cluster address when Argo CD runs in this cluster)."""
    timeout_minutes: int = Field(default=15, ge=1)
    """How long Flux waits for a layer, and a post-transition gate for its invariant."""


class Monitoring(SpecModel):
    """PrometheusRule alerts for states that must never last."""

    enabled: bool = False
    """Render a PrometheusRule for states that must never last."""
    namespace: DnsLabel = "monitoring"
    """Namespace of the PrometheusRule."""
    claim_pending_minutes: int = Field(default=15, ge=1)
    """Alert when a GPU pod of a tenant stays pending this long."""


class Acceptances(SpecModel):
    """Risks the team accepts explicitly; everything here is refused unless named."""

    alpha_features: tuple[str, ...] = ()
    """Driver alpha gates allowed in production or first-cutover waves (e.g. `DynamicMIG`)."""
    nim_preview: bool = False
    """Accept NIM DRA (Technology Preview) in production tenants and waves."""


class Platform(SpecModel):
    """One cluster's GPU platform and the waves that move it from the device plugin to DRA."""

    name: DnsLabel
    """Platform (cluster) name: `metadata.name` of the spec, the folder under `dist/`."""
    domain: DnsSubdomain
    """Suffix of the platform's DeviceClass names: tier `t` becomes `t.<domain>`."""
    mode_label: LabelKey | None = None
    """Node label recording the allocator mode; default `gpu-scheduling.<domain>/mode`."""
    kubernetes: Kubernetes = Kubernetes()
    """The cluster's Kubernetes release and feature gates."""
    gpu_operator: GpuOperator = GpuOperator()
    """The NVIDIA GPU Operator release."""
    dra_driver: DraDriver
    """The NVIDIA DRA driver release, installed from the first wave after `baseline`."""
    node_pools: tuple[NodePool, ...] = ()
    """GPU node pools; each moves from the device plugin to DRA in its `migratesIn` wave."""
    tiers: tuple[ServiceTier, ...] = ()
    """Service tiers, each a DeviceClass `<name>.<domain>` tenants claim from."""
    bridges: tuple[BridgeClass, ...] = ()
    """Extended-resource bridge classes that serve legacy `nvidia.com/gpu` requests from DRA."""
    tenants: tuple[Tenant, ...] = ()
    """Team namespaces: their tiers, claim templates, quota and admission policy."""
    nim_services: tuple[NimService, ...] = ()
    """NIM services moved to DRA blue/green (a new NIMService with `draResources`)."""
    workloads: tuple[Workload, ...] = ()
    """Legacy workloads converted to claims in their `movesIn` wave (hand-offs for their owners)."""
    validation: ValidationWorkload | None = None
    """The pilot Job that proves a claim reaches a container, from the first native-claim-pilot wave."""
    waves: tuple[Wave, ...] = Field(min_length=1)
    """The waves in order: baseline first, final-cutover last, stages in canonical order."""
    active_wave: DnsLabel
    """The wave the entry points apply; advancing or rolling back is changing this."""
    delivery: Delivery
    """The Git repository and path of the rendered tree, and the engines that apply it."""
    monitoring: Monitoring = Monitoring()
    """Alerts for states that must never last."""
    accept: Acceptances = Acceptances()
    """Risks accepted explicitly (alpha driver features, NIM preview in production)."""

    @property
    def mode_label_key(self) -> str:
        """The node mode label key (`gpu-scheduling.<domain>/mode` unless set)."""
        return self.mode_label or f"gpu-scheduling.{self.domain}/mode"

    def class_name(self, tier_or_bridge: str) -> str:
        """DeviceClass name of a tier or platform bridge: `<name>.<domain>`."""
        return f"{tier_or_bridge}.{self.domain}"
