"""The fleet the rehearsal registers: the spec's pools, node by node, as the model first sees them.

Each node is what `simulate/groups.py` `pool_group` says a pool's node carries when the migration
starts (the kubelet's well-known labels, its group template's, NFD's, a MIG pool's applied layout)
plus GPU Feature Discovery's product, count and MIG capability, the same keys the model's snapshot
writes (`simulate/snapshot_nodes.py`). A provisioner pool has the `minNodes` its gates count, at
least one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuplatform.inventory.catalog import lookup_product
from gpuplatform.kube.nodes import well_known_labels
from gpuplatform.labels import GPU_COUNT_LABEL, GPU_PRODUCT_LABEL, MIG_CAPABLE_LABEL
from gpuplatform.model.nodes import NodePool
from gpuplatform.plan.waves import Plan
from gpuplatform.simulate.groups import mig_capable, pool_group, provisioned_name

__all__ = [
    "SYSTEM_NODE",
    "FleetNode",
    "fleet_nodes",
    "node_manifest",
    "pool_node",
    "pool_node_names",
    "system_node",
]

#: The cluster's one node without GPUs, where what tolerates no GPU pool's taint runs (the gate and
#: switch Jobs, the operators' controllers): every cluster has one, and in a final cutover every GPU
#: node carries a DRA taint those Jobs do not tolerate.
SYSTEM_NODE = "rehearsal-system-01"


@dataclass(frozen=True)
class FleetNode:
    """One GPU node: its pool, GPUs and MIG layout, and the labels it registers with."""

    name: str
    pool: str
    product: str
    gpus: int
    mig_layout: tuple[str, ...]
    labels: dict[str, str] = field(hash=False, compare=False)
    taints: tuple[dict[str, str], ...] = field(default=(), hash=False, compare=False)
    """The taints it registers with (a provisioner's node is born with its template's)."""


def pool_node_names(pool: NodePool) -> list[str]:
    """The pool's nodes: its static names, or `<pool>-node-<i>` for its `minNodes` (at least one)."""
    if pool.nodes:
        return list(pool.nodes)
    count = max(1, pool.provisioner.min_nodes) if pool.provisioner is not None else 0
    return [provisioned_name(pool.name, i) for i in range(count)]


def _gfd(pool: NodePool) -> dict[str, str]:
    product = lookup_product(pool.product)
    return {
        GPU_PRODUCT_LABEL: product.product_name.replace(" ", "-"),
        GPU_COUNT_LABEL: str(pool.gpus_per_node),
        MIG_CAPABLE_LABEL: str(mig_capable(pool.product)).lower(),
    }


def fleet_nodes(plan: Plan, *, registered: bool = False) -> list[FleetNode]:
    """Every node of the pools that exist in the first wave (a takeover's group is created later)."""
    return [
        pool_node(pool, name, registered=registered)
        for pool in plan.platform.node_pools
        if plan.waves[0].present(pool.name)
        for name in pool_node_names(pool)
    ]


def pool_node(pool: NodePool, name: str, *, registered: bool = False) -> FleetNode:
    """Node `name` of `pool`, labelled as `fleet_nodes` says."""
    group = pool_group(pool, pool.name, [name], registered=registered)
    labels = group.labels | ({} if registered else _gfd(pool))
    return FleetNode(name, pool.name, pool.product, pool.gpus_per_node, pool.mig_layout, labels)


def system_node() -> FleetNode:
    """The node without GPUs: the kubelet's labels only."""
    return FleetNode(SYSTEM_NODE, "", "", 0, (), well_known_labels(SYSTEM_NODE))


def node_manifest(node: FleetNode, kubelet_port: int) -> dict[str, Any]:
    """The Node a kubelet registers (`initialNode`): labels, capacity, Ready, its address and port."""
    capacity = {"cpu": "64", "memory": "1056457256Ki", "pods": "110", "ephemeral-storage": "1Ti"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": dict(node.labels)},
        "spec": {"taints": [dict(t) for t in node.taints]} if node.taints else {},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "addresses": [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": node.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "rehearsal kubelet is ready",
                }
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "",
                "containerRuntimeVersion": "rehearsal://1",
                "kernelVersion": "",
                "osImage": "",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kubeProxyVersion": "",
            },
        },
    }
