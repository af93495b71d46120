"""GKE node pools, emulated: what `gcloud container` does to the cluster's nodes when a runbook runs it.

The runbook's `gcloud` is the fake of `fakes.py`: `node-pools describe` prints the pool as the GKE
API has it now (`pools.json`, written here), and every command that changes a pool is handed to
this controller as a request file and waits for its answer, as gcloud waits for the operation. What
a command does follows the GKE documentation (fetched 7 December 2026):

- `gcloud container node-pools create`: the pool's nodes register (`--num-nodes` per zone of
  `--node-locations`) with the pool's Kubernetes labels and taints (`--node-labels`,
  `--node-taints`) and GKE's own `cloud.google.com/gke-nodepool` and zone.
- `gcloud container node-pools update --node-labels | --node-taints` ("Update Kubernetes node
  labels and taints for node pools"): the pool's whole set is replaced, and applied to its existing
  nodes in place, "without re-creating the node pool and disrupting running workloads".
- `gcloud container clusters update --node-pool --enable-autoscaling`: the pool's autoscaling limits.
- `gcloud container clusters resize --node-pool --num-nodes` (gcloud reference): the size is per
  zone; new nodes have the pool's configuration; "when decreasing a cluster, the nodes are drained"
  and resize "will pick instances to remove at random" (here: a choice seeded by the pool and size,
  so that a rehearsal is repeatable). The drain is the eviction API's, so PodDisruptionBudgets count.
- `gcloud container node-pools delete` (gcloud reference): GKE drains every node "by deleting
  Pods", then the nodes go.

The pools before the migration are the spec's GKE node groups with the nodes the fleet gives them;
their hardware is the GKE machine of the pool's product and GPU count (`MACHINES`), with GKE's
driver installation off when the GPU Operator installs the driver.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuplatform.charts.model import render_gpu_operator
from gpuplatform.gates.nodes import pool_selector
from gpuplatform.model.nodes import NodePool
from gpuplatform.plan.waves import Plan
from gpuplatform.rehearse.client import Obj
from gpuplatform.rehearse.cluster import Rehearsal
from gpuplatform.rehearse.drain import drain_step
from gpuplatform.rehearse.fleet import pool_node, pool_node_names
from gpuplatform.render.cloud_commands import CLOUD_TAINT_EFFECTS
from gpuplatform.simulate.groups import provisioned_name

__all__ = ["GKE_LOCATION", "GKE_PROJECT", "GkeNodePools", "install_gke", "operator_env"]

NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
ZONE_LABEL = "topology.kubernetes.io/zone"
GKE_PROJECT = "rehearsal"
GKE_LOCATION = "us-central1"
#: GKE "GPU platforms" (accelerator-optimized machine series A4, A3, A2, G2): the accelerator type
#: and the machine of each GPU count, by product.
MACHINES: dict[str, tuple[str, dict[int, str]]] = {
    "B200": ("nvidia-b200", {8: "a4-highgpu-8g"}),
    "H200-141GB": ("nvidia-h200-141gb", {8: "a3-ultragpu-8g"}),
    "H100-80GB": (
        "nvidia-h100-80gb",
        {1: "a3-highgpu-1g", 2: "a3-highgpu-2g", 4: "a3-highgpu-4g", 8: "a3-highgpu-8g"},
    ),
    "A100-80GB": ("nvidia-a100-80gb", {n: f"a2-ultragpu-{n}g" for n in (1, 2, 4, 8)}),
    "A100-40GB": (
        "nvidia-tesla-a100",
        {**{n: f"a2-highgpu-{n}g" for n in (1, 2, 4, 8)}, 16: "a2-megagpu-16g"},
    ),
    "L4": ("nvidia-l4", {1: "g2-standard-8", 2: "g2-standard-24", 4: "g2-standard-48", 8: "g2-standard-96"}),
}
_K8S_EFFECTS = {v: k for k, v in CLOUD_TAINT_EFFECTS.items()}


def operator_env(cluster_name: str) -> dict[str, str]:
    """The variables the GKE steps of a runbook ask the operator to set."""
    return {"PROJECT": GKE_PROJECT, "LOCATION": GKE_LOCATION, "CLUSTER": cluster_name}


def _flags(args: list[str]) -> tuple[list[str], dict[str, str]]:
    """Positional arguments and `--flag value` / `--flag=value` / bare `--flag` (value 'true')."""
    positional, flags, i = [], {}, 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--") and "=" in arg:
            key, value = arg[2:].split("=", 1)
            flags[key] = value
        elif arg.startswith("--"):
            has_value = i + 1 < len(args) and not args[i + 1].startswith("--")
            flags[arg[2:]] = args[i + 1] if has_value else "true"
            i += int(has_value)
        else:
            positional.append(arg)
        i += 1
    return positional, flags


def _pairs(text: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in text.split(",") if item)


def _gke_taints(text: str) -> list[dict[str, str]]:
    """`k=v:Effect,…` as the GKE API lists taints."""
    out = []
    for item in filter(None, text.split(",")):
        head, effect = item.rsplit(":", 1)
        key, _, value = head.partition("=")
        out.append({"key": key, "value": value, "effect": CLOUD_TAINT_EFFECTS.get(effect, effect)})
    return out


def _node_taint(taint: dict[str, str]) -> dict[str, str]:
    out = {"key": taint["key"], "effect": _K8S_EFFECTS.get(taint["effect"], taint["effect"])}
    return out | ({"value": taint["value"]} if taint.get("value") else {})


def _same_taint(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return bool(a.get("key") == b.get("key") and a.get("effect") == b.get("effect"))


@dataclass
class _Operation:
    """One gcloud command waiting for its answer; a drain spans several passes."""

    path: Path
    args: list[str]
    draining: list[str] = field(default_factory=list)
    evict: bool = True
    then_delete: str = ""


@dataclass
class GkeNodePools:
    """The emulated GKE API of the platform's GKE node groups; `reconcile` is one pass."""

    cluster: Rehearsal
    plan: Plan
    folder: Path
    pools: dict[str, Obj] = field(default_factory=dict)
    launched: dict[str, int] = field(default_factory=dict)
    """Spec pool name -> nodes registered for it so far (the next node's number)."""
    operation: _Operation | None = None

    # --- the pools as the API has them ---------------------------------------------------------

    def adopt(self) -> None:
        """The spec's GKE node groups as they run before the migration, with the fleet's nodes."""
        driver = "INSTALLATION_DISABLED" if self._operator_installs_driver() else "LATEST"
        groups: dict[str, list[NodePool]] = {}
        for pool in self.plan.platform.node_pools:
            p = pool.provisioner
            if (
                p is not None
                and p.kind == "node-group"
                and p.cloud == "gke"
                and self.plan.waves[0].present(pool.name)
            ):
                groups.setdefault(p.name, []).append(pool)
        for name, pools in sorted(groups.items()):
            nodes = [pool_node(pool, node) for pool in pools for node in pool_node_names(pool)]
            for pool in pools:
                self.launched[pool.name] = len(pool_node_names(pool))
            zones = sorted({n.labels[ZONE_LABEL] for n in nodes if ZONE_LABEL in n.labels}) or [
                f"{GKE_LOCATION}-a"
            ]
            shared = {k: v for k, v in nodes[0].labels.items() if all(n.labels.get(k) == v for n in nodes)}
            config_labels = {k: v for k, v in pool_selector(pools[0]).member_labels().items() if k in shared}
            config_labels.pop(NODEPOOL_LABEL, None)
            accelerator, machines = MACHINES.get(pools[0].product, ("nvidia-gpu", {}))
            gpus = pools[0].gpus_per_node
            low = sum(p.provisioner.min_nodes for p in pools if p.provisioner is not None)
            high = sum((p.provisioner.max_nodes or 0) for p in pools if p.provisioner is not None)
            self.pools[name] = {
                "name": name,
                "config": {
                    "machineType": machines.get(gpus, f"custom-{gpus}-gpu"),
                    "accelerators": [
                        {
                            "acceleratorCount": str(gpus),
                            "acceleratorType": accelerator,
                            "gpuDriverInstallationConfig": {"gpuDriverVersion": driver},
                        }
                    ],
                    "diskSizeGb": 200,
                    "diskType": "pd-balanced",
                    "imageType": "COS_CONTAINERD",
                    "serviceAccount": "default",
                    "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"],
                    "labels": dict(sorted(config_labels.items())),
                },
                "locations": zones,
                "initialNodeCount": max(1, len(nodes) // len(zones)),
                "autoscaling": (
                    {
                        "enabled": True,
                        "totalMinNodeCount": low,
                        "totalMaxNodeCount": high,
                        "locationPolicy": "ANY",
                    }
                    if high
                    else {}
                ),
                "status": "RUNNING",
            }
        self._write()

    def _operator_installs_driver(self) -> bool:
        spec = self.plan.platform.gpu_operator
        return "driver" in render_gpu_operator(spec.version, dict(spec.values)).operands

    def _write(self) -> None:
        partial = self.folder / "pools.partial"
        partial.write_text(json.dumps(self.pools, sort_keys=True, indent=1))
        partial.replace(self.folder / "pools.json")

    # --- the controller --------------------------------------------------------------------------

    def reconcile(self) -> bool:
        """Take the next request, or go on with the drain in progress; True when anything was written."""
        if self.operation is None:
            requests = sorted((self.folder / "requests").glob("*.json"))
            if not requests:
                return False
            path = requests[0]
            self.operation = _Operation(path, list(json.loads(path.read_text())))
            try:
                self._start(self.operation)
            except (KeyError, ValueError, IndexError) as exc:  # as gcloud refuses a command or the API a call
                self._answer(1, f"ERROR: (gcloud.container) {exc.args[0] if exc.args else exc}")
                return True
        if self.operation.draining:
            self._drain(self.operation)
            if self.operation.draining:
                return True
            if self.operation.then_delete:
                del self.pools[self.operation.then_delete]
                self._write()
        self._answer(0, "")
        return True

    def _answer(self, code: int, err: str) -> None:
        assert self.operation is not None
        path = self.operation.path
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps({"code": code, "stderr": err}))
        partial.replace(path.with_suffix(".answer"))
        path.unlink()
        self.operation = None

    def _start(self, op: _Operation) -> None:
        positional, flags = _flags(op.args)
        command = tuple(positional[:3])
        if command == ("container", "node-pools", "create"):
            self._create(positional[3], flags)
        elif command == ("container", "node-pools", "update"):
            self._update(self._pool(positional[3]), flags)
        elif command == ("container", "node-pools", "delete"):
            name = self._pool(positional[3])["name"]
            op.draining, op.evict, op.then_delete = self._nodes(name), False, name
        elif command == ("container", "clusters", "update"):
            pool = self._pool(flags["node-pool"])
            pool["autoscaling"] = {
                "enabled": True,
                "locationPolicy": "ANY",
                **{_AUTOSCALING[k]: int(v) for k, v in flags.items() if k in _AUTOSCALING},
            }
            self._write()
        elif command == ("container", "clusters", "resize"):
            op.draining = self._resize(self._pool(flags["node-pool"]), int(flags["num-nodes"]))
        else:
            raise ValueError(f"the rehearsal's GKE does not know `gcloud {' '.join(positional[:3])}`")

    def _pool(self, name: str) -> Obj:
        if name not in self.pools:
            raise KeyError(f"ResponseError: code=404, message=Not found: node pool {name!r}")
        return self.pools[name]

    def _nodes(self, pool: str) -> list[str]:
        return sorted(
            n["metadata"]["name"]
            for n in self.cluster.client.list("Node")
            if (n["metadata"].get("labels") or {}).get(NODEPOOL_LABEL) == pool
        )

    def _create(self, name: str, flags: dict[str, str]) -> None:
        if name in self.pools:
            raise ValueError(f"ResponseError: code=409, message=Already exists: node pool {name!r}")
        accelerator = _pairs(flags.get("accelerator", ""))
        zones = flags.get("node-locations", f"{GKE_LOCATION}-a").split(",")
        autoscaling = {_AUTOSCALING[k]: int(v) for k, v in flags.items() if k in _AUTOSCALING}
        self.pools[name] = {
            "name": name,
            "config": {
                "machineType": flags.get("machine-type", ""),
                "accelerators": [
                    {
                        "acceleratorCount": accelerator.get("count", "1"),
                        "acceleratorType": accelerator.get("type", ""),
                        "gpuDriverInstallationConfig": {
                            "gpuDriverVersion": {"default": "DEFAULT", "latest": "LATEST"}.get(
                                accelerator.get("gpu-driver-version", ""), "INSTALLATION_DISABLED"
                            )
                        },
                    }
                ],
                "labels": _pairs(flags.get("node-labels", "")),
                "taints": _gke_taints(flags.get("node-taints", "")),
                **{_CONFIG[k]: v for k, v in flags.items() if k in _CONFIG},
            },
            "locations": zones,
            "initialNodeCount": int(flags.get("num-nodes", "1")),
            "autoscaling": {"enabled": True, "locationPolicy": "ANY", **autoscaling} if autoscaling else {},
            "status": "RUNNING",
        }
        self._write()
        for i in range(int(flags.get("num-nodes", "1")) * len(zones)):
            self._register(self.pools[name], zones[i % len(zones)])

    def _register(self, gke: Obj, zone: str) -> None:
        """A node of `gke` registers, with its configuration as it is now."""
        config = gke["config"]
        labels = {**config.get("labels", {}), NODEPOOL_LABEL: gke["name"], ZONE_LABEL: zone}
        pool = self._spec_pool(gke["name"], labels)
        name = provisioned_name(pool.name, self.launched.get(pool.name, 0))
        self.launched[pool.name] = self.launched.get(pool.name, 0) + 1
        base = pool_node(pool, name)
        taints = tuple(_node_taint(t) for t in config.get("taints") or [])
        self.cluster.agents.register(replace(base, labels={**base.labels, **labels}, taints=taints))

    def _spec_pool(self, group: str, labels: dict[str, str]) -> NodePool:
        """The spec's pool a new node of GKE pool `group` belongs to (its selector matches)."""
        pools = [
            p
            for p in self.plan.platform.node_pools
            if p.provisioner is not None
            and p.provisioner.kind == "node-group"
            and p.provisioner.name == group
        ]
        if not pools:
            raise ValueError(f"no pool of the spec is GKE node pool {group!r}")
        node = {"metadata": {"name": "", "labels": labels}}
        return next((p for p in pools if pool_selector(p).matches(node)), pools[0])

    def _update(self, gke: Obj, flags: dict[str, str]) -> None:
        """Replace the pool's labels or taints, and apply them to its nodes in place."""
        config = gke["config"]
        old_labels, old_taints = dict(config.get("labels") or {}), list(config.get("taints") or [])
        if "node-labels" in flags:
            config["labels"] = _pairs(flags["node-labels"])
        if "node-taints" in flags:
            config["taints"] = _gke_taints(flags["node-taints"])
        self._write()
        gone = [_node_taint(t) for t in old_taints]
        added = [_node_taint(t) for t in config.get("taints") or []]
        for node in self._nodes(gke["name"]):
            current = self.cluster.client.get("Node", node) or {"spec": {}}
            labels: dict[str, str | None] = {k: None for k in old_labels if k not in config.get("labels", {})}
            labels.update(config.get("labels") or {})
            patch: Obj = {"metadata": {"labels": labels}}
            if "node-taints" in flags:
                kept = [
                    t for t in current["spec"].get("taints") or [] if not any(_same_taint(t, g) for g in gone)
                ]
                patch["spec"] = {"taints": [*kept, *added]}
            self.cluster.client.patch("Node", node, patch)

    def _resize(self, gke: Obj, per_zone: int) -> list[str]:
        """New nodes up to the size, or the nodes to drain down to it (picked as GKE picks: at random)."""
        zones = gke["locations"]
        nodes = self._nodes(gke["name"])
        target = per_zone * len(zones)
        for i in range(len(nodes), target):
            self._register(gke, zones[i % len(zones)])
        if target >= len(nodes):
            return []
        picked = random.Random(f"{gke['name']}:{target}").sample(nodes, len(nodes) - target)
        for node in picked:
            self.cluster.client.patch("Node", node, {"spec": {"unschedulable": True}})
        return sorted(picked)

    def _drain(self, op: _Operation) -> None:
        """A pass of the drain of the nodes being removed; a node with no pod left goes (its Node
        deleted, its kubelet gone)."""
        for node in list(op.draining):
            empty, _ = drain_step(self.cluster.client, node, evict=op.evict)
            if empty:
                self.cluster.client.delete("Node", node)
                self.cluster.agents.forget(node)
                op.draining.remove(node)


