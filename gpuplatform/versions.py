"""Version facts the planner and the policy rules depend on, each with its source.

Every fact here is data, read by `plan/`, `render/` and `policy/`; nothing else in the package
hard-codes a release number. Sources are the documents summarised in shared/reference/dra-api.md
(section numbers below) and the upstream threads cited per entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import total_ordering
from typing import Literal

from gpuplatform.labels import GPU_RESOURCE

__all__ = [
    "ARGOCD_DEFAULT",
    "ARGOCD_ENABLE_HELM",
    "ARGOCD_IMPERSONATION_FLAG",
    "ARGOCD_IMPERSONATION_SINCE",
    "ARGOCD_MINIMUM",
    "CHART_BRIDGE_SINCE",
    "CHART_DEVICE_CLASSES",
    "DCGM_EXPORTER_DRA_ENV",
    "DCGM_EXPORTER_DRA_RULES",
    "DCGM_EXPORTER_SERVICE_ACCOUNT",
    "DRA_DRIVER_BASELINE",
    "DRA_DRIVER_DEFAULT",
    "DRA_DRIVER_FEATURE_GATES",
    "DRIVER_MANAGER_DRAINS_CLAIMS_SINCE",
    "DRIVER_MANAGER_EVICTION_LABEL_SINCE",
    "FLUX_BOOTSTRAP_BRANCH",
    "FLUX_DEFAULT",
    "FLUX_HELM_CONTROLLER_MINIMUM",
    "FLUX_HELM_CONTROLLER_RETRY_ON_FAILURE",
    "FLUX_MINIMUM",
    "FLUX_OCI_CHART_REF_SINCE",
    "FLUX_RETRY_ON_FAILURE_SINCE",
    "FLUX_SOURCE_CONTROLLER_OCI_V1",
    "GPU_OPERATOR_BASELINE",
    "GPU_OPERATOR_DEFAULT",
    "GPU_OPERATOR_DRIVER_MANAGER",
    "GPU_OPERATOR_EXPORTER_DRA_SINCE",
    "GPU_OPERATOR_GPUCLUSTER_SINCE",
    "KUBELET_DRA_EXTENDED_ADMISSION_FIX",
    "KUBERNETES_MINIMUM",
    "KUBERNETES_PREFERRED",
    "KUBE_FEATURE_GATES",
    "KUEUE_API_VERSION",
    "KUEUE_DEFAULT",
    "KUEUE_DRA_GATE_DEFAULT_ON_SINCE",
    "KUEUE_DRA_SINCE",
    "KUEUE_V1BETA2_SINCE",
    "NIM_OPERATOR_MODELLED",
    "NVIDIA_DRIVER_DEFAULT",
    "NVIDIA_DRIVER_MINIMUM",
    "SCHEDULER_EXPLICIT_ZERO_FIX",
    "SDK_VERSION",
    "VALIDATOR_BUG_FIXED_IN",
    "DriverGate",
    "GateStage",
    "KubeGate",
    "Release",
    "cluster_gates",
    "dra_driver_at_least",
    "driver_manager_of",
    "kube_gate_default",
    "kube_gate_enabled",
    "kube_gates",
    "kueue_dra_gate",
    "parse_release",
]

#: This SDK's own release (pyproject.toml `version`), recorded in every lock file.
SDK_VERSION = "0.1.0"

GateStage = Literal["alpha", "beta", "ga"]


@total_ordering
@dataclass(frozen=True)
class Release:
    """A dotted release number compared numerically (`1.34.2`, `26.3.1`, `0.4.1`, `580.126.9`)."""

    parts: tuple[int, ...]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Release):
            return NotImplemented
        return self.parts < other.parts

    @property
    def minor(self) -> str:
        """`MAJOR.MINOR`, the key of the per-release tables."""
        return ".".join(str(p) for p in self.parts[:2])

    def __str__(self) -> str:
        return ".".join(str(p) for p in self.parts)


def parse_release(text: str) -> Release:
    """Parse `v1.36.1`, `1.36`, `26.3.1` or `580.126.09`; pre-release suffixes are ignored."""
    core = text.strip().lstrip("v").split("-", 1)[0].split("+", 1)[0]
    try:
        parts = tuple(int(p) for p in core.split("."))
    except ValueError:
        raise ValueError(f"{text!r} is not a release number like 1.36.1") from None
    if not parts or len(parts) > 4:
        raise ValueError(f"{text!r} is not a release number like 1.36.1")
    return Release(parts + (0,) * (3 - len(parts)) if len(parts) < 3 else parts)


# --- Kubernetes -------------------------------------------------------------------------------

#: Oldest supported Kubernetes: resource.k8s.io/v1 is served from 1.34 (dra-api.md §1) and the
#: GPU Operator 26.x DRA prerequisites say 1.34.2 (dra-api.md §10).
KUBERNETES_MINIMUM = parse_release("1.34.2")
#: Preferred target: DRAExtendedResource is beta and on by default from 1.36 (dra-api.md §2.1).
KUBERNETES_PREFERRED = parse_release("1.36.0")


@dataclass(frozen=True)
class KubeGate:
    """A Kubernetes feature gate's (stage, default) per minor release."""

    name: str
    releases: dict[str, tuple[GateStage, bool]]
    note: str = ""


