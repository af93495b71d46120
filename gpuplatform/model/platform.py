"""The Platform: everything a GPU platform team declares about one cluster."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from gpuplatform.kueue.model import Kueue
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
    label_key_problem,
)
from gpuplatform.model.classes import BridgeClass, ServiceTier
from gpuplatform.model.containers import ContainerResources, Digest, ImageReference, ResourceAmounts
from gpuplatform.model.fields import Items, Ref, default
from gpuplatform.model.nodes import NodePool
from gpuplatform.model.tenants import Tenant, TenantPolicy
from gpuplatform.model.verbs import PlatformVerbs
from gpuplatform.model.waves import Wave
from gpuplatform.model.workloads import NimService, ValidationWorkload, Workload
from gpuplatform.versions import (
    DRA_DRIVER_DEFAULT,
    FLUX_DEFAULT,
    FLUX_MINIMUM,
    GPU_OPERATOR_DEFAULT,
    NVIDIA_DRIVER_DEFAULT,
    parse_release,
)

__all__ = [
    "IN_CLUSTER",
    "SYNC_FAILED_SUBSCRIPTION",
    "Acceptances",
    "Delivery",
    "DraDriver",
    "GpuOperator",
    "Kubernetes",
    "Monitoring",
    "Platform",
]


IN_CLUSTER = "https://kubernetes.default.svc"
"""The API server address of the cluster a pod runs in (Argo CD's in-cluster destination)."""
SYNC_FAILED_SUBSCRIPTION = "notifications.argoproj.io/subscribe.on-sync-failed."
"""Argo CD notifications: the annotation prefix that subscribes a service to the `on-sync-failed` trigger."""


def _notification_service(value: str) -> str:
    problem = label_key_problem(SYNC_FAILED_SUBSCRIPTION + value)
    if problem is not None:
        raise ValueError(f"{SYNC_FAILED_SUBSCRIPTION}{value} is not an annotation key: {problem}")
    return value


NotificationService = Annotated[str, AfterValidator(_notification_service)]


class Kubernetes(SpecModel):
    """Target Kubernetes release and the feature gates the cluster enables beyond the defaults."""

    version: ReleaseNumber = "1.36.1"
    """Kubernetes release of the cluster (`1.36.1`): drives the API versions and the version rules."""
    feature_gates: dict[FeatureGateName, bool] = {}
    """Feature gates the cluster sets beyond its release's defaults (`DRAExtendedResource: true`)."""


class GpuOperator(SpecModel):
    """The NVIDIA GPU Operator release and the team's own Helm values (never dropped).

    A managed release is an in-place upgrade of the running one: the same release name, namespace
    and Helm storage, the running values (`gpuplatform import operator-values`) with the platform's
    merged on top, and `driver.version` set from `driverVersion`.
    """

    version: ReleaseNumber = GPU_OPERATOR_DEFAULT
    """GPU Operator release (the `gpu-operator` chart version)."""
    namespace: DnsLabel = "gpu-operator"
    """Namespace of the GPU Operator release."""
    release_name: DnsLabel = "gpu-operator"
    """Name of the running Helm release (`helm list -n <namespace>`); Flux and Argo CD reuse it."""
    driver_version: ReleaseNumber = NVIDIA_DRIVER_DEFAULT
    """NVIDIA data-center driver the operator installs (580+ for DRA); rendered as `driver.version`."""
    mode: Literal["clusterPolicy", "gpuCluster"] = "clusterPolicy"
    """How the operator is configured: a ClusterPolicy, or GPUCluster (GPU Operator 26.7+)."""
    managed: bool = False
    """Render the operator's Helm release (Flux HelmRelease, Argo CD Application); import the
    running release's values first, or GitOps resets the operator to the chart's defaults."""
    chart_repository: Literal[""] | Token = ""
    """A mirror of the gpu-operator chart; empty: where the chart version is published."""
    values: JsonObject = {}
    """The team's own Helm values; the migration's values are merged on top, nothing set here is dropped."""

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
    """Version of the `dra-driver-nvidia-gpu` chart (25.x calendar releases, then 0.x)."""
    chart_repository: Literal[""] | Token = ""
    """Helm (https://) or OCI (oci://) mirror of the chart; empty: where the chart version is published."""
    namespace: DnsLabel = "nvidia-dra-driver-gpu"
    """Namespace of the DRA driver release (its kubelet plugin runs there)."""
    release_name: DnsLabel | None = None
    """Helm release name; default: the chart's name."""
    nvidia_driver_root: CleanString = "/run/nvidia/driver"
    """`nvidiaDriverRoot` of the chart: where the NVIDIA driver is on the host (the operator's: `/run/nvidia/driver`)."""
    compute_domains: bool = False
    """Run the ComputeDomain controller and kubelet-plugin container (`resources.computeDomains.enabled`):
    off until multi-node NVLink (IMEX) workloads need it; a crash of that container would otherwise
    take the kubelet plugin pod, and with it GPU claims on the node, out of service."""
    kubelet_plugin_max_unavailable: int | str = 1
    """`kubeletPlugin.updateStrategy.rollingUpdate.maxUnavailable`: how many nodes' kubelet plugins
    restart at once on a driver upgrade (the chart's 100% pauses claim preparation on every node)."""
    feature_gates: dict[FeatureGateName, bool] = {}
    """The driver's `featureGates` (alpha ones are refused in production unless accepted)."""
    values: JsonObject = {}
    """The team's own Helm values for the driver; the migration's are merged on top."""

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

    engines: Items[Literal["argocd", "flux"]] = default(("argocd",))
    """GitOps engines to render entry points for (`argocd`, `flux` or both)."""
    repo_url: Token
    """Git repository the engines read the rendered tree from."""
    revision: Token = "main"
    """Branch (Flux `ref.branch`) or revision (Argo CD `targetRevision`) to follow. Flux follows
    another branch than bootstrap's (`main`) only through `fluxGitRepository`; without it, refused."""
    path: str = Field(
        default="dist",
        max_length=255,
        pattern=r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*$",
    )
    """Folder of the rendered tree inside the repository: relative, ASCII letters, digits, `_`, `-` and
    `.` only (no look-alike of another character), segments never start with `.`."""
    argocd_namespace: DnsLabel = "argocd"
    """Namespace of Argo CD (its AppProject and Applications)."""
    argocd_service_account: DnsLabel = "argocd-application-controller"
    """Argo CD's application controller (in `argocdNamespace`): on its own cluster, the identity
    allowed to impersonate the platform's sync ServiceAccounts (`delivery/argocd-sync/`)."""
    argocd_self_heal: bool = True
    """Argo CD `syncPolicy.automated.selfHeal` of the platform's Applications: an object that drifts
    from Git is synced back. Off: the drift stays until the next sync (`simulate` replays it so)."""
    argocd_prune: bool = True
    """Argo CD `syncPolicy.automated.prune`: what a new wave no longer renders is deleted. Off: it stays,
    OutOfSync, and the sync still succeeds (`simulate` replays it so). Nodes and tenant Namespaces are
    never pruned either way."""
    flux_namespace: DnsLabel = "flux-system"
    """Namespace of Flux (its GitRepository and Kustomizations)."""
    flux_prune: bool = True
    """`spec.prune` of the wave's layer Kustomizations: what a new wave no longer renders is deleted.
    Off: it stays (`simulate` replays it so). The entry that holds the chain (`clusters/<name>/`)
    always prunes: a stale layer Kustomization would go on applying an old wave's folder."""
    flux_version: ReleaseNumber = str(FLUX_DEFAULT)
    """Flux release of the clusters (`flux version`): picks OCIRepository + `chartRef` from 2.6 and the
    HelmRelease `RetryOnFailure` upgrade strategy from 2.7 (`versions.py`); 2.3 is the minimum."""
    flux_git_repository: DnsSubdomain | None = None
    """Name of a GitRepository of this platform (`repoUrl`, `ref.branch: revision`), which
    `gpuplatform flux-entry` prints beside the cluster's entry; absent: the Kustomizations read the one
    `flux bootstrap` created, named as `fluxNamespace`."""
    gates_namespace: DnsLabel = "gpuplatform-gates"
    """Namespace of the gate Jobs and their read-only identity."""
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
    cluster_server: Token = IN_CLUSTER
    """API server Argo CD deploys to: the in-cluster address when Argo CD runs in this cluster; any
    other address makes it a remote cluster, whose Applications live on Argo CD's own cluster."""
    timeout_minutes: Minutes = 15
    """How long Flux waits for a layer, and one attempt of a gate for its invariant (a gate whose
    invariant does not hold yet starts a new attempt; it never gives up on its own)."""
    sync_failed_notifications: dict[NotificationService, Token] = {}
    """Argo CD notifications when a sync of the platform fails, off by default: notification service
    (as configured in `argocd-notifications-cm`, e.g. `slack`) -> recipients (`;`-separated, e.g.
    `gpu-oncall`). Each becomes the AppProject annotation
    `notifications.argoproj.io/subscribe.on-sync-failed.<service>: <recipients>`, which subscribes
    every Application of the project (the catalog trigger `on-sync-failed` must be installed)."""

    @field_validator("flux_version")
    @classmethod
    def _flux_supported(cls, value: str) -> str:
        if parse_release(value) < FLUX_MINIMUM:
            raise ValueError(f"Flux {value} cannot apply helm.toolkit.fluxcd.io/v2: {FLUX_MINIMUM} or newer")
        return value

    @property
    def remote(self) -> bool:
        """Whether Argo CD deploys the platform to another cluster than its own."""
        return self.cluster_server != IN_CLUSTER


class Monitoring(SpecModel):
    """PrometheusRule alerts for states that must never last."""

    enabled: bool = False
    """Render a PrometheusRule for states that must never last."""
    namespace: DnsLabel = "monitoring"
    """Namespace of the PrometheusRule."""
    claim_pending_minutes: Minutes = 15
    """Alert when a GPU pod of a tenant stays pending this long."""


class Acceptances(SpecModel):
    """Risks the team accepts explicitly; everything here is refused unless named."""

    alpha_features: Items[FeatureGateName] = default(())
    """Driver alpha gates allowed in production or first-cutover waves (e.g. `DynamicMIG`)."""
    nim_preview: bool = False
    """Accept NIM DRA (Technology Preview) in production tenants and waves."""


class Platform(PlatformVerbs, SpecModel):
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
    node_pools: Items[NodePool] = default(())
    """GPU node pools; each moves from the device plugin to DRA in its `migratesIn` wave."""
    tiers: Items[ServiceTier] = default(())
    """Service tiers, each a DeviceClass `<name>.<domain>` tenants claim from."""
    bridges: Items[BridgeClass] = default(())
    """Extended-resource bridge classes that serve legacy `nvidia.com/gpu` requests from DRA."""
    tenants: Items[Tenant] = default(())
    """Team namespaces: their tiers, claim templates, quota and admission policy."""
    tenant_policy: TenantPolicy = TenantPolicy()
    """Cluster-wide admission around the tenants: who may grant admin access, where claims may exist."""
    nim_services: Items[NimService] = default(())
    """NIM services moved to DRA blue/green (a new NIMService with `draResources`)."""
    workloads: Items[Workload] = default(())
    """Legacy workloads converted to claims in their `movesIn` wave (hand-offs for their owners)."""
    validation: ValidationWorkload | None = None
    """The pilot Job that proves a claim reaches a container, from the first native-claim-pilot wave."""
    waves: Items[Wave] = Field(min_length=1)
    """The waves in order: baseline first, final-cutover last, stages in canonical order."""
    active_wave: Ref[Wave]
    """The wave the entry points apply; advancing or rolling back is changing this."""
    delivery: Delivery
    """The Git repository and path of the rendered tree, and the engines that apply it."""
    monitoring: Monitoring = Monitoring()
    """Alerts for states that must never last."""
    accept: Acceptances = Acceptances()
    """Risks accepted explicitly (alpha driver features, NIM preview in production)."""
    kueue: Kueue | None = None
    """Kueue's GPU ClusterQueues, whose quotas move with the pools (docs/kueue.md); absent: no Kueue."""

    @model_validator(mode="after")
    def _consistent(self) -> Platform:
        """Every name used is defined, nothing renders twice, the platform fits one cluster
        (`model/checks.py`): a ValidationError located at the field, as for any other field.
        Imported here: `import gpuplatform` need not load the checks (~25 ms)."""
        from gpuplatform.model.checks import raise_platform_errors

        raise_platform_errors(self)
        return self

    @property
    def mode_label_key(self) -> str:
        """The node mode label key (`gpu-scheduling.<domain>/mode` unless set)."""
        return self.mode_label or f"gpu-scheduling.{self.domain}/mode"

    def class_name(self, tier_or_bridge: str) -> str:
        """DeviceClass name of a tier or platform bridge: `<name>.<domain>`."""
        return f"{tier_or_bridge}.{self.domain}"
