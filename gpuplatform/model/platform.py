"""The Platform: everything a GPU platform team declares about one cluster."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from gpuplatform.model.base import (
    INT32_MAX,
    CleanString,
    DnsLabel,
    DnsSubdomain,
    FeatureGateName,
    JsonObject,
    LabelKey,
    Minutes,
    ReleaseNumber,
    SpecModel,
    Token,
)
from gpuplatform.model.classes import BridgeClass, ServiceTier
from gpuplatform.model.containers import ContainerResources, Digest, ImageReference, ResourceAmounts
from gpuplatform.model.nodes import NodePool
from gpuplatform.model.tenants import Tenant, TenantPolicy
from gpuplatform.model.waves import Wave
from gpuplatform.model.workloads import NimService, ValidationWorkload, Workload
from gpuplatform.versions import DRA_DRIVER_DEFAULT, GPU_OPERATOR_DEFAULT, NVIDIA_DRIVER_DEFAULT

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
    feature_gates: dict[FeatureGateName, bool] = {}


class GpuOperator(SpecModel):
    """The NVIDIA GPU Operator release and the team's own Helm values (never dropped).

    A managed release is an in-place upgrade of the running one: the same release name, namespace
    and Helm storage, the running values (`gpuplatform import operator-values`) with the platform's
    merged on top, and `driver.version` set from `driverVersion`.
    """

    version: ReleaseNumber = GPU_OPERATOR_DEFAULT
    namespace: DnsLabel = "gpu-operator"
    release_name: DnsLabel = "gpu-operator"
    """Name of the running Helm release (`helm list -n <namespace>`); Flux and Argo CD reuse it."""
    driver_version: ReleaseNumber = NVIDIA_DRIVER_DEFAULT
    """NVIDIA data-center driver the operator installs (580+ for DRA); rendered as `driver.version`."""
    mode: Literal["clusterPolicy", "gpuCluster"] = "clusterPolicy"
    managed: bool = False
    """Render the operator's Helm release (Flux HelmRelease, Argo CD Application); import the
    running release's values first, or GitOps resets the operator to the chart's defaults."""
    chart_repository: Literal[""] | Token = ""
    """A mirror of the gpu-operator chart; empty: where the chart version is published."""
    values: JsonObject = {}

    @model_validator(mode="after")
    def _repository_needs_release(self) -> GpuOperator:
        if self.chart_repository and not self.managed:
            raise ValueError(
                "chartRepository only applies to a release this tool renders: set managed: true "
                "(after `gpuplatform import operator-values`, so the running values are kept)"
            )
        return self


class DraDriver(SpecModel):
    """The NVIDIA DRA driver Helm release (chart `dra-driver-nvidia-gpu`, `nvidia-dra-driver-gpu` before 0.4)."""

    chart_version: ReleaseNumber = DRA_DRIVER_DEFAULT
    chart_repository: Literal[""] | Token = ""
    """Helm (https://) or OCI (oci://) mirror of the chart; empty: where the chart version is published."""
    namespace: DnsLabel = "nvidia-dra-driver-gpu"
    release_name: DnsLabel | None = None
    """Helm release name; default: the chart's name."""
    nvidia_driver_root: CleanString = "/run/nvidia/driver"
    compute_domains: bool = False
    """Run the ComputeDomain controller and kubelet-plugin container (`resources.computeDomains.enabled`):
    off until multi-node NVLink (IMEX) workloads need it; a crash of that container would otherwise
    take the kubelet plugin pod, and with it GPU claims on the node, out of service."""
    kubelet_plugin_max_unavailable: int | str = 1
    """`kubeletPlugin.updateStrategy.rollingUpdate.maxUnavailable`: how many nodes' kubelet plugins
    restart at once on a driver upgrade (the chart's 100% pauses claim preparation on every node)."""
    feature_gates: dict[FeatureGateName, bool] = {}
    values: JsonObject = {}

    @field_validator("kubelet_plugin_max_unavailable")
    @classmethod
    def _max_unavailable(cls, value: int | str) -> int | str:
        if isinstance(value, int) and 1 <= value <= INT32_MAX:
            return value
        if isinstance(value, str) and re.fullmatch(r"([1-9][0-9]?|100)%", value):
            return value
        raise ValueError(f"{value!r} is not a node count (1 or more) or a percentage (1%..100%)")


class Delivery(SpecModel):
    """How Argo CD and/or Flux find and apply the rendered tree."""

    engines: tuple[Literal["argocd", "flux"], ...] = ("argocd",)
    repo_url: Token
    revision: Token = "main"
    path: str = Field(default="dist", max_length=255, pattern=r"^[\w-][\w.-]*(/[\w-][\w.-]*)*$")
    """Folder of the rendered tree inside the repository: relative, segments never start with `.`."""
    argocd_namespace: DnsLabel = "argocd"
    argocd_service_account: DnsLabel = "argocd-application-controller"
    """ServiceAccount (in `argocdNamespace`) the platform's own Application syncs as once Argo CD
    impersonation is on for the tenants' projects (the platform AppProject's `destinationServiceAccounts`)."""
    flux_namespace: DnsLabel = "flux-system"
    gates_namespace: DnsLabel = "gpuplatform-gates"
    kubectl_image: ImageReference = "docker.io/alpine/k8s:1.36.1"
    """Image of the gate Jobs; it must provide `sh`, `kubectl` and `jq` (alpine/k8s does). Pin it:
    `image@sha256:…` here or `kubectlImageDigest` (GP230 warns while it is a tag only)."""
    kubectl_image_digest: Digest | None = None
    """Digest of `kubectlImage` (`sha256:…`): the gate Jobs run `kubectlImage@kubectlImageDigest`."""
    gate_resources: ContainerResources = ContainerResources(
        requests=ResourceAmounts(cpu="50m", memory="64Mi"),
        limits=ResourceAmounts(cpu="500m", memory="512Mi"),
    )
    """Requests and limits of every gate container (they hold the cluster's pods and nodes as JSON)."""
    cluster_server: Token = "https://kubernetes.default.svc"
    """API server Argo CD deploys to: the in-cluster address when Argo CD runs in this cluster; any
    other address makes it a remote cluster, whose Applications live on Argo CD's own cluster."""
    timeout_minutes: Minutes = 15
    """How long Flux waits for a layer, and one attempt of a gate for its invariant (a gate whose
    invariant does not hold yet starts a new attempt; it never gives up on its own)."""


class Monitoring(SpecModel):
    """PrometheusRule alerts for states that must never last."""

    enabled: bool = False
    namespace: DnsLabel = "monitoring"
    claim_pending_minutes: Minutes = 15


class Acceptances(SpecModel):
    """Risks the team accepts explicitly; everything here is refused unless named."""

    alpha_features: tuple[FeatureGateName, ...] = ()
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
