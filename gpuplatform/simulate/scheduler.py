"""Admission (tenant policy, ResourceQuota) and the scheduler's placement of GPU pods.

- Extended resources (kube-scheduler NodeResourcesFit): an `nvidia.com/gpu` request fits a node
  whose allocatable has the GPUs free. With DRAExtendedResource (KEP-5004;
  pkg/scheduler/framework/plugins/dynamicresources), a node that does not advertise the resource
  (an explicit 0 counts as absent from 1.35, kubernetes/kubernetes#133784) is served by the
  DeviceClass whose `extendedResourceName` names it: the most recently created class wins, ties by
  name (staging/src/k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache). Which
  feasible node the scorer prefers is not modelled: a bridged placement on a DRA node is taken
  whenever one is feasible (the dangerous choice).
- Claims: a device is allocatable when the class selectors select it on a node whose slices the
  scheduler sees (stale slices too); NoSchedule/NoExecute taints must be tolerated, and a pod's
  `nodeSelector` must match the node's labels, GPU Feature Discovery's included (NodeAffinity filter).
- A node the model gives a pool whose provisioner keeps no floor (`minNodes: 0`) takes a claim pod
  only where the provisioner adds nodes for pods with ResourceClaims (Karpenter ignores them while
  IGNORE_DRA_REQUESTS is true, its default: kubernetes-sigs/karpenter v1.14.1
  pkg/operator/options/options.go, `Scheduler.add`; `capacity/growth.py`).
- Priority: the declared workloads (the spec's, a snapshot's pods) are placed before the model's
  own stand-in pods and preempt them when nothing else is free (DefaultPreemption).
- A pod with no GPU request that reaches the GPUs through `NVIDIA_VISIBLE_DEVICES` fits any node its
  selector and tolerations allow: the scheduler counts nothing for it.
- Admission: the tenant's ValidatingAdmissionPolicy allows only its own classes; ResourceQuota
  charges `count/resourceclaims`, `<class>.deviceclass.resource.k8s.io/devices` and
  `requests.nvidia.com/gpu` when the pod or claim is created (kube-apiserver quota admission).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

from gpuplatform.capacity.growth import pool_growth
from gpuplatform.kueue.simulate import kueue_refusal
from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.simulate.groups import gfd_labels
from gpuplatform.simulate.model import Cluster, Group, Workload, untolerated
from gpuplatform.simulate.world import START, STOP, Reaction, World
from gpuplatform.versions import SCHEDULER_EXPLICIT_ZERO_FIX, kube_gate_enabled, parse_release

__all__ = ["bridge_class", "scheduler_reactions"]

_SCHEDULING = ("NoSchedule", "NoExecute")
#: The origins of the workloads the platform must keep running: the spec's and a snapshot's pods.
DECLARED = ("spec", "snapshot")


def bridge_class(cluster: Cluster) -> str:
    """The class serving `nvidia.com/gpu`: the newest with that extendedResourceName, ties by name."""
    candidates = [c for c in cluster.classes.values() if c.extended_resource == GPU_RESOURCE]
    if not candidates:
        return ""
    newest = max(c.created for c in candidates)
    return min(c.name for c in candidates if c.created == newest)


def _extended_resource_on(world: World) -> bool:
    p = world.plan.platform
    release = parse_release(p.kubernetes.version)
    return (
        kube_gate_enabled(p.kubernetes.feature_gates, "DRAExtendedResource", release.minor)
        and release >= SCHEDULER_EXPLICIT_ZERO_FIX
    )


@dataclass
class _Usage:
    """What is taken, computed once per scheduling pass and updated as pods are bound in it."""

    legacy: dict[str, int] = field(default_factory=dict)
    """group id -> device-plugin GPUs in use."""
    dra: dict[str, int] = field(default_factory=dict)
    """group id -> DRA devices allocated."""
    quota: dict[tuple[str, str], int] = field(default_factory=dict)
    """(namespace, quota key) -> charged amount."""

    @classmethod
    def of(cls, cluster: Cluster, *, declared_only: bool = False) -> _Usage:
        """What every pod holds (`declared_only`: what the pods a preemption cannot evict hold)."""
        usage = cls()
        for w in cluster.workloads:
            if w.phase not in ("running", "restarting", "terminating", "stuck-terminating"):
                continue
            if declared_only and w.origin == "default" and w.phase == "running":
                continue
            if w.group:
                table = usage.dra if w.allocator in ("dra", "bridge") else usage.legacy
                table[w.group] = table.get(w.group, 0) + w.gpus
            usage.charge(w)
        return usage

    def charge(self, w: Workload) -> None:
        for key, amount in _charges(w):
            self.quota[(w.namespace, key)] = self.quota.get((w.namespace, key), 0) + amount


def _charges(w: Workload) -> tuple[tuple[str, int], ...]:
    if w.kind == "unallocated":
        return ()
    return _charges_of(w.kind == "legacy", w.device_class, w.gpus)


@lru_cache(maxsize=4096)
def _charges_of(legacy: bool, device_class: str, gpus: int) -> tuple[tuple[str, int], ...]:
    if legacy:
        return ((f"requests.{GPU_RESOURCE}", gpus),)
    return (
        (f"{device_class}.deviceclass.resource.k8s.io/devices", gpus),
        ("count/resourceclaims.resource.k8s.io", 1),
    )


def _free_devices(world: World, group: Group, device_class: str, usage: _Usage) -> int:
    if group.slices == "none":
        return 0
    cls = world.cluster.classes.get(device_class)
    if cls is None:
        return 0
    per_node = world.matcher.count((cls.expression,), group.pool, group.slices_layout)
    return per_node * len(group.nodes) - usage.dra.get(group.id, 0)


def _admit(world: World, w: Workload, usage: _Usage) -> str:
    """Why admission refuses the workload's pod or claim ('' when admitted)."""
    cluster = world.cluster
    if w.kind == "claim":
        if f"{w.namespace}/{w.template}" not in cluster.templates:
            return f"ResourceClaimTemplate {w.namespace}/{w.template} does not exist"
        allowed = cluster.allowed_classes.get(w.namespace)
        if allowed is not None and w.device_class not in allowed:
            return f"the tenant policy of {w.namespace} does not allow class {w.device_class}"
    suspended = kueue_refusal(world, w)
    if suspended:
        return suspended
    quota = cluster.quotas.get(w.namespace)
    if quota is None:
        return ""
    for key, amount in _charges(w):
        if key in quota and usage.quota.get((w.namespace, key), 0) + amount > quota[key]:
            return f"ResourceQuota of {w.namespace}: {key} exceeded"
    return ""


