"""Where each ClusterQueue's GPU quota is in a wave: a pool's quota on `nvidia.com/gpu` while the pool
is legacy, on Kueue's logical resource once it is DRA (read by `kueue/render.py`, `plan`, the rules
and `capacity`)."""

from __future__ import annotations

from gpuplatform.kueue.model import ClusterQueue, Kueue
from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.model.platform import Platform
from gpuplatform.model.workloads import Workload
from gpuplatform.plan.waves import WaveState

__all__ = ["pool_resource", "queue_quotas", "wave_quotas", "workload_queue"]


def pool_resource(platform: Platform, kueue: Kueue, state: WaveState, pool: str) -> str:
    """The resource the pool's quota is on in `state`."""
    return kueue.resource_name(platform.domain) if state.pool_modes[pool] == "dra" else GPU_RESOURCE


def queue_quotas(platform: Platform, kueue: Kueue, queue: ClusterQueue, state: WaveState) -> dict[str, int]:
    """The queue's GPUs per resource in `state`: each pool's quota on the resource its allocator serves."""
    out: dict[str, int] = {}
    for pool, gpus in queue.quotas.items():
        resource = pool_resource(platform, kueue, state, pool)
        out[resource] = out.get(resource, 0) + gpus
    return out


def wave_quotas(platform: Platform, state: WaveState) -> dict[str, dict[str, int]]:
    """ClusterQueue -> resource -> GPUs in `state` (empty without `spec.kueue`)."""
    kueue = platform.kueue
    if kueue is None:
        return {}
    return {
        q.name: dict(sorted(queue_quotas(platform, kueue, q, state).items())) for q in kueue.cluster_queues
    }


def workload_queue(platform: Platform, workload: Workload) -> ClusterQueue | None:
    """The ClusterQueue that admits `workload`: the one whose LocalQueue in the workload's namespace
    its `queue` names (None: the workload is not queued, Kueue leaves it alone)."""
    if platform.kueue is None or workload.queue is None:
        return None
    tenants = {t.name for t in platform.tenants if t.ns == workload.namespace}
    return next(
        (
            q
            for q in platform.kueue.cluster_queues
            if q.local_queue_name == workload.queue and tenants & set(q.tenants)
        ),
        None,
    )