def _gate(name: str, note: str = "", **by_minor: tuple[GateStage, bool]) -> KubeGate:
    return KubeGate(name, {k.removeprefix("v").replace("_", "."): v for k, v in by_minor.items()}, note)


#: dra-api.md §8: kubernetes/kubernetes versioned feature table, cross-checked with types.go markers.
KUBE_FEATURE_GATES: dict[str, KubeGate] = {
    g.name: g
    for g in (
        _gate("DynamicResourceAllocation", v1_34=("ga", True), v1_35=("ga", True), v1_36=("ga", True)),
        _gate("DRAPrioritizedList", v1_34=("beta", True), v1_35=("beta", True), v1_36=("ga", True)),
        _gate("DRAAdminAccess", v1_34=("beta", True), v1_35=("beta", True), v1_36=("ga", True)),
        _gate(
            "DRAExtendedResource",
            "extendedResourceName is dropped silently while off",
            v1_34=("alpha", False),
            v1_35=("alpha", False),
            v1_36=("beta", True),
        ),
        _gate("DRAConsumableCapacity", v1_34=("alpha", False), v1_35=("alpha", False), v1_36=("beta", True)),
        _gate(
            "DRAPartitionableDevices", v1_34=("alpha", False), v1_35=("alpha", False), v1_36=("beta", True)
        ),
        _gate("DRADeviceTaints", v1_34=("alpha", False), v1_35=("alpha", False), v1_36=("beta", True)),
        _gate("DRADeviceTaintRules", v1_35=("alpha", False), v1_36=("beta", False)),
        _gate(
            "DRADeviceBindingConditions", v1_34=("alpha", False), v1_35=("alpha", False), v1_36=("beta", True)
        ),
        _gate(
            "DRAResourceClaimDeviceStatus", v1_34=("beta", True), v1_35=("beta", True), v1_36=("beta", True)
        ),
        _gate("DRASchedulerFilterTimeout", v1_34=("beta", True), v1_35=("beta", True), v1_36=("beta", True)),
        _gate("DRAListTypeAttributes", v1_36=("alpha", False)),
        _gate("DRANodeAllocatableResources", v1_36=("alpha", False)),
        _gate("DRAWorkloadResourceClaims", v1_36=("alpha", False)),
    )
}


def kube_gate_default(name: str, minor: str) -> bool | None:
    """Default of gate `name` on Kubernetes `minor` (`None`: the release has no such gate)."""
    gate = KUBE_FEATURE_GATES.get(name)
    if gate is None or minor not in gate.releases:
        return None
    return gate.releases[minor][1]


def kube_gates(minor: str) -> dict[str, bool]:
    """Every gate Kubernetes `minor` has, with its default: what the CEL environment, the scheduler
    model and the rules start from."""
    return {name: g.releases[minor][1] for name, g in KUBE_FEATURE_GATES.items() if minor in g.releases}


def cluster_gates(declared: Mapping[str, bool], minor: str) -> dict[str, bool]:
    """The gates of a cluster of Kubernetes `minor` that sets `declared`: its release's defaults,
    overridden where declared (a declared gate the release lacks is GP114's finding, not a gate)."""
    gates = kube_gates(minor)
    return gates | {name: bool(on) for name, on in declared.items() if name in gates}


def kube_gate_enabled(declared: Mapping[str, bool], name: str, minor: str) -> bool:
    """Whether gate `name` is on for a cluster of Kubernetes `minor` that sets `declared`
    (`spec.kubernetes.featureGates`) beyond its release's defaults."""
    return bool(declared.get(name, kube_gate_default(name, minor)))


