"""The cluster the simulator replays transitions on: node groups, workloads, classes, releases.

Identical nodes of one pool are one `Group` (same labels, taints and pods), so that a 2,000-node
fleet costs as much as its pools; a group is split when one of its nodes starts to differ (a
restarted or upgraded node, a replaced Karpenter node).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

from gpuplatform.kube.nodes import Taint, Toleration
from gpuplatform.kube.nodes import tolerates as toleration_tolerates

__all__ = [
    "Cluster",
    "DeviceClassState",
    "Group",
    "Operand",
    "Release",
    "Taint",
    "Toleration",
    "Workload",
    "tolerates",
    "untolerated",
]

Operand = Literal["running", "waiting", "crashloop", "unschedulable", "terminating"]
Phase = Literal["pending", "running", "restarting", "terminating", "stuck-terminating", "refused", "done"]
Allocator = Literal["device-plugin", "dra", "bridge", "visible-devices", ""]


def tolerates(tolerations: list[Toleration], taint: Taint) -> bool:
    """Whether any of `tolerations` tolerates `taint` (core/v1 `Toleration.ToleratesTaint`)."""
    return any(toleration_tolerates(t, taint) for t in tolerations)


def untolerated(tolerations: list[Toleration], taints: list[Taint], effects: tuple[str, ...]) -> list[Taint]:
    """The taints of `effects` that none of `tolerations` tolerates (scheduling: NoSchedule + NoExecute)."""
    if not taints:
        return []
    return [t for t in taints if t.get("effect") in effects and not tolerates(tolerations, t)]


@dataclass
class Group:
    """Identical nodes of one pool: their labels (with the field manager owning each), taints and pods."""

    id: str
    pool: str
    provisioner: str
    nodes: list[str]
    gpus: int
    mig_capable: bool
    labels: dict[str, str] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)
    taints: list[Taint] = field(default_factory=list)
    cordoned: bool = False
    markers: set[str] = field(default_factory=set)
    operands: dict[str, Operand] = field(default_factory=dict)
    validator_started: bool = False
    """The validator's main container ran, so its preStop removes the markers when it stops."""
    device_plugin_registered: bool = False
    kubelet_plugin: Literal["absent", "running", "terminating"] = "absent"
    slices: Literal["none", "published", "stale"] = "none"
    driver_loaded: bool = True
    nfd_labelled: bool = True
    applied: dict[str, str] = field(default_factory=dict)
    """The labels the GitOps engine applied last (what its drift correction restores)."""
    mig_layout: tuple[str, ...] = ()
    """The MIG profiles each GPU is partitioned into now (empty: whole GPUs): the devices that exist."""
    published_layout: tuple[str, ...] | None = None
    """The MIG layout the running DRA kubelet plugin enumerated when it started (None: no plugin), which
    its ResourceSlices keep describing: DRA driver v0.4.1 enumerates the devices once, at start-up
    (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 cmd/gpu-kubelet-plugin/device_state.go
    `NewDeviceState` -> `enumerateAllPossibleDevices`), and every later publish, after prepare and
    unprepare with PassthroughSupport or on a health event (driver.go `nodePrepareResource`,
    `nodeUnprepareResource`, `deviceHealthEvents`), republishes that list: a MIG change made outside the
    driver is published only once the plugin restarts."""
    mig_failed: str = ""
    """The `nvidia.com/mig.config` the MIG manager last failed to apply (it runs again on a new value)."""
    plugin_config: str = ""
    """What the registered device plugin advertises (`<strategy>:<mig config>`), set when it registers."""
    elastic: bool = False
    """A node the model gives a provisioner pool whose floor is 0 (`minNodes: 0`) so that its gates can
    act: it exists only for the pods its provisioner adds nodes for (`capacity/growth.py`)."""

    @property
    def name(self) -> str:
        """`pool/first-node` (+N more): how reports name the group."""
        more = f" (+{len(self.nodes) - 1} more)" if len(self.nodes) > 1 else ""
        return f"{self.pool}/{self.nodes[0]}{more}"

    @property
    def slices_layout(self) -> tuple[str, ...]:
        """The MIG layout the node's ResourceSlices describe (the devices the scheduler allocates)."""
        return self.mig_layout if self.published_layout is None else self.published_layout

    @property
    def allocatable_gpu(self) -> int:
        """`status.allocatable['nvidia.com/gpu']` of each node (0 when the device plugin is not registered)."""
        return self.gpus if self.device_plugin_registered else 0

    def set_label(self, key: str, value: str | None, manager: str) -> bool:
        """Set (or remove, `None`) a label as `manager`; True when it changed.

        An update that leaves a value as it was does not take the field over (the managed fields
        of a non-apply request record only what it changed).
        """
        if value is None:
            if key not in self.labels:
                return False
            del self.labels[key]
            self.owners.pop(key, None)
            return True
        if self.labels.get(key) == value:
            return False
        self.labels[key] = value
        self.owners[key] = manager
        return True

    def clone(self) -> Group:
        """A copy with its own containers (taints and labels are replaced, never edited in place)."""
        other = copy.copy(self)
        other.nodes = list(self.nodes)
        other.labels, other.owners, other.applied = dict(self.labels), dict(self.owners), dict(self.applied)
        other.taints = list(self.taints)
        other.markers, other.operands = set(self.markers), dict(self.operands)
        return other

    def split(self, count: int, suffix: str) -> Group:
        """Move the first `count` nodes into a new group with the same state (returned)."""
        other = self.clone()
        other.id = f"{self.id}{suffix}"
        other.nodes = self.nodes[:count]
        self.nodes = self.nodes[count:]
        return other


