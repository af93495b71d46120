"""Karpenter, emulated: the teams' NodePools of the spec's Karpenter pools, a NodeClaim per node, and
the drift that replaces a pool's nodes when the runbook patches its NodePool's template.

What it does follows kubernetes-sigs/karpenter v1.14.1:
- `pkg/controllers/nodepool/hash/controller.go`: each NodePool is annotated with the hash of its
  `spec.template` and the hash version (`pkg/apis/v1/nodepool.go` `Hash`: `requirements` and
  `resources` are `hash:"ignore"`, slices are sets, zero values are left out). The emulation hashes
  the same fields with the same equality, not the same digits.
- `pkg/controllers/nodeclaim/disruption/drift.go` `areStaticFieldsDrifted`: a NodeClaim whose hash
  differs from its NodePool's, at the same hash version, is `Drifted`.
- `pkg/controllers/disruption/drift.go`: drifted NodeClaims are disrupted within the NodePool's
  budget (the default, 10 % of its nodes rounded up: one at a time here), the replacement first.
  Upstream launches a replacement only for the pods that need one (`SimulateScheduling`), so an
  idle drifted node goes without one. The emulation replaces every drifted node by one node, as
  the product's model does (`simulate/manual.py` `_replace`), so that the pool keeps the
  `minNodes` its gates count.
- `pkg/controllers/nodeclaim/lifecycle/registration.go` `syncNode`: the new node carries its
  NodeClaim's labels (the template's and `karpenter.sh/nodepool`) and taints from the moment it
  registers. NFD and GPU Feature Discovery label it at once, as every node of the fleet.
- `pkg/controllers/node/termination/terminator`: the old node is tainted `karpenter.sh/disrupted`,
  its pods are evicted through the eviction API (a PodDisruptionBudget's refusal is retried on the
  next pass; DaemonSet pods stay), and once none is left the Node and its NodeClaim are deleted.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any

from gpuplatform.gates.nodes import pool_selector
from gpuplatform.model.nodes import NodePool
from gpuplatform.plan.waves import Plan
from gpuplatform.rehearse.client import Obj
from gpuplatform.rehearse.cluster import Rehearsal
from gpuplatform.rehearse.crds import crds_for
from gpuplatform.rehearse.drain import drain_step
from gpuplatform.rehearse.fleet import pool_node, pool_node_names
from gpuplatform.simulate.groups import provisioned_name

__all__ = ["KARPENTER_API", "Karpenter", "install_karpenter"]

KARPENTER_API = "karpenter.sh/v1"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
_HASH = "karpenter.sh/nodepool-hash"
_HASH_VERSION = "karpenter.sh/nodepool-hash-version"
#: `pkg/apis/v1/nodepool.go` `NodePoolHashVersion`.
HASH_VERSION = "v3"
#: `pkg/apis/v1/taints.go` `DisruptedNoScheduleTaint`.
DISRUPTED_TAINT = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
#: The teams' node class: Karpenter's core never reads it (the cloud provider does).
_NODE_CLASS = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
_MANAGER = "karpenter"


def _pruned(value: Any) -> Any:
    """`IgnoreZeroValue` and `ZeroNil`: empty values left out; `SlicesAsSets`: lists in a stable order."""
    if isinstance(value, dict):
        kept = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, "", {}, [], 0, False)}
    if isinstance(value, list):
        return sorted((_pruned(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def template_hash(nodepool: Obj) -> str:
    """The hash of the NodePool's `spec.template`, without the fields Karpenter's hash ignores."""
    template = json.loads(json.dumps(nodepool["spec"].get("template") or {}))
    spec = template.get("spec") or {}
    spec.pop("requirements", None)
    spec.pop("resources", None)
    text = json.dumps(_pruned(template), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _nodepool(pool: NodePool, name: str) -> Obj:
    """The team's NodePool as it runs before the migration: its nodes carry the pool's labels."""
    labels = pool_selector(pool).member_labels()
    labels.pop(NODEPOOL_LABEL, None)
    requirements = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
    if pool.instance_type:
        requirements.append(
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [pool.instance_type]}
        )
    template: Obj = {"spec": {"nodeClassRef": dict(_NODE_CLASS), "requirements": requirements}}
    if labels:
        template["metadata"] = {"labels": labels}
    return {
        "apiVersion": KARPENTER_API,
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": template,
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"},
        },
    }


def _claim_name(nodepool: str, node: str) -> str:
    return f"{nodepool}-{hashlib.sha256(node.encode()).hexdigest()[:5]}"


def _condition(kind: str, reason: str) -> Obj:
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


_LAUNCHED = [_condition(c, c) for c in ("Launched", "Registered", "Initialized", "Ready")]


@dataclass
class Karpenter:
    """The emulated controller of the platform's Karpenter pools; `reconcile` is one pass."""

    cluster: Rehearsal
    pools: dict[str, NodePool]
    """NodePool name -> the spec's pool it provisions."""
    launched: dict[str, int] = field(default_factory=dict)
    """NodePool name -> nodes launched so far (the next node's number)."""

    def claim(self, nodepool: Obj, node: str, hashed: str) -> Obj:
        """The NodeClaim of `node`, launched from `nodepool`'s template as it is now."""
        template = nodepool["spec"].get("template") or {}
        spec = template.get("spec") or {}
        name = nodepool["metadata"]["name"]
        return {
            "apiVersion": KARPENTER_API,
            "kind": "NodeClaim",
            "metadata": {
                "name": _claim_name(name, node),
                "labels": {**((template.get("metadata") or {}).get("labels") or {}), NODEPOOL_LABEL: name},
                "annotations": {_HASH: hashed, _HASH_VERSION: HASH_VERSION},
                "ownerReferences": [
                    {
                        "apiVersion": KARPENTER_API,
                        "kind": "NodePool",
                        "name": name,
                        "uid": nodepool["metadata"]["uid"],
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "nodeClassRef": spec.get("nodeClassRef") or dict(_NODE_CLASS),
                "requirements": spec.get("requirements") or [],
                **({"taints": spec["taints"]} if spec.get("taints") else {}),
            },
        }

    def adopt(self) -> None:
        """Create each pool's NodePool, and a NodeClaim for each of its running nodes."""
        for name, pool in self.pools.items():
            nodepool = self.cluster.client.create("NodePool", _nodepool(pool, name))
            nodes = pool_node_names(pool)
            self.launched[name] = len(nodes)
            for node in nodes:
                self._launch(nodepool, node, template_hash(nodepool))

    def _launch(self, nodepool: Obj, node: str, hashed: str) -> None:
        claim = self.cluster.client.create("NodeClaim", self.claim(nodepool, node, hashed))
        status = {"nodeName": node, "providerID": f"rehearsal://{node}", "conditions": _LAUNCHED}
        self.cluster.client.patch("NodeClaim", claim["metadata"]["name"], {"status": status}, status=True)

    def reconcile(self) -> bool:
        """Hash, drift, replace and terminate, once; True when anything was written."""
        client = self.cluster.client
        wrote = False
        claims = client.list("NodeClaim")
        nodes = {n["metadata"]["name"]: n for n in client.list("Node")}
        for nodepool in client.list("NodePool"):
            name = nodepool["metadata"]["name"]
            if name not in self.pools:
                continue
            hashed = template_hash(nodepool)
            annotations = nodepool["metadata"].get("annotations") or {}
            if annotations.get(_HASH) != hashed or annotations.get(_HASH_VERSION) != HASH_VERSION:
                patch = {"metadata": {"annotations": {_HASH: hashed, _HASH_VERSION: HASH_VERSION}}}
                client.patch("NodePool", name, patch)
                wrote = True
            mine = [c for c in claims if (c["metadata"].get("labels") or {}).get(NODEPOOL_LABEL) == name]
            wrote |= self._drift(mine, hashed)
            disrupted = [c for c in mine if _disrupted(nodes.get(_node_of(c)))]
            if disrupted:
                wrote |= self._terminate(disrupted[0], nodes)
            elif drifted := [c for c in mine if _drifted(c)]:
                self._replace(nodepool, drifted[0], hashed, nodes)
                wrote = True
        return wrote

    def _drift(self, claims: list[Obj], hashed: str) -> bool:
        """`Drifted` set on each claim of another hash, cleared on one of this hash."""
        wrote = False
        for claim in claims:
            annotations = claim["metadata"].get("annotations") or {}
            drifted = annotations.get(_HASH) != hashed and annotations.get(_HASH_VERSION) == HASH_VERSION
            if drifted == _drifted(claim):
                continue
            conditions = [
                c for c in (claim.get("status") or {}).get("conditions") or [] if c["type"] != "Drifted"
            ]
            if drifted:
                conditions.append(_condition("Drifted", "NodePoolDrifted"))
            self.cluster.client.patch(
                "NodeClaim", claim["metadata"]["name"], {"status": {"conditions": conditions}}, status=True
            )
            wrote = True
        return wrote

    def _replace(self, nodepool: Obj, claim: Obj, hashed: str, nodes: dict[str, Obj]) -> None:
        """A node launched from the template as it is now, then the drifted one tainted for termination."""
        name = nodepool["metadata"]["name"]
        pool = self.pools[name]
        node = provisioned_name(pool.name, self.launched[name])
        self.launched[name] += 1
        template = nodepool["spec"].get("template") or {}
        base = pool_node(pool, node)
        labels = {
            **base.labels,
            **((template.get("metadata") or {}).get("labels") or {}),
            NODEPOOL_LABEL: name,
        }
        taints = tuple(dict(t) for t in (template.get("spec") or {}).get("taints") or [])
        self.cluster.agents.register(replace(base, labels=labels, taints=taints))
        self._launch(nodepool, node, hashed)
        old = nodes.get(_node_of(claim))
        if old is not None:
            taints_now = list(old["spec"].get("taints") or [])
            self.cluster.client.patch(
                "Node", old["metadata"]["name"], {"spec": {"taints": [*taints_now, dict(DISRUPTED_TAINT)]}}
            )

    def _terminate(self, claim: Obj, nodes: dict[str, Obj]) -> bool:
        """Evict the disrupted node's pods; once none is left, delete it and its NodeClaim."""
        node = _node_of(claim)
        empty, wrote = drain_step(self.cluster.client, node)
        if not empty:
            return wrote
        if node in nodes:
            self.cluster.client.delete("Node", node)
        self.cluster.agents.forget(node)
        self.cluster.client.delete("NodeClaim", claim["metadata"]["name"])
        return True


def _node_of(claim: Obj) -> str:
    return str((claim.get("status") or {}).get("nodeName") or "")


def _drifted(claim: Obj) -> bool:
    return any(
        c["type"] == "Drifted" and c["status"] == "True"
        for c in (claim.get("status") or {}).get("conditions") or []
    )


def _disrupted(node: Obj | None) -> bool:
    return node is not None and any(
        t.get("key") == DISRUPTED_TAINT["key"] for t in node["spec"].get("taints") or []
    )


def install_karpenter(cluster: Rehearsal, plan: Plan, crds: dict[tuple[str, str], Obj]) -> list[str]:
    """Serve the NodePool and NodeClaim kinds (the upstream CRDs when `crds` has them), create the
    teams' NodePools with a NodeClaim per node, and put the controller in the cluster's loop; the
    NodePools' names (none when no pool is Karpenter's)."""
    first = plan.waves[0]
    pools = {
        p.provisioner.name: p
        for p in plan.platform.node_pools
        if p.provisioner is not None and p.provisioner.kind == "karpenter" and first.present(p.name)
    }
    if not pools:
        return []
    kinds = [{"apiVersion": KARPENTER_API, "kind": k} for k in ("NodePool", "NodeClaim")]
    served = [c for c in crds_for(kinds, crds) if c["spec"]["group"] == "karpenter.sh"]
    cluster.serve(served, ["NodePool", "NodeClaim"], "karpenter-install")
    karpenter = Karpenter(cluster, pools)
    karpenter.adopt()
    cluster.controllers.append(karpenter.reconcile)
    return sorted(pools)
