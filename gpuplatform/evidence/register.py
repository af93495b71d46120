"""The migration-wave register: one row per GPU workload, and one per GPU node, from a snapshot."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from gpuplatform.evidence.gfd import read_node
from gpuplatform.gates.matchers import (
    STACK_NAMESPACES,
    VISIBLE_DEVICES,
    is_device_plugin_pod,
    is_dra_kubelet_plugin_pod,
    is_gpu_stack_pod,
    shows_gpus,
)
from gpuplatform.kueue.model import PODSET_LABEL, QUEUE_LABEL, WORKLOAD_ANNOTATION
from gpuplatform.labels import GPU_COUNT_LABEL, GPU_PRODUCT_LABEL, GPU_RESOURCE
from gpuplatform.model.platform import Platform
from gpuplatform.snapshot.read import Snapshot

__all__ = [
    "HUMAN_FIELDS",
    "NodeRow",
    "WorkloadRow",
    "gpu_count",
    "node_rows",
    "own_placement",
    "spec_workloads",
    "visible_devices",
    "workload_of",
    "workload_rows",
]

#: Fields only a person can fill; present and empty in every row.
HUMAN_FIELDS = ("owner", "restartTolerance", "maintenanceWindow", "rollbackOwner", "validationTest")


def _containers(pod: dict[str, Any]) -> Iterator[dict[str, Any]]:
    spec = pod.get("spec", {})
    yield from spec.get("initContainers") or []
    yield from spec.get("containers") or []


def _quantity(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def gpu_count(pod: dict[str, Any]) -> int:
    """GPUs a pod requests: the largest init container or the sum of the app containers (as the scheduler)."""
    spec = pod.get("spec", {})

    def wants(c: dict[str, Any]) -> int:
        r = c.get("resources") or {}
        return max(
            _quantity((r.get("limits") or {}).get(GPU_RESOURCE, 0)),
            _quantity((r.get("requests") or {}).get(GPU_RESOURCE, 0)),
        )

    init = max((wants(c) for c in spec.get("initContainers") or []), default=0)
    return max(init, sum(wants(c) for c in spec.get("containers") or []))


def visible_devices(pod: dict[str, Any], namespaces: Collection[str] = STACK_NAMESPACES) -> str:
    """The NVIDIA_VISIBLE_DEVICES a workload container sets to reach GPUs with no GPU request ('' if none).

    The NVIDIA container runtime exposes `all`, or the listed indexes or UUIDs, to any container that
    sets it; no allocator knows. The GPU stack's own pods (its DaemonSets' in `namespaces`) do it by
    design and are skipped; any other pod that does is listed, whatever its labels.
    """
    if gpu_count(pod) or _other_gpu_resources(pod) or pod.get("spec", {}).get("resourceClaims"):
        return ""
    if is_gpu_stack_pod(pod, namespaces):
        return ""
    for c in _containers(pod):
        for env in c.get("env") or []:
            if isinstance(env, dict) and env.get("name") == VISIBLE_DEVICES:
                value = str(env.get("value") or "")
                if shows_gpus(value):
                    return value
    return ""


def _other_gpu_resources(pod: dict[str, Any]) -> list[str]:
    names = set()
    for c in _containers(pod):
        r = c.get("resources") or {}
        for name in {**(r.get("limits") or {}), **(r.get("requests") or {})}:
            if name.startswith("nvidia.com/") and name != GPU_RESOURCE:
                names.add(name)
    return sorted(names)


def workload_of(pod: dict[str, Any], snapshot: Snapshot) -> tuple[str, str]:
    """(kind, name) of the workload: a ReplicaSet resolves to its Deployment, a Job to its CronJob."""
    meta = pod.get("metadata", {})
    owner = next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)
    if owner is None:
        return "Pod", str(meta.get("name"))
    kind, name = str(owner.get("kind")), str(owner.get("name"))
    lookup = {"ReplicaSet": "replicasets", "Job": "jobs"}.get(kind)
    if lookup is not None:
        for parent in snapshot.items(lookup) or []:
            pm = parent.get("metadata", {})
            if pm.get("name") == name and pm.get("namespace") == meta.get("namespace"):
                grand = next((o for o in pm.get("ownerReferences") or [] if o.get("controller")), None)
                if grand is not None:
                    return str(grand.get("kind")), str(grand.get("name"))
        if kind == "ReplicaSet" and (hash_ := (meta.get("labels") or {}).get("pod-template-hash")):
            return "Deployment", name.removesuffix(f"-{hash_}")
    return kind, name


def spec_workloads(platform: Platform) -> set[tuple[str, str, str]]:
    """(namespace, kind, name) of what the spec declares, as `workload_of` finds it running: its
    workloads, and every NIM service and the one it replaces as the Deployment of its name (NVIDIA/
    k8s-nim-operator v3.1.2 `api/apps/v1alpha1/nimservice_types.go` `GetDeploymentParams`)."""
    out = {(w.namespace, str(w.kind), w.name) for w in platform.workloads}
    for nim in platform.nim_services:
        out |= {(nim.namespace, "Deployment", name) for name in (nim.name, nim.replaces) if name}
    return out


@dataclass
class WorkloadRow:
    """One workload that uses GPUs."""

    namespace: str
    kind: str
    name: str
    pods: int = 0
    gpus: int = 0
    claims: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    products: list[str] = field(default_factory=list)
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: bool = False
    tolerations: list[str] = field(default_factory=list)
    mig_or_sharing: list[str] = field(default_factory=list)
    visible_devices: str = ""
    """NVIDIA_VISIBLE_DEVICES of a pod that reaches GPUs with no allocator (a third allocator)."""
    queue: str = ""
    """The Kueue LocalQueue its Job is submitted to (the Job's `kueue.x-k8s.io/queue-name`, which a
    CronJob's Jobs take from its `jobTemplate`); read by `init`."""

    def as_dict(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "namespace": self.namespace,
            "kind": self.kind,
            "name": self.name,
            "pods": self.pods,
            "gpusPerPod": self.gpus,
            "claims": sorted(self.claims),
            "nodes": sorted(self.nodes),
            "gpuProducts": sorted(self.products),
            "nodeSelector": dict(sorted(self.node_selector.items())),
            "affinity": self.affinity,
            "tolerations": sorted(self.tolerations),
            "migOrSharing": sorted(self.mig_or_sharing),
            "visibleDevicesWithoutAllocator": self.visible_devices,
        }
        return row | {f: "" for f in HUMAN_FIELDS}


def _job_queue(pod: dict[str, Any], snapshot: Snapshot) -> str:
    """The queue label of the Job that owns `pod` ('' when none)."""
    meta = pod.get("metadata", {})
    owner = next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)
    if owner is None or owner.get("kind") != "Job":
        return ""
    for job in snapshot.items("jobs") or []:
        jm = job.get("metadata", {})
        if jm.get("name") == owner.get("name") and jm.get("namespace") == meta.get("namespace"):
            return str((jm.get("labels") or {}).get(QUEUE_LABEL, ""))
    return ""


