"""Kueue quotas in `capacity`: queued Jobs run only as far as their ClusterQueue admits them.

A spec workload with a `queue` (its `kueue.x-k8s.io/queue-name`) asks that LocalQueue's ClusterQueue for `nvidia.com/gpu` until its `movesIn` wave and for the logical resource after; the
queue admits what the wave's rendered quota on that resource holds (`plan.kueue.queue_quotas`).
What it does not admit stays suspended: the wave does not fit, whatever the nodes could hold.
"""

from __future__ import annotations

from gpuplatform.kueue.plan import queue_quotas, workload_queue
from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.plan.waves import Plan, WaveState

__all__ = ["kueue_shortfalls"]


def kueue_shortfalls(plan: Plan, state: WaveState) -> tuple[str, ...]:
    """Per ClusterQueue and resource, the queued GPUs its quota in `state` leaves suspended."""
    p = plan.platform
    kueue = p.kueue
    if kueue is None:
        return ()
    out: list[str] = []
    for queue in kueue.cluster_queues:
        quotas = queue_quotas(p, kueue, queue, state)
        asked: dict[str, int] = {}
        for i, w in enumerate(p.workloads):
            admitter = workload_queue(p, w)
            if admitter is None or admitter.name != queue.name:
                continue
            resource = kueue.resource_name(p.domain) if i in state.workloads else GPU_RESOURCE
            asked[resource] = asked.get(resource, 0) + w.gpus * w.replicas  # replicas 0: none runs
        for resource, n in sorted(asked.items()):
            have = quotas.get(resource, 0)
            if n > have:
                out.append(
                    f"Kueue: ClusterQueue {queue.name} admits {have} {resource}, its queued Jobs ask for "
                    f"{n}: {n - have} stay suspended"
                )
    return tuple(out)
