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

A pool's `selector` adds its `matchLabels` and `matchExpressions` to the provisioner's label, with
the meaning of Kubernetes label selectors (apimachinery `pkg/labels/selector.go`: `NotIn` and
`DoesNotExist` match a node without the label). `overlap` decides from two selectors alone whether
one node could satisfy both.
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
    "Requirement",
    "overlap",
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


Requirement = tuple[str, str, tuple[str, ...]]
"""(key, operator, values) of a `matchExpressions` item: In, NotIn, Exists, DoesNotExist."""


def _holds(req: Requirement, labels: dict[str, Any]) -> bool:
    key, op, values = req
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return labels.get(key) not in values
    return (key in labels) == (op == "Exists")


def _kubectl_requirement(req: Requirement) -> str:
    key, op, values = req
    if op in ("In", "NotIn"):
        return f"{key} {op.lower()} ({','.join(values)})"
    return key if op == "Exists" else f"!{key}"


@dataclass(frozen=True)
class PoolSelector:
    """The nodes of one pool, as the cluster knows them: by name, or by labels (all must match)."""

    pool: str
    kind: str
    """`static`, `karpenter`, `node-group` or `cluster-api`."""
    names: tuple[str, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[Requirement, ...] = ()
    """Set-based requirements of the pool's `selector`, on top of `labels`."""
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
        return (
            bool(self.labels)
            and all(labels.get(k) == v for k, v in self.labels)
            and all(_holds(r, labels) for r in self.expressions)
        )

    def member_labels(self) -> dict[str, str]:
        """Labels that make a node a member (a simulated or example node): `labels`, the first value
        of each `In`, `true` for `Exists`; `NotIn` and `DoesNotExist` hold on a node without the key."""
        labels = dict(self.labels)
        for key, op, values in self.expressions:
            if op in ("In", "Exists"):
                labels[key] = values[0] if values else "true"
        return labels

    def found(self, nodes: Iterable[dict[str, Any]]) -> list[str]:
        """Names of the nodes of `nodes` that belong to the pool, sorted."""
        return sorted(str(n["metadata"]["name"]) for n in nodes if self.matches(n))

    def kubectl_args(self) -> list[str]:
        """Arguments that make `kubectl get nodes` (or `taint nodes`, `drain`…) act on exactly these nodes."""
        if self.names:
            return list(self.names)
        terms = [f"{k}={v}" for k, v in self.labels] + [_kubectl_requirement(r) for r in self.expressions]
        return ["-l", ",".join(terms)]

    def describe(self) -> str:
        """The selection in words, for findings and runbooks."""
        if self.names:
            return "nodes " + ", ".join(self.names)
        if self.labels:
            return "nodes labelled " + self.kubectl_args()[1]
        return "no nodes (the spec names neither nodes nor labels for this pool)"

    def node_selector_term(self) -> dict[str, Any]:
        """A `nodeSelectorTerms[]` item selecting the pool's nodes (for pod node affinity)."""
        if self.names:
            return {"matchFields": [{"key": "metadata.name", "operator": "In", "values": list(self.names)}]}
        exprs = [{"key": k, "operator": "In", "values": [v]} for k, v in self.labels]
        exprs += [
            {"key": k, "operator": op, "values": list(vs)} if vs else {"key": k, "operator": op}
            for k, op, vs in self.expressions
        ]
        return {"matchExpressions": exprs}

    def as_data(self) -> dict[str, Any]:
        """The selector as JSON for the gate scripts' jq programs."""
        return {
            "name": self.pool,
            "kind": self.kind,
            "names": list(self.names),
            "labels": dict(self.labels),
            "expressions": [{"key": k, "operator": op, "values": list(vs)} for k, op, vs in self.expressions],
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
    expressions: tuple[Requirement, ...] = ()
    if pool.selector is not None and labels:
        labels |= pool.selector.match_labels
        expressions = tuple((r.key, r.operator, r.values) for r in pool.selector.match_expressions)
    return PoolSelector(
        pool.name,
        p.kind,
        labels=tuple(sorted(labels.items())),
        expressions=expressions,
        min_nodes=p.min_nodes,
    )


def _requirements(sel: PoolSelector) -> list[Requirement]:
    return [(k, "In", (v,)) for k, v in sel.labels] + list(sel.expressions)


def _excludes(a: Requirement, b: Requirement) -> bool:
    """Whether no label value satisfies both requirements on one key."""
    (_, op_a, va), (_, op_b, vb) = a, b
    ops = {op_a, op_b}
    if ops == {"In"}:
        return not set(va) & set(vb)
    if ops == {"In", "NotIn"}:
        allowed, banned = (va, vb) if op_a == "In" else (vb, va)
        return set(allowed) <= set(banned)
    if "DoesNotExist" in ops:
        return bool(ops & {"In", "Exists"})
    return False


def overlap(a: PoolSelector, b: PoolSelector) -> str | None:
    """What a node in both pools would carry, or None when no node can be in both.

    By names: the shared names. By labels: the selectors are disjoint when some key has requirements
    no one value meets (different `In` values, a value one requires and the other excludes, a label
    one requires and the other forbids); otherwise a node with every required label is in both.
    A name list against a label selector is undecidable from the spec alone (None: the gates' node
    coverage and a snapshot judge it).
    """
    if a.names or b.names:
        shared = sorted(set(a.names) & set(b.names))
        return f"nodes {', '.join(shared)}" if shared else None
    if not a.labels or not b.labels:
        return None
    ra, rb = _requirements(a), _requirements(b)
    if any(x[0] == y[0] and _excludes(x, y) for x in ra for y in rb):
        return None
    terms = sorted({f"{k}={v}" for k, v in a.labels + b.labels})
    terms += sorted({_kubectl_requirement(r) for r in a.expressions + b.expressions})
    return "a node labelled " + ",".join(terms)


def pool_selectors(platform: Platform) -> dict[str, PoolSelector]:
    """Every pool's selector, by pool name."""
    return {pool.name: pool_selector(pool) for pool in platform.node_pools}
