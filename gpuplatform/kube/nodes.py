"""Node selection and taints the way the scheduler reads them.

`node_selector_matches` follows k8s.io/component-helpers scheduling/corev1/nodeaffinity
(terms are ORed, requirements ANDed; `matchFields` knows only `metadata.name`);
`tolerates` follows core/v1 `Toleration.ToleratesTaint`, which
k8s.io/dynamic-resource-allocation resourceclaim.ToleratesTaint mirrors for device taints
(kubernetes-1.36.1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "INSTANCE_TYPE_LABEL",
    "GroupSelector",
    "Node",
    "Taint",
    "Toleration",
    "node_selector_matches",
    "taints_tolerated",
    "tolerates",
    "well_known_labels",
]

Taint = dict[str, str]
Toleration = dict[str, Any]


#: The cloud instance type of a node (k8s.io/api core/v1 well_known_labels.go `LabelInstanceTypeStable`),
#: set by the cloud provider's node controller (or the kubelet's, with an in-tree provider).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


def well_known_labels(node: str, instance_type: str | None = None) -> dict[str, str]:
    """The labels the kubelet puts on every node it registers (kubernetes/kubernetes
    pkg/kubelet/kubelet_node_status.go `initialNode`: `kubernetes.io/hostname`, `kubernetes.io/os`,
    `kubernetes.io/arch`; names in k8s.io/api core/v1 well_known_labels.go), and the instance type
    when the pool declares one (`NodePool.instanceType`). Every GPU product of the catalog is a
    PCIe/SXM part of an x86-64 server, hence `amd64`."""
    labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": node, "kubernetes.io/os": "linux"}
    if instance_type is not None:
        labels[INSTANCE_TYPE_LABEL] = instance_type
    return dict(sorted(labels.items()))


@dataclass(frozen=True)
class Node:
    """A node: its name, labels and taints."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, Any], ...] = ()


def _requirement(req: Mapping[str, Any], value: str | None) -> bool:
    op, values = req.get("operator"), list(req.get("values") or ())
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            left, right = int(value), int(values[0])
        except ValueError:
            return False
        return left > right if op == "Gt" else left < right
    return False


def _term(term: Mapping[str, Any], node: Node) -> bool:
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not expressions and not fields:
        return False
    if not all(_requirement(r, node.labels.get(str(r.get("key")))) for r in expressions):
        return False
    return all(r.get("key") == "metadata.name" and _requirement(r, node.name) for r in fields)


def node_selector_matches(selector: Mapping[str, Any], node: Node) -> bool:
    """A v1 NodeSelector: some term whose requirements all hold."""
    return any(_term(t, node) for t in selector.get("nodeSelectorTerms") or ())


class GroupSelector:
    """A v1 NodeSelector asked of groups of nodes that share their labels: whether it selects some
    node of a group, by `node_selector_matches`'s own rule (`_term`), tried on one node of the group
    for a term that reads no name, else on the names its `In` on `metadata.name` lists (a probe
    pinned to a pool's nodes is asked of every group)."""

    def __init__(self, selector: Mapping[str, Any]) -> None:
        self._terms = [(term, _named(term)) for term in selector.get("nodeSelectorTerms") or ()]

    def selects_some(self, names: Sequence[str], labels: Mapping[str, str]) -> bool:
        """Whether some node of `names`, each carrying `labels`, is selected."""
        for term, named in self._terms:
            if not term.get("matchFields"):
                candidates: Sequence[str] = names[:1]
            elif named is None:
                candidates = names
            else:
                candidates = [n for n in names if n in named]
            if any(_term(term, Node(n, labels)) for n in candidates):
                return True
        return False


def _named(term: Mapping[str, Any]) -> frozenset[str] | None:
    """The only names a term can select (its first `In` on `metadata.name`), None when any."""
    for r in term.get("matchFields") or ():
        if r.get("key") == "metadata.name" and r.get("operator") == "In":
            return frozenset(str(v) for v in r.get("values") or ())
    return None


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """One toleration against one taint: effect, key, then operator Exists or Equal."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def taints_tolerated(
    taints: Sequence[Mapping[str, Any]],
    tolerations: Sequence[Mapping[str, Any]],
    effects: tuple[str, ...] = ("NoSchedule", "NoExecute"),
) -> bool:
    """Every taint with one of `effects` is tolerated (the scheduler's TaintToleration filter)."""
    return all(
        any(tolerates(t, taint) for t in tolerations) for taint in taints if taint.get("effect") in effects
    )
