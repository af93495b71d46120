"""How a provisioner grows its pool: from a floor of nodes up to a limit, for the pods it can place.

Karpenter (kubernetes-sigs/karpenter v1.14.1):

- `NodePool.spec.limits` is a ResourceList (pkg/apis/v1/nodepool.go `Limits`). The scheduler starts
  from the limits minus the capacity of the pool's existing nodes (pkg/controllers/provisioning/
  scheduling/scheduler.go `updateRemainingResources`), creates no NodeClaim once `nodes` is
  exhausted and drops instance types whose capacity exceeds what remains (`addToNewNodeClaim`,
  `filterByRemainingResources`). So `nodes: N` allows N nodes and `nvidia.com/gpu: G` allows
  G / (GPUs per node) nodes; `cpu`, `memory` and other resources depend on instance types the spec
  does not describe, so a pool bounded by them is not bounded here.
- It provisions only for a pod that tolerates the NodePool's taints (`NodeClaim.CanAdd`:
  `Taints.ToleratesPod`) and whose node selector labels the NodePool defines: a label key the
  NodePool neither sets nor requires is refused (pkg/scheduling/requirements.go `Compatible`).
  The labels GPU Feature Discovery adds after a node starts (`nvidia.com/gpu.product`) are not
  among them unless the NodePool's template sets them.
- It ignores pods with ResourceClaims while IGNORE_DRA_REQUESTS is true, the default
  (pkg/operator/options/options.go; `Scheduler.add` answers "pod has Dynamic Resource Allocation
  requirements that are not yet supported by Karpenter"), so by default it adds no node for a
  claim pod.

Cluster Autoscaler (node groups, cluster-api): scales a group up to its max size for pods that fit
a node built from an existing node of the group (so every label of those nodes counts), and
handles DRA objects (`--enable-dynamic-resource-allocation`, locked on since cluster-autoscaler
1.35: kubernetes/autoscaler cluster-autoscaler/config/flags/flags.go).

Not modelled: NodePool weights and static (`replicas`) NodePools, instance type choice (every new
node is the pool's modelled node), scale-up from zero without a template node, consolidation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuplatform.cel.quantity import QuantityError, parse_quantity
from gpuplatform.gates.nodes import PROVISIONER_LABELS, pool_selector
from gpuplatform.kube.nodes import INSTANCE_TYPE_LABEL, taints_tolerated
from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.model.nodes import NodePool
from gpuplatform.model.platform import Platform
from gpuplatform.render.nodes import node_labels

__all__ = ["Growth", "pool_growth"]


@dataclass(frozen=True)
class Growth:
    """A provisioner pool's elasticity: `floor` nodes exist, the provisioner may add up to `limit`."""

    kind: str
    name: str
    floor: int
    limit: int | None
    """Most nodes in all; None when no declared limit bounds the pool."""
    caveat: str = ""
    """Why the verdict of a placement that grows the pool depends on the provisioner ("" = none)."""
    claims: bool = False
    """Adds nodes for pods with ResourceClaims."""
    template: Mapping[str, Mapping[str, str]] | None = field(default=None)
    """Mode -> labels the provisioner knows a new node will have (Karpenter's NodePool template);
    None: every label of the group's nodes (Cluster Autoscaler's template node)."""

    @property
    def owner(self) -> str:
        return f"{self.kind} {self.name}"

    def headroom(self, existing: int) -> int | None:
        """Nodes the provisioner may still add to `existing` ones; None when unbounded."""
        return None if self.limit is None else max(0, self.limit - existing)

    def refusal(
        self,
        mode: str,
        labels: Mapping[str, str],
        taints: Sequence[Mapping[str, Any]],
        selector: Mapping[str, str],
        tolerations: Sequence[Mapping[str, Any]],
        claims: bool,
    ) -> str:
        """Why the provisioner adds no node for such a pod ("" when it would)."""
        if claims and not self.claims:
            return f"{self.owner} adds no nodes for pods with ResourceClaims (IGNORE_DRA_REQUESTS)"
        if not taints_tolerated(taints, tolerations):
            return f"the pod does not tolerate the taints of {self.owner}'s nodes"
        known = labels if self.template is None else self.template[mode]
        missing = sorted(k for k, v in selector.items() if known.get(k) != v)
        if missing:
            return f"{self.owner}'s nodes are not known to carry {', '.join(missing)} as selected"
        return ""


def _limit(pool: NodePool) -> tuple[int | None, str]:
    """The most nodes the declared limits allow, and what they leave to the provisioner."""
    p = pool.provisioner
    assert p is not None
    bounds = [] if p.max_nodes is None else [p.max_nodes]
    unknown = []
    for resource, raw in sorted(p.limits.items()):
        try:
            value = int(parse_quantity(str(raw)).value)
        except QuantityError:
            unknown.append(resource)
            continue
        if resource == "nodes":
            bounds.append(value)
        elif resource == GPU_RESOURCE:
            bounds.append(value // pool.gpus_per_node)
        else:
            unknown.append(resource)
    caveat = f"its limits on {', '.join(unknown)} depend on instance types" if unknown else ""
    if not bounds:
        return None, caveat or "no maxNodes or limits declared"
    return min(bounds), caveat


def pool_growth(platform: Platform, pool: NodePool) -> Growth | None:
    """How the pool's provisioner adds nodes; None for a static pool."""
    p = pool.provisioner
    if p is None:
        return None
    limit, caveat = _limit(pool)
    claims = p.kind != "karpenter" if p.scales_for_claims is None else p.scales_for_claims
    template = None
    if p.kind == "karpenter":
        own = {PROVISIONER_LABELS[("karpenter", None)]: p.name, **pool_selector(pool).member_labels()}
        if pool.instance_type is not None:
            own[INSTANCE_TYPE_LABEL] = pool.instance_type
        template = {m: {**node_labels(platform, pool, m), **own} for m in ("legacy", "dra")}
    floor = p.min_nodes if limit is None else min(p.min_nodes, limit)
    return Growth(p.kind, p.name, floor, limit, caveat, claims, template)