_Hashable = tuple[Any, ...]


def _frozen(items: list[dict[str, Any]]) -> _Hashable:
    return tuple(sorted(tuple(sorted(item.items())) for item in items))


def _group_key(group: Group) -> _Hashable:
    """What feasibility reads of a group (its pool and size never change)."""
    return (group.pool, group.gpus, group.cordoned, _frozen(group.taints))


@lru_cache(maxsize=65536)
def _feasible_indexes(shape: _Hashable, groups: tuple[_Hashable, ...]) -> tuple[int, ...]:
    """Indexes of the groups a pod of `shape` may be placed on (filters that do not count capacity).

    Kept across scheduling passes: most passes see the same groups as the one before.
    """
    _, _, gpus, pools, frozen, _ = shape
    tolerations = [dict(t) for t in frozen]
    return tuple(
        i
        for i, (group_pool, group_gpus, cordoned, taints) in enumerate(groups)
        if not cordoned
        and (not pools or group_pool in pools)
        and not untolerated(tolerations, [dict(t) for t in taints], _SCHEDULING)
        and gpus <= group_gpus
    )


def _selects(world: World, group: Group, selector: dict[str, str]) -> bool:
    """`nodeSelector` against the node's labels: the group's and GPU Feature Discovery's."""
    if not selector:
        return True
    labels = gfd_labels(world.plan.pools[group.pool], group) | group.labels
    return all(labels.get(k) == v for k, v in selector.items())


def _provisioned_for_claims(world: World, group: Group) -> bool:
    """A node of a pool with no floor exists for a claim pod only if its provisioner adds nodes for
    pods with ResourceClaims: Karpenter ignores them by default (`capacity/growth.py`)."""
    if not group.elastic:
        return True
    growth = pool_growth(world.plan.platform, world.plan.pools[group.pool])
    return growth is not None and growth.claims


def _place(
    world: World, w: Workload, usage: _Usage, bridged: str, groups: list[Group]
) -> tuple[Group, str] | None:
    if w.kind == "claim":
        for g in groups:
            if _free_devices(world, g, w.device_class, usage) >= w.gpus and _provisioned_for_claims(world, g):
                return g, "dra"
        return None
    if w.kind == "unallocated":
        return (groups[0], "visible-devices") if groups else None
    if bridged:
        for g in groups:
            if g.allocatable_gpu == 0 and _free_devices(world, g, bridged, usage) >= w.gpus:
                return g, "bridge"
    for g in groups:
        if g.allocatable_gpu and g.allocatable_gpu * len(g.nodes) - usage.legacy.get(g.id, 0) >= w.gpus:
            return g, "device-plugin"
    return None


