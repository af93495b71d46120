"""How long a HelmRelease of the DRA driver may take: its kubelet plugin rolls out in batches.

The kubelet plugin DaemonSet replaces `maxUnavailable` nodes' pods at a time (the rendered
`kubeletPlugin.updateStrategy`, default 1); a percentage is rounded up, as the DaemonSet controller
does (kubernetes pkg/controller/daemon/util `UnavailableCount`, `GetScaledValueFromIntOrPercent`
with roundUp). Helm waits for the whole rollout inside `spec.timeout` (helm-controller v1.6.3
api/v2 `Timeout`, default 5m); a timeout shorter than the rollout fails a healthy upgrade.
"""

from __future__ import annotations

import math

from gpuplatform.charts.rollout import KUBELET_PLUGIN_STARTUP_SECONDS
from gpuplatform.model.nodes import NodePool
from gpuplatform.plan.waves import Plan, WaveState

__all__ = ["dra_nodes", "driver_timeout_minutes", "rollout_batches"]


def _pool_nodes(pool: NodePool) -> int:
    """A static pool's nodes; a provisioner's most nodes (`maxNodes`, Karpenter `limits.nodes`),
    else the nodes it always has (`minNodes`)."""
    if pool.provisioner is None:
        return len(pool.nodes)
    prov = pool.provisioner
    limit = prov.limits.get("nodes")
    bounds = [b for b in (prov.max_nodes, limit if isinstance(limit, int) else None) if b is not None]
    return min(bounds) if bounds else prov.min_nodes


def dra_nodes(plan: Plan, state: WaveState) -> int:
    """The nodes the kubelet plugin runs on in `state`: every node of its DRA pools."""
    return sum(_pool_nodes(plan.pools[name]) for name in state.dra_pools)


def rollout_batches(nodes: int, max_unavailable: int | str) -> int:
    """How many rounds of `max_unavailable` nodes a rolling update of `nodes` takes."""
    if nodes == 0:
        return 0
    if isinstance(max_unavailable, str):
        step = math.ceil(nodes * int(max_unavailable.rstrip("%")) / 100)
    else:
        step = max_unavailable
    return math.ceil(nodes / max(step, 1))


def driver_timeout_minutes(plan: Plan, state: WaveState, nodes: int | None = None) -> int:
    """The DRA driver release's `spec.timeout`: `delivery.timeoutMinutes` for the rest of the
    release, plus each rollout batch's startup budget."""
    p = plan.platform
    count = dra_nodes(plan, state) if nodes is None else nodes
    batches = rollout_batches(count, p.dra_driver.kubelet_plugin_max_unavailable)
    return p.delivery.timeout_minutes + math.ceil(batches * KUBELET_PLUGIN_STARTUP_SECONDS / 60)
