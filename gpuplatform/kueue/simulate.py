"""Kueue admission in the simulated cluster: a queued Job's pod is created only once its ClusterQueue,
as applied so far, has quota free for what it asks for; otherwise it stays suspended.

Modelled after kubernetes-sigs/kueue v0.19.2: a Job labelled `kueue.x-k8s.io/queue-name` is
suspended until its Workload is admitted; admission needs, in the ClusterQueue the namespace's
LocalQueue names, a flavor with `nominalQuota` left for every resource the pods ask for
(`nvidia.com/gpu` for a legacy pod, the logical resource its DeviceClass is mapped to for claims,
pkg/dra/claims.go). Borrowing within a cohort and preemption are not modelled.
"""

from __future__ import annotations

from typing import Any

from gpuplatform.kueue.render import kueue_configuration_handoff
from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.simulate.model import Workload
from gpuplatform.simulate.world import World

__all__ = ["KUEUE_SUSPENDED", "kueue_objects", "kueue_refusal"]

KUEUE_SUSPENDED = "Kueue keeps it suspended"
"""How a refusal by Kueue starts: `workload-disrupted` counts it even for a workload the wave moves."""


def _local_queue(world: World, w: Workload) -> str | None:
    """The LocalQueue a spec workload is submitted to (its `queue`); None: Kueue leaves it alone."""
    if w.origin != "spec":
        return None
    return next(
        (
            x.queue
            for x in world.plan.platform.workloads
            if x.name == w.workload and x.namespace == w.namespace and x.queue is not None
        ),
        None,
    )


def _queue_of(world: World, w: Workload) -> dict[str, Any] | None:
    """The applied ClusterQueue the workload's LocalQueue names (None: not queued, or its LocalQueue is
    not applied yet: before the replay's first wave the cluster's own queues admit it)."""
    name = _local_queue(world, w)
    if name is None:
        return None
    local = world.cluster.objects.get(f"LocalQueue/{w.namespace}/{name}")
    if local is None:
        return None
    name = str(local["spec"]["clusterQueue"])
    return world.cluster.objects.get(f"ClusterQueue//{name}", {"metadata": {"name": name}, "spec": {}})


def _quota(queue: dict[str, Any], resource: str) -> int:
    return sum(
        int(r["nominalQuota"])
        for group in queue["spec"].get("resourceGroups") or []
        for flavor in group.get("flavors") or []
        for r in flavor.get("resources") or []
        if r.get("name") == resource
    )


def _queued(world: World, w: Workload) -> bool:
    return _local_queue(world, w) is not None


def _resource(world: World, w: Workload) -> str | None:
    """What Kueue counts the pod as; None when its class is not mapped (the Workload is inadmissible)."""
    if w.kind != "claim":
        return GPU_RESOURCE
    kueue = world.plan.platform.kueue
    assert kueue is not None
    handoff = kueue_configuration_handoff(world.plan, world.plan.wave(world.target))
    mapped = [] if handoff is None else handoff["spec"]["resources"]["deviceClassMappings"]
    return next((m["name"] for m in mapped if w.device_class in m["deviceClassNames"]), None)


def kueue_refusal(world: World, w: Workload) -> str:
    """Why Kueue keeps `w` suspended ('' when it is admitted or not queued)."""
    if world.plan.platform.kueue is None or not _queued(world, w):
        return ""
    queue = _queue_of(world, w)
    if queue is None:
        return ""
    name = queue["metadata"]["name"]
    resource = _resource(world, w)
    if resource is None:
        return f"{KUEUE_SUSPENDED}: DeviceClass {w.device_class} is not mapped in its DRA configuration"
    used = sum(
        o.gpus
        for o in world.cluster.workloads
        if o is not w
        and o.phase in ("running", "restarting")
        and _queued(world, o)
        and _resource(world, o) == resource
        and (_queue_of(world, o) or {}).get("metadata", {}).get("name") == name
    )
    free = _quota(queue, resource) - used
    if w.gpus > free:
        return f"{KUEUE_SUSPENDED}: ClusterQueue {name} has {max(free, 0)} {resource} free, the pod asks for {w.gpus}"
    return ""


def kueue_objects(world: World) -> dict[str, list[dict[str, Any]]]:
    """The applied ClusterQueues (active), LocalQueues and ResourceFlavors, and a Kueue Workload per
    queued spec workload, as a snapshot reads them: admitted once its pod runs, else pending with
    Kueue's reason."""
    queues = [
        {**o, "status": {"conditions": [{"type": "Active", "status": "True", "reason": "Ready"}]}}
        for k, o in sorted(world.cluster.objects.items())
        if k.startswith("ClusterQueue//")
    ]
    workloads = []
    for w in world.cluster.workloads:
        if world.plan.platform.kueue is None or not _queued(world, w) or _queue_of(world, w) is None:
            continue
        container: dict[str, Any] = {"name": w.name}
        spec: dict[str, Any] = {"containers": [container]}
        if w.kind == "claim":
            container["resources"] = {"claims": [{"name": "gpu"}]}
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": w.template}]
        else:
            container["resources"] = {"requests": {GPU_RESOURCE: str(w.gpus)}}
        admitted = w.phase in ("running", "restarting", "terminating", "stuck-terminating", "done")
        condition = (
            {"type": "Admitted", "status": "True", "reason": "Admitted"}
            if admitted
            else {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": w.reason}
        )
        workloads.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {"name": f"job-{w.name}", "namespace": w.namespace},
                "spec": {"podSets": [{"name": "main", "count": 1, "template": {"spec": spec}}]},
                "status": {"conditions": [condition]},
            }
        )
    applied = sorted(world.cluster.objects.items())
    return {
        "clusterqueues": queues,
        "localqueues": [o for k, o in applied if k.startswith("LocalQueue/")],
        "resourceflavors": [o for k, o in applied if k.startswith("ResourceFlavor/")],
        "workloads": workloads,
    }