#: kubernetes/kubernetes#133784 (merged 2025-09, first in 1.35.0): with DRAExtendedResource the
#: scheduler and kubelet treat an extended resource whose allocatable is an explicit 0 (what the
#: kubelet leaves after the device plugin goes) as inactive. Older schedulers keep treating such a
#: node as a device-plugin node, so bridged `nvidia.com/gpu` requests never land on DRA nodes.
#: Backports to 1.34.x were not verified.
SCHEDULER_EXPLICIT_ZERO_FIX = parse_release("1.35.0")
#: kubernetes/kubernetes#135725 (merged 2025-12, first in 1.36.0): kubelet admission of pods whose
#: extended resources are DRA-backed and absent from allocatable.
KUBELET_DRA_EXTENDED_ADMISSION_FIX = parse_release("1.36.0")

# --- NVIDIA GPU Operator ------------------------------------------------------------------------

#: The DRA-next-to-operator procedure (dra-api.md §10) is documented for GPU Operator 26.3.
GPU_OPERATOR_BASELINE = parse_release("26.3.0")
#: GPUCluster (DRA-managed operator mode) first released in v26.7.0; mixed use with ClusterPolicy
#: is refused (dra-api.md §10).
GPU_OPERATOR_GPUCLUSTER_SINCE = parse_release("26.7.0")
#: NVIDIA/gpu-operator#2550: nvidia-operator-validator crash-loops in plugin-validation on nodes
#: labelled `nvidia.com/gpu.deploy.device-plugin=false`; the fix (PR #2686) was unreleased at the
#: newest release we know (26.7.0). The crash loop is accepted by default (the validator has written
#: the marker the operands wait for by then); turning the validator off costs that marker (GP245).
VALIDATOR_BUG_FIXED_IN: Release | None = None
#: GPU Operator 26.x DRA prerequisites: NVIDIA driver 580 or newer (dra-api.md §10).
NVIDIA_DRIVER_MINIMUM = parse_release("580.0.0")
#: The release the walkthrough pins: the 26.3 line documents the DRA-next-to-operator procedure, and
#: 26.3.1 is the 26.3 release whose chart the tests render (shared/reference/charts/gpu-operator-v26.3.1).
GPU_OPERATOR_DEFAULT = "26.3.1"