#: gcloud's autoscaling flags and the API fields they set.
_AUTOSCALING = {
    "total-min-nodes": "totalMinNodeCount",
    "total-max-nodes": "totalMaxNodeCount",
    "min-nodes": "minNodeCount",
    "max-nodes": "maxNodeCount",
}
#: gcloud's other `create` flags the runbook copies, and the API's `config` fields.
_CONFIG = {
    "disk-size": "diskSizeGb",
    "disk-type": "diskType",
    "image-type": "imageType",
    "service-account": "serviceAccount",
}


def install_gke(cluster: Rehearsal, plan: Plan, folder: Path) -> list[str]:
    """Adopt the spec's GKE node pools into `folder` (the fake gcloud's state), add the kubectl
    context `get-credentials` writes, and put the controller in the cluster's loop; the pools'
    names (none when no pool is a GKE node group)."""
    gke = GkeNodePools(cluster, plan, folder)
    (folder / "requests").mkdir(parents=True, exist_ok=True)
    gke.adopt()
    if not gke.pools:
        (folder / "pools.json").unlink()
        return []
    _add_context(cluster, f"gke_{GKE_PROJECT}_{GKE_LOCATION}_{plan.platform.name}")
    cluster.controllers.append(gke.reconcile)
    return sorted(gke.pools)


def _add_context(cluster: Rehearsal, name: str) -> None:
    """A kubectl context `name` for the rehearsal's cluster and admin, as `gcloud container clusters
    get-credentials` writes one."""
    current = cluster.kubectl(["config", "view", "--minify", "-o", "json"]).stdout
    context = json.loads(current)["contexts"][0]["context"]
    cluster.kubectl(
        ["config", "set-context", name, f"--cluster={context['cluster']}", f"--user={context['user']}"]
    )