@dataclass
class Workload:
    """One pod that needs GPUs: an unmigrated `nvidia.com/gpu` pod, a pod with a claim, or a pod that
    reaches every GPU of its node through `NVIDIA_VISIBLE_DEVICES` without asking any allocator."""

    name: str
    namespace: str
    kind: Literal["legacy", "claim", "unallocated"]
    gpus: int
    origin: str
    """Where it comes from: `default` mix, `spec` workload, `validation`, `snapshot`."""
    tolerations: list[Toleration] = field(default_factory=list)
    pools: tuple[str, ...] = ()
    """The pools its required node affinity reaches (terms ORed; legacy pods of the default mix stay
    on their own pool); empty: any."""
    node_selector: dict[str, str] = field(default_factory=dict)
    """`spec.nodeSelector`: the node's labels must carry every entry."""
    device_class: str = ""
    template: str = ""
    group: str = ""
    allocator: Allocator = ""
    phase: Phase = "pending"
    reason: str = ""
    moves: bool = False
    """The transition being replayed moves this workload (its pool changes allocator, or it converts)."""
    converting: bool = False
    """The transition being replayed is this workload's own declared move: it converts, or goes back."""
    deleted: bool = False
    """Deleted by its owner (not evicted): it does not come back once terminated."""
    mig_layout: tuple[str, ...] = ()
    """The MIG layout of its node when its devices were allocated (they exist while it still holds)."""
    probe: str = ""
    """The validation role of a gate's probe pod (`claim-pilot`, `bridge-legacy`, `bridge-dra`)."""
    controller: str = ""
    """The kind of the spec workload this pod is one replica of (`Deployment`, `Job`, ...)."""
    workload: str = ""
    """The name of that spec workload (the pod's own name is its controller's: `controllers.py`)."""

    def evict(self, reason: str, *, delete: bool = False) -> None:
        """Start terminating; an evicted pod is recreated by its controller, a deleted one is not."""
        if self.phase == "running":
            self.phase = "terminating"
        elif self.phase == "pending":
            self.phase = "done" if delete else "pending"
        self.deleted = self.deleted or delete
        self.reason = reason

    def stuck(self) -> None:
        """Its claim cannot be unprepared (no kubelet plugin): it stays Terminating."""
        self.phase = "stuck-terminating"

    def refuse(self, reason: str) -> None:
        """Admission refused its pod or claim."""
        self.phase, self.reason = "refused", reason

    def terminated(self) -> None:
        """Its containers are gone and its claims unprepared: recreated pending, or done."""
        self.phase = "done" if self.deleted else "pending"
        self.group = ""
        self.allocator = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class DeviceClassState:
    """A DeviceClass as the scheduler sees it: selector, bridged resource, creation order, owner."""

    name: str
    expression: str
    extended_resource: str
    created: int
    owner: str


@dataclass
class Release:
    """A Helm release as installed in the cluster (values after Helm's merge with chart defaults)."""

    name: str
    chart: str
    version: str
    values: dict[str, Any]
    patches: list[dict[str, Any]] = field(default_factory=list)
    owner: str = ""
    """`flux`, `argocd` (child Application), or `` when orphaned."""
    alive: bool = True
    """False once its namespace was deleted under it (its DaemonSet and controller are gone)."""


@dataclass
class Cluster:
    """Everything the controllers read and write."""

    groups: list[Group]
    workloads: list[Workload] = field(default_factory=list)
    classes: dict[str, DeviceClassState] = field(default_factory=dict)
    releases: dict[str, Release] = field(default_factory=dict)
    namespaces: set[str] = field(default_factory=set)
    quotas: dict[str, dict[str, int]] = field(default_factory=dict)
    allowed_classes: dict[str, list[str]] = field(default_factory=dict)
    templates: dict[str, str] = field(default_factory=dict)
    """`namespace/template` -> device class of the ResourceClaimTemplates that exist."""
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Every other applied object by `kind/namespace/name` (what an engine may prune)."""
    jobs: dict[str, str] = field(default_factory=dict)
    """Job `namespace/name` -> `complete` | `failed` (Jobs are immutable and run once)."""
    clock: int = 0
    version: int = 0
    """Bumped whenever an applied object changes what admission or scheduling decides."""
    idle: tuple[object, ...] = ()
    """The scheduler's last state in which it found nothing to do."""
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Validation workload `namespace/name` -> the Job that runs it (its pod template, as rendered)."""
    gate_logs: dict[str, str] = field(default_factory=dict)
    """Gate Job `namespace/name` -> what its pod printed, once the gate held (the proof it records)."""

    def fork(self) -> Cluster:
        """A copy of the mutable state. Applied objects, device classes, quotas and tolerations are
        shared: they are replaced when they change, never edited in place."""
        return Cluster(
            [g.clone() for g in self.groups],
            [copy.copy(w) for w in self.workloads],
            dict(self.classes),
            {k: copy.copy(r) for k, r in self.releases.items()},
            set(self.namespaces),
            dict(self.quotas),
            dict(self.allowed_classes),
            dict(self.templates),
            dict(self.objects),
            dict(self.jobs),
            self.clock,
            self.version,
            probes=dict(self.probes),
            gate_logs=dict(self.gate_logs),
        )

    def tick(self) -> int:
        """A creation timestamp: strictly increasing."""
        self.clock += 1
        return self.clock

    def group(self, gid: str) -> Group:
        for g in self.groups:
            if g.id == gid:
                return g
        raise KeyError(gid)