#: DCGM exporter attributes a GPU to a pod through the kubelet pod-resources socket, which names
#: device-plugin GPUs by UUID but DRA devices by (pool, device); only in DRA mode does it start a
#: ResourceSlice informer that maps them back to a UUID (NVIDIA/dcgm-exporter 4.5.1-4.8.0, the
#: image GPU Operator 26.3.1 pins: `pkg/cmd/app.go` flag `kubernetes-enable-dra`, env
#: KUBERNETES_ENABLE_DRA, default false; `internal/pkg/transformation/kubernetes.go` and `dra.go`:
#: `Resource().V1beta1().ResourceSlices()` informer). GPU Operator 26.3.x neither sets it nor grants
#: the read (v26.3.1 `assets/state-dcgm-exporter/0200_role.yaml`: a namespaced Role on configmaps and
#: pods; `controllers/object_controls.go` passes `dcgmExporter.env` to the container); 26.7.0 sets
#: both itself (NVIDIA/gpu-operator#2697, #2706).
DCGM_EXPORTER_DRA_ENV = "KUBERNETES_ENABLE_DRA"
#: The first GPU Operator release that sets DCGM_EXPORTER_DRA_ENV and the ResourceSlice read itself.
GPU_OPERATOR_EXPORTER_DRA_SINCE = parse_release("26.7.0")
#: The exporter's ServiceAccount in the operator's namespace (v26.3.1
#: `assets/state-dcgm-exporter/0100_service_account.yaml`).
DCGM_EXPORTER_SERVICE_ACCOUNT = "nvidia-dcgm-exporter"
#: The read the DRA mode needs, and nothing more: ResourceSlices only. Claims are not read — claim
#: attribution comes from the pod-resources socket (NVIDIA/gpu-operator#2697; dcgm-exporter
#: `deployment/templates/clusterrole.yaml` at 4.5.1-4.8.0 grants pods and resourceslices, and the
#: operator's Role already grants pods).
DCGM_EXPORTER_DRA_RULES: tuple[dict[str, tuple[str, ...]], ...] = (
    {"apiGroups": ("resource.k8s.io",), "resources": ("resourceslices",), "verbs": ("get", "list", "watch")},
)
#: The NVIDIA driver the walkthrough runs. Rendered as `driver.version`: the chart's own default
#: (580.126.20 in v26.3.1) would otherwise replace the running driver on every GPU node.
NVIDIA_DRIVER_DEFAULT = "580.126.09"
#: k8s-driver-manager pauses the node label named by NODE_LABEL_FOR_GPU_POD_EVICTION (`true` ->
#: `paused-for-driver-upgrade`) with the operator's operands while it reloads the driver, and sets it
#: back afterwards; a DaemonSet selecting that label (the DRA kubelet plugin) is evicted first.
#: NVIDIA/k8s-driver-manager commit 6db27df8 (2023-09-28), first tag v0.6.3 (`driver-manager`); kept by
#: the Go rewrite (v0.10.0 `cmd/driver-manager/main.go`: `nodeLabelForGPUPodEviction`, `maybeSetPaused`).
#: NVIDIA/gpu-operator itself never names the variable: it passes `driver.manager.env` through.
DRIVER_MANAGER_EVICTION_LABEL_SINCE = parse_release("0.6.3")
#: From this k8s-driver-manager its GPU-pod drain (`nvDrainNode` -> `DeleteOrEvictPods`, run when
#: ENABLE_GPU_POD_EVICTION is set and the node is not under the operator's auto-upgrade policy) also
#: takes pods holding an allocated `gpu.nvidia.com` ResourceClaim (NVIDIA/k8s-driver-manager v0.12.0
#: `internal/kubernetes/client.go` `podUsesGPU`, `podHasGPUResourceClaim`); v0.10.0 and v0.11.0
#: (`gpuPodSpecFilter`) take only pods requesting `nvidia.com/gpu*` or `nvidia.com/mig-*`. Both pause
#: the NODE_LABEL_FOR_GPU_POD_EVICTION label before that drain (`evictAllGPUOperatorComponents`).
DRIVER_MANAGER_DRAINS_CLAIMS_SINCE = parse_release("0.12.0")
#: The k8s-driver-manager each GPU Operator release ships (NVIDIA/gpu-operator
#: `deployments/gpu-operator/values.yaml` `driver.manager.version` at the tag): every 26.3.x honours
#: the eviction env; v0.12.0 (26.7.0) also drains the operator-managed DRA driver by its own label.
GPU_OPERATOR_DRIVER_MANAGER: dict[str, Release] = {
    "25.10.0": parse_release("0.9.0"),
    "25.10.1": parse_release("0.9.1"),
    "26.3.0": parse_release("0.10.0"),
    "26.3.1": parse_release("0.10.0"),
    "26.3.2": parse_release("0.11.0"),
    "26.3.3": parse_release("0.11.0"),
    "26.7.0": parse_release("0.12.0"),
}


def driver_manager_of(operator: Release) -> Release:
    """The driver manager `operator` ships: that of the newest listed release at or below it (the
    oldest listed one's for an older operator)."""
    listed = sorted((parse_release(v), m) for v, m in GPU_OPERATOR_DRIVER_MANAGER.items())
    return next((m for v, m in reversed(listed) if v <= operator), listed[0][1])


# --- NVIDIA DRA driver --------------------------------------------------------------------------

#: The procedure the project follows is written for DRA driver 0.4.x (dra-api.md §10, §9.1).
DRA_DRIVER_BASELINE = parse_release("0.4.0")
#: The DRA driver release the walkthrough installs (chart `dra-driver-nvidia-gpu`, published at
#: oci://registry.k8s.io/dra-driver-nvidia/charts: kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1
#: docs/install.md and docs/upgrade.md).
DRA_DRIVER_DEFAULT = "0.4.1"
#: From chart 25.12.0 the chart's own `gpu.nvidia.com` class declares
#: `extendedResourceName: nvidia.com/gpu` when rendered as resource.k8s.io/v1; no value turns it off
#: (dra-api.md §9.2, samples/dra-driver-helm).
CHART_BRIDGE_SINCE = parse_release("25.12.0")


def dra_driver_at_least(actual: Release, minimum: Release) -> bool:
    """Compare DRA driver releases: calendar releases (25.x) all precede the SemVer ones (0.x)."""

    def key(r: Release) -> tuple[int, tuple[int, ...]]:
        return (0 if r.parts[0] >= 25 else 1, r.parts)

    return key(actual) >= key(minimum)


#: DeviceClasses the DRA driver chart installs (dra-api.md §9.2) -> extendedResourceName or "".
CHART_DEVICE_CLASSES: dict[str, str] = {
    "gpu.nvidia.com": GPU_RESOURCE,
    "mig.nvidia.com": "",
    "vfio.gpu.nvidia.com": "",
    "compute-domain-daemon.nvidia.com": "",
    "compute-domain-default-channel.nvidia.com": "",
}


