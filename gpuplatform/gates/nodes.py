"""How the cluster knows a pool's nodes: the one place that turns a pool into a node selector.

Static pools are found by their names, provisioner pools by the label their provisioner puts on
every node it creates (or the pool's own `nodeLabels`). Gate scripts, the offline evaluator,
rendered pod affinities and the runbooks all select nodes through `pool_selector`.

Sources: Karpenter `pkg/apis/v1/labels.go` (kubernetes-sigs/karpenter v1.14.1, `NodePoolLabelKey =
karpenter.sh/nodepool`); the clouds' node-group labels (EKS `eks.amazonaws.com/nodegroup`, GKE
`cloud.google.com/gke-nodepool`, AKS `kubernetes.azure.com/agentpool`). Cluster API syncs only
`node-role.kubernetes.io/`, `node-restriction.kubernetes.io` and `node.cluster.x-k8s.io` labels
from a Machine to its Node (cluster-api docs/proposals/20220927-label-sync-between-machine-and-nodes.md),
so `cluster.x-k8s.io/deployment-name` is not on Nodes: a cluster-api pool needs `nodeLabels`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gpuplatform.model.nodes import NodePool
from gpuplatform.model.platform import Platform

__all__ = [
    "PROVISIONER_LABELS",
    "PoolSelector",
    "pool_selector",
    "pool_selectors",
]

#: (provisioner kind, cloud) -> the label whose value is the provisioner's name on every node it
#: made. cluster-api has none: its Nodes carry no MachineDeployment label (see above).
PROVISIONER_LABELS: dict[tuple[str, str | None], str] = {
    ("karpenter", None): "karpenter.sh/nodepool",
    ("node-group", "eks"): "eks.amazonaws.com/nodegroup",
    ("node-group", "gke"): "cloud.google.com/gke-nodepool",
    ("node-group", "aks"): "kubernetes.azure.com/agentpool",
}


@dataclass(frozen=True)
class PoolSelector:
    """The nodes of one pool, as the cluster knows them: by name, or by labels (all must match)."""

    pool: str
    kind: str
    """`static`, `karpenter`, `node-group` or `cluster-api`."""
    names: tuple[str, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    min_nodes: int = 0
    """How many nodes must be found for the pool's gates to judge it (fewer: unknown)."""

    @property
    def resolvable(self) -> bool:
        """False when the spec gives no way to find the pool's nodes (a node group without a cloud)."""
        return bool(self.names or self.labels)

    def matches(self, node: dict[str, Any]) -> bool:
        """Whether a `kubectl get nodes -o json` item belongs to the pool."""
        meta = node.get("metadata") or {}
        if self.names:
            return meta.get("name") in self.names
        labels = meta.get("labels") or {}
        return bool(self.labels) and all(labels.get(k) == v for k, v in self.labels)

    def found(self, nodes: Iterable[dict[str, Any]]) -> list[str]:
        """Names of the nodes of `nodes` that belong to the pool, sorted."""
        return sorted(str(n["metadata"]["name"]) for n in nodes if self.matches(n))

    def kubectl_args(self) -> list[str]:
        """Arguments that make `kubectl get nodes` (or `taint nodes`, `drain`…) act on exactly these nodes."""
        if self.names:
            return list(self.names)
        return ["-l", ",".join(f"{k}={v}" for k, v in self.labels)]

    def describe(self) -> str:
        """The selection in words, for findings and runbooks."""
        if self.names:
            return "nodes " + ", ".join(self.names)
        if self.labels:
            return "nodes labelled " + ",".join(f"{k}={v}" for k, v in self.labels)
        return "no nodes (the spec names neither nodes nor labels for this pool)"

    def node_selector_term(self) -> dict[str, Any]:
        """A `nodeSelectorTerms[]` item selecting the pool's nodes (for pod node affinity)."""
        if self.names:
            return {"matchFields": [{"key": "metadata.name", "operator": "In", "values": list(self.names)}]}
        return {"matchExpressions": [{"key": k, "operator": "In", "values": [v]} for k, v in self.labels]}

    def as_data(self) -> dict[str, Any]:
        """The selector as JSON for the gate scripts' jq programs."""
        return {
            "name": self.pool,
            "kind": self.kind,
            "names": list(self.names),
            "labels": dict(self.labels),
            "minNodes": self.min_nodes,
            "describe": self.describe(),
        }


def pool_selector(pool: NodePool) -> PoolSelector:
    """The selector of `pool`: its names, its `nodeLabels`, or its provisioner's own label."""
    p = pool.provisioner
    if p is None:
        return PoolSelector(pool.name, "static", names=tuple(pool.nodes), min_nodes=len(pool.nodes))
    labels: dict[str, str] = dict(p.node_labels)
    own = PROVISIONER_LABELS.get((p.kind, p.cloud))
    if not labels and own is not None:
        labels = {own: p.name}
    return PoolSelector(pool.name, p.kind, labels=tuple(sorted(labels.items())), min_nodes=p.min_nodes)


def pool_selectors(platform: Platform) -> dict[str, PoolSelector]:
    """Every pool's selector, by pool name."""
    return {pool.name: pool_selector(pool) for pool in platform.node_pools}