def own_placement(pod: dict[str, Any], snapshot: Snapshot) -> dict[str, Any]:
    """The pod's `nodeSelector` and `tolerations` as its owner wrote them. Kueue merges the admitted
    flavor's `nodeLabels` and tolerations into a Job's pod template when it admits it, and puts back
    the template its Workload recorded when it suspends it (kubernetes-sigs/kueue v0.19.2
    `pkg/controller/jobs/job/job_controller.go` `RunWithPodSetsInfo`, `RestorePodSetsInfo`;
    `pkg/podset/podset.go` `Merge`): for a pod of an admitted Job, that recorded template."""
    spec, meta = pod.get("spec", {}), pod.get("metadata", {})
    workload = (meta.get("annotations") or {}).get(WORKLOAD_ANNOTATION)
    podset = (meta.get("labels") or {}).get(PODSET_LABEL)
    for item in snapshot.items("workloads") or [] if workload else []:
        wm = item.get("metadata", {})
        if wm.get("name") != workload or wm.get("namespace") != meta.get("namespace"):
            continue
        for recorded in (item.get("spec") or {}).get("podSets") or []:
            if recorded.get("name") == podset:
                own: dict[str, Any] = (recorded.get("template") or {}).get("spec") or {}
                return own
    return dict(spec)