@dataclass(frozen=True)
class DriverGate:
    """A DRA driver feature gate: stage, default, first release and whether it is a sharing mode."""

    name: str
    stage: GateStage
    default: bool
    since: Release | None
    needs_kube_gate: str = ""


#: dra-api.md §9.5 (kubernetes-sigs/dra-driver-nvidia-gpu pkg/featuregates/featuregates.go @95932046).
#: `since=None`: only on main (0.5.0-dev), in no release.
DRA_DRIVER_FEATURE_GATES: dict[str, DriverGate] = {
    g.name: g
    for g in (
        DriverGate("TimeSlicingSettings", "alpha", False, parse_release("25.8.0")),
        DriverGate("MPSSupport", "alpha", False, parse_release("25.8.0")),
        DriverGate("IMEXDaemonsWithDNSNames", "beta", True, parse_release("25.8.0")),
        DriverGate("PassthroughSupport", "alpha", False, parse_release("25.12.0")),
        DriverGate("DynamicMIG", "alpha", False, parse_release("25.12.0"), "DRAPartitionableDevices"),
        DriverGate("NVMLDeviceHealthCheck", "alpha", False, parse_release("25.12.0")),
        DriverGate("ComputeDomainCliques", "beta", True, parse_release("25.12.0")),
        DriverGate("CrashOnNVLinkFabricErrors", "beta", True, parse_release("25.12.0")),
        DriverGate("DeviceMetadata", "alpha", False, parse_release("0.4.0")),
        DriverGate("DRAListTypeAttributes", "alpha", False, None, "DRAListTypeAttributes"),
        DriverGate("FabricManagerPartitioning", "alpha", False, None),
        DriverGate("HostManagedIMEXDaemon", "alpha", False, None),
        DriverGate("ConsumableShares", "alpha", False, None, "DRAConsumableCapacity"),
    )
}


# --- GitOps engines and the NIM Operator ---------------------------------------------------------

#: argoproj/argo-cd v2.13.0 introduced AppProject `spec.destinationServiceAccounts` and sync under
#: the matching service account (`controller/sync.go: deriveServiceAccountToImpersonate`); the
#: feature is off unless `argocd-cm` sets ARGOCD_IMPERSONATION_FLAG to "true"
#: (`util/settings/settings.go`, default false; Beta since v3.5.0 per
#: `docs/operator-manual/app-sync-using-impersonation.md`). With it on, a project with no matching
#: entry fails the sync (v2.13.0 returns an error; v3.5.1 `util/settings/impersonation.go` +
#: `controller/sync.go` fail unless `application.sync.impersonation.enforced` is "false").
ARGOCD_IMPERSONATION_SINCE = parse_release("2.13.0")
ARGOCD_IMPERSONATION_FLAG = "application.sync.impersonation.enabled"
#: The NIM Operator release whose ResourceClaimTemplate rendering `render/nim_cel.py` reproduces
#: (NVIDIA/k8s-nim-operator v3.1.2 `manifests/resourceclaimtemplate.yaml`,
#: `internal/shared/resourceclaims.go: GetDRADeviceCELExpressions`, `internal/k8sutil/cel/cel.go`;
#: unchanged at main f63f74d7, the commit dra-api.md section 11 was written from).
NIM_OPERATOR_MODELLED = parse_release("3.1.2")