def _preempt(world: World, w: Workload, bridged: str, groups: list[Group]) -> Reaction | None:
    """A declared pod that fits nowhere evicts the model's own pods in its way (DefaultPreemption: the
    mix's stand-in pods have the lowest priority, so that a declared workload never waits for them;
    kubernetes pkg/scheduler/framework/plugins/defaultpreemption). None when that would not help."""
    if w.origin not in DECLARED:
        return None
    found = _place(world, w, _Usage.of(world.cluster, declared_only=True), bridged, groups)
    if found is None:
        return None
    group, _ = found
    victims = [
        v
        for v in world.cluster.workloads
        if v.group == group.id and v.origin == "default" and v.phase == "running"
    ]
    if not victims:
        return None

    def evict() -> None:
        for v in victims:
            v.moves = True
            v.evict(f"preempted by {w.key}")

    names = ", ".join(v.key for v in victims)
    return Reaction(STOP, f"scheduler preempts {names} on {group.name} for {w.key}", evict)


def _bind(world: World, w: Workload, group: Group, allocator: str) -> None:
    w.group, w.allocator, w.phase, w.reason = group.id, allocator, "running", ""  # type: ignore[assignment]
    w.mig_layout = group.slices_layout if allocator in ("dra", "bridge") else group.mig_layout
    if allocator == "bridge" and not world.bridge_allowed:
        world.pending_failure = (
            "early-bridge",
            f"unmigrated {w.key} (nvidia.com/gpu) lands on DRA node {group.name} through DeviceClass "
            f"{bridge_class(world.cluster)} before a compatibility-bridge wave enables a bridge",
            [f"Pod/{w.key}", f"DeviceClass/{bridge_class(world.cluster)}", f"Node/{group.nodes[0]}"],
        )


def _shape(w: Workload) -> _Hashable:
    """What placement depends on besides capacity: pods of one shape fit the same nodes."""
    return (
        w.kind,
        w.device_class,
        w.gpus,
        w.pools,
        _frozen(w.tolerations),
        tuple(sorted(w.node_selector.items())),
    )


def scheduler_reactions(world: World) -> list[Reaction]:
    """Admit and place every pending GPU pod that can run now (capacity reserved within the pass)."""
    out: list[Reaction] = []
    cluster = world.cluster
    pending = sorted(
        (w for w in cluster.workloads if w.phase == "pending"), key=lambda w: w.origin not in DECLARED
    )
    if not pending:
        return out
    state = (
        cluster.version,
        tuple(
            (
                g.id,
                len(g.nodes),
                g.slices,
                g.mig_layout,
                g.published_layout,
                g.device_plugin_registered,
                g.cordoned,
                len(g.taints),
            )
            for g in cluster.groups
        ),
        tuple((w.phase, w.group) for w in cluster.workloads),
        tuple(tuple(sorted(g.labels.items())) for g in cluster.groups)
        if any(w.node_selector for w in pending)
        else (),
    )
    if state == cluster.idle:
        return out
    usage = _Usage.of(world.cluster)
    bridged = bridge_class(world.cluster) if _extended_resource_on(world) else ""
    unplaceable: set[_Hashable] = set()
    feasible: dict[_Hashable, list[Group]] = {}
    groups = tuple(_group_key(g) for g in cluster.groups)
    for w in pending:
        refusal = _admit(world, w, usage)
        if refusal:
            out.append(Reaction(STOP, f"{w.key} refused: {refusal}", partial(w.refuse, refusal)))
            continue
        shape = _shape(w)
        if shape in unplaceable:
            continue
        if shape not in feasible:
            feasible[shape] = [
                g
                for g in (cluster.groups[i] for i in _feasible_indexes(shape, groups))
                if _selects(world, g, w.node_selector)
            ]
        found = _place(world, w, usage, bridged, feasible[shape])
        if found is None:
            preemption = _preempt(world, w, bridged, feasible[shape])
            if preemption is not None:
                out.append(preemption)
            unplaceable.add(shape)
            continue
        group, allocator = found
        table = usage.legacy if allocator == "device-plugin" else usage.dra
        table[group.id] = table.get(group.id, 0) + w.gpus
        usage.charge(w)
        text = f"scheduler binds {w.key} to {group.name} ({allocator})"
        out.append(Reaction(START, text, partial(_bind, world, w, group, allocator)))
    cluster.idle = () if out else state
    return out