def workload_rows(snapshot: Snapshot, namespaces: Collection[str] = STACK_NAMESPACES) -> list[WorkloadRow]:
    """Every workload with a pod requesting `nvidia.com/gpu` (or another nvidia.com resource) or a claim,
    or reaching GPUs through NVIDIA_VISIBLE_DEVICES with neither (`visibleDevicesWithoutAllocator`);
    the GPU stack's own pods (in `namespaces`) are not workloads."""
    products = {
        n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get(GPU_PRODUCT_LABEL, "")
        for n in snapshot.items("nodes") or []
    }
    rows: dict[tuple[str, str, str], WorkloadRow] = {}
    for pod in snapshot.items("pods") or []:
        if is_gpu_stack_pod(pod, namespaces):
            continue
        gpus, others = gpu_count(pod), _other_gpu_resources(pod)
        claims = [
            c.get("resourceClaimName") or c.get("resourceClaimTemplateName") or c.get("name")
            for c in pod.get("spec", {}).get("resourceClaims") or []
        ]
        visible = visible_devices(pod, namespaces)
        if not gpus and not others and not claims and not visible:
            continue
        namespace = str(pod["metadata"].get("namespace", ""))
        kind, name = workload_of(pod, snapshot)
        row = rows.setdefault((namespace, kind, name), WorkloadRow(namespace, kind, name))
        spec = pod.get("spec", {})
        row.pods += 1
        row.gpus = max(row.gpus, gpus)
        row.claims = sorted(set(row.claims) | {str(c) for c in claims})
        node = spec.get("nodeName")
        if node and node not in row.nodes:
            row.nodes.append(node)
            if products.get(node) and products[node] not in row.products:
                row.products.append(products[node])
        own = own_placement(pod, snapshot)
        row.node_selector.update(own.get("nodeSelector") or {})
        row.affinity = row.affinity or bool(spec.get("affinity"))
        for t in own.get("tolerations") or []:
            text = f"{t.get('key', '*')}={t.get('value', '')}:{t.get('effect', '*')}"
            if text not in row.tolerations:
                row.tolerations.append(text)
        row.mig_or_sharing = sorted(set(row.mig_or_sharing) | set(others))
        row.visible_devices = row.visible_devices or visible
        row.queue = row.queue or _job_queue(pod, snapshot)
    return [rows[k] for k in sorted(rows)]


@dataclass
class NodeRow:
    """One GPU node: what the device plugin advertises, which allocators run there, what DRA publishes."""

    name: str
    allocatable: str
    product: str
    count_label: str
    device_plugin_pod: bool
    dra_plugin_pod: bool
    slice_devices: int
    mig_config: str = ""
    mig_strategy: str = ""
    mig_devices: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.name,
            "allocatableNvidiaGpu": self.allocatable,
            "gpuProduct": self.product,
            "gpuCountLabel": self.count_label,
            "devicePluginPod": self.device_plugin_pod,
            "draKubeletPluginPod": self.dra_plugin_pod,
            "resourceSliceDevices": self.slice_devices,
            "migConfig": self.mig_config,
            "migStrategy": self.mig_strategy,
            "migDevices": self.mig_devices,
        }


def node_rows(snapshot: Snapshot, dra_namespace: str = "nvidia-dra-driver-gpu") -> list[NodeRow]:
    """Every node with GPUs (product label, allocatable GPUs, a plugin pod or published devices)."""
    pods = snapshot.items("pods") or []
    devices: dict[str, int] = {}
    for s in snapshot.items("resourceslices") or []:
        node = s.get("spec", {}).get("nodeName")
        if node:
            devices[node] = devices.get(node, 0) + len(s["spec"].get("devices") or [])
    rows = []
    for node in snapshot.items("nodes") or []:
        name = node["metadata"]["name"]
        labels = node["metadata"].get("labels") or {}
        on_node = [p for p in pods if p.get("spec", {}).get("nodeName") == name]
        gpus = read_node(labels, node.get("status", {}).get("allocatable") or {})
        row = NodeRow(
            name,
            str((node.get("status", {}).get("allocatable") or {}).get(GPU_RESOURCE, "")),
            labels.get(GPU_PRODUCT_LABEL, ""),
            labels.get(GPU_COUNT_LABEL, ""),
            any(is_device_plugin_pod(p) for p in on_node),
            any(is_dra_kubelet_plugin_pod(p, dra_namespace) for p in on_node),
            devices.get(name, 0),
            gpus.mig_config,
            gpus.mig_strategy,
            gpus.mig_summary(),
        )
        if (
            row.allocatable
            or row.product
            or row.device_plugin_pod
            or row.dra_plugin_pod
            or row.slice_devices
            or row.mig_devices
        ):
            rows.append(row)
    return sorted(rows, key=lambda r: r.name)