#: AppProject `clusterResourceWhitelist[].name` (Nodes and CRDs allowed by name): argoproj/argo-cd
#: e77acec858 (#24674), first in v3.3.0 (pkg/apis/application/v1alpha1/types.go,
#: ClusterResourceRestrictionItem; app_project_types.go IsGroupKindNamePermitted). An older Argo CD's
#: CRD has only `group` and `kind` there (v3.2.6 manifests/crds/appproject-crd.yaml), so the API
#: server refuses the AppProject under strict field validation (kubectl's default) and, under
#: `--validate=warn`, drops the names and allows every object of the kind.
ARGOCD_MINIMUM = parse_release("3.3.0")
#: The newest Argo CD release whose source the project reads and cites (argo-cd v3.5.1), and whose
#: CRDs the rehearsal installs (`rehearse/upstream.py`).
ARGOCD_DEFAULT = parse_release("3.5.1")
#: The Argo CD option the DRA driver's kustomize wrapper needs (`helmCharts`): `argocd-cm`
#: `kustomize.buildOptions` must hold it (argo-cd v3.5.1 docs/user-guide/kustomize.md).
ARGOCD_ENABLE_HELM = "--enable-helm"
#: `helm.toolkit.fluxcd.io/v2` HelmRelease (helm-controller v1.0.0, CHANGELOG: "using Flux v2.3
#: release") and `source.toolkit.fluxcd.io/v1` HelmRepository (source-controller API v1.3.0, the
#: version helm-controller v1.0.0 builds against).
FLUX_MINIMUM = parse_release("2.3.0")
#: The Flux release a spec targets unless `delivery.fluxVersion` says otherwise: the one whose CRDs
#: the rendered objects are validated against (shared/reference/crds: helm-controller v1.6.3,
#: kustomize-controller v1.9.4, source-controller v1.9.x ship with fluxcd/flux2 v2.9.4).
FLUX_DEFAULT = parse_release("2.9.4")
#: `source.toolkit.fluxcd.io/v1` OCIRepository (source-controller v1.6.0, fluxcd/flux2 v2.6.0
#: cmd/flux/create_source_oci.go builds `sourcev1.OCIRepository`; v2.5.0 still `sourcev1b2`), which a
#: HelmRelease names in `spec.chartRef` (helm-controller v1.0.0, api/v2 `ChartRef`).
FLUX_OCI_CHART_REF_SINCE = parse_release("2.6.0")
#: HelmRelease `install/upgrade.strategy.name: RetryOnFailure`, retrying a failed release without
#: remediation (helm-controller v1.4.0, commit 0325b55, shipped in fluxcd/flux2 v2.7.0).
FLUX_RETRY_ON_FAILURE_SINCE = parse_release("2.7.0")
#: The branch `flux bootstrap` syncs unless given `--branch` (fluxcd/flux2 v2.9.4 cmd/flux/bootstrap.go
#: `bootstrapDefaultBranch`): the branch bootstrap's GitRepository follows.
FLUX_BOOTSTRAP_BRANCH = "main"
#: The helm-controller of Flux 2.3.0, the first to serve `helm.toolkit.fluxcd.io/v2`.
FLUX_HELM_CONTROLLER_MINIMUM = parse_release("1.0.0")
#: The controllers a Flux release installs, for the releases whose output differs: fluxcd/flux2
#: v2.6.0 and v2.7.0 `manifests/bases/*/kustomization.yaml` (source-controller v1.6.0 serves
#: OCIRepository v1; helm-controller v1.4.0's HelmRelease v2 has `spec.upgrade.strategy`).
FLUX_SOURCE_CONTROLLER_OCI_V1 = parse_release("1.6.0")
FLUX_HELM_CONTROLLER_RETRY_ON_FAILURE = parse_release("1.4.0")

#: Kueue counts DRA devices against ClusterQueue quotas through its Configuration's
#: `resources.deviceClassMappings` (a logical resource name -> DeviceClass names) from v0.14.0:
#: kubernetes-sigs/kueue v0.14.0 apis/config/v1beta1/configuration_types.go `DeviceClassMappings`,
#: pkg/features/kube_features.go `DynamicResourceAllocation` (Alpha, off, since "0.14").
KUEUE_DRA_SINCE = parse_release("0.14.0")
#: From v0.18.0 the gate is `KueueDRAIntegration` (Beta, on by default) and `DynamicResourceAllocation`
#: is deprecated and locked to false (kubernetes-sigs/kueue v0.18.0 pkg/features/kube_features.go).
KUEUE_DRA_GATE_DEFAULT_ON_SINCE = parse_release("0.18.0")
#: `kueue.x-k8s.io/v1beta2` (ClusterQueue, ResourceFlavor, LocalQueue) is served from v0.15.0 and is
#: the storage version in v0.19.0 (config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml:
#: v1beta1 `storage: false`, v1beta2 `storage: true`).
KUEUE_V1BETA2_SINCE = parse_release("0.15.0")
#: The API version of the Kueue objects the tool renders (it requires KUEUE_V1BETA2_SINCE).
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
#: The Kueue release a spec targets unless `kueue.version` says otherwise (the newest read: v0.19.2).
KUEUE_DEFAULT = "0.19.2"


def kueue_dra_gate(version: Release) -> tuple[str, bool]:
    """The Kueue feature gate that switches DRA quota accounting on at `version`, and its default."""
    if version >= KUEUE_DRA_GATE_DEFAULT_ON_SINCE:
        return "KueueDRAIntegration", True
    return "DynamicResourceAllocation", False
