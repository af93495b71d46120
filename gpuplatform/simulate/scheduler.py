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
  scheduler sees (stale slices too); NoSchedule/NoExecute taints must be tolerated.
- Admission: the tenant's ValidatingAdmissionPolicy allows only its own classes; ResourceQuota
  charges `count/resourceclaims`, `<class>.deviceclass.resource.k8s.io/devices` and
  `requests.nvidia.com/gpu` when the pod or claim is created (kube-apiserver quota admission).
"""

from __future__ import annotations

from functools import partial

from gpuplatform.simulate.model import Cluster, Group, Workload, untolerated
from gpuplatform.simulate.world import START, STOP, Reaction, World
from gpuplatform.versions import SCHEDULER_EXPLICIT_ZERO_FIX, kube_gate_default, parse_release

__all__ = ["bridge_class", "scheduler_reactions"]

_SCHEDULING = ("NoSchedule", "NoExecute")
GPU = "nvidia.com/gpu"


def bridge_class(cluster: Cluster) -> str:
    """The class serving `nvidia.com/gpu`: the newest with that extendedResourceName, ties by name."""
    candidates = [c for c in cluster.classes.values() if c.extended_resource == GPU]
    if not candidates:
        return ""
    newest = max(c.created for c in candidates)
    return min(c.name for c in candidates if c.created == newest)


def _extended_resource_on(world: World) -> bool:
    p = world.plan.platform
    release = parse_release(p.kubernetes.version)
    default = kube_gate_default("DRAExtendedResource", release.minor)
    return (
        bool(p.kubernetes.feature_gates.get("DRAExtendedResource", default))
        and release >= SCHEDULER_EXPLICIT_ZERO_FIX
    )


def _used(cluster: Cluster, group: Group, dra: bool) -> int:
    return sum(
        w.gpus
        for w in cluster.workloads
        if w.group == group.id
        and w.phase in ("running", "terminating", "stuck-terminating")
        and (w.allocator in ("dra", "bridge")) == dra
    )


def _free_devices(world: World, group: Group, device_class: str) -> int:
    cls = world.cluster.classes.get(device_class)
    if cls is None or group.slices == "none":
        return 0
    per_node = world.matcher.count((cls.expression,), group.pool)
    return per_node * len(group.nodes) - _used(world.cluster, group, dra=True)


def _admit(world: World, w: Workload) -> str:
    """Why admission refuses the workload's pod or claim ('' when admitted)."""
    cluster = world.cluster
    allowed = cluster.allowed_classes.get(w.namespace)
    if w.kind == "claim":
        if f"{w.namespace}/{w.template}" not in cluster.templates:
            return f"ResourceClaimTemplate {w.namespace}/{w.template} does not exist"
        if allowed is not None and w.device_class not in allowed:
            return f"the tenant policy of {w.namespace} does not allow class {w.device_class}"
    quota = cluster.quotas.get(w.namespace)
    if quota is None:
        return ""
    others = [
        o
        for o in cluster.workloads
        if o.namespace == w.namespace
        and o is not w
        and o.phase in ("running", "terminating", "stuck-terminating")
    ]
    if w.kind == "legacy":
        used = sum(o.gpus for o in others if o.kind == "legacy")
        if used + w.gpus > quota.get(f"requests.{GPU}", 1 << 30):
            return f"ResourceQuota of {w.namespace}: requests.{GPU} exceeded"
        return ""
    key = f"{w.device_class}.deviceclass.resource.k8s.io/devices"
    used = sum(o.gpus for o in others if o.kind == "claim" and o.device_class == w.device_class)
    if used + w.gpus > quota.get(key, 1 << 30):
        return f"ResourceQuota of {w.namespace}: {key} exceeded"
    claims = sum(1 for o in others if o.kind == "claim")
    if claims + 1 > quota.get("count/resourceclaims.resource.k8s.io", 1 << 30):
        return f"ResourceQuota of {w.namespace}: count/resourceclaims exceeded"
    return ""


def _feasible(w: Workload, group: Group) -> bool:
    return (
        not group.cordoned
        and (not w.pool or group.pool == w.pool)
        and not untolerated(w.tolerations, group.taints, _SCHEDULING)
        and w.gpus <= group.gpus
    )


def _place(world: World, w: Workload) -> tuple[Group, str] | None:
    cluster = world.cluster
    groups = [g for g in cluster.groups if _feasible(w, g)]
    if w.kind == "claim":
        for g in groups:
            if _free_devices(world, g, w.device_class) >= w.gpus:
                return g, "dra"
        return None
    bridged = bridge_class(cluster) if _extended_resource_on(world) else ""
    if bridged:
        for g in groups:
            if g.allocatable_gpu == 0 and _free_devices(world, g, bridged) >= w.gpus:
                return g, "bridge"
    for g in groups:
        if g.allocatable_gpu and g.allocatable_gpu * len(g.nodes) - _used(cluster, g, dra=False) >= w.gpus:
            return g, "device-plugin"
    return None


def _bind(world: World, w: Workload, group: Group, allocator: str) -> None:
    w.group, w.allocator, w.phase, w.reason = group.id, allocator, "running", ""  # type: ignore[assignment]
    if allocator == "bridge" and not world.bridge_allowed:
        world.pending_failure = (
            "early-bridge",
            f"unmigrated {w.key} (nvidia.com/gpu) lands on DRA node {group.name} through DeviceClass "
            f"{bridge_class(world.cluster)} before the wave that enables a bridge",
            [f"Pod/{w.key}", f"DeviceClass/{bridge_class(world.cluster)}", f"Node/{group.nodes[0]}"],
        )


def scheduler_reactions(world: World) -> list[Reaction]:
    """Admit and place every pending GPU pod that can run now."""
    out: list[Reaction] = []
    for w in world.cluster.workloads:
        if w.phase != "pending":
            continue
        refusal = _admit(world, w)
        if refusal:
            out.append(
                Reaction(
                    STOP,
                    f"{w.key} refused: {refusal}",
                    partial(w.refuse, refusal),
                )
            )
            continue
        found = _place(world, w)
        if found is not None:
            group, allocator = found
            out.append(
                Reaction(
                    START,
                    f"scheduler binds {w.key} to {group.name} ({allocator})",
                    partial(_bind, world, w, group, allocator),
                )
            )
    return out
