"""A cluster snapshot of the benchmark fleet at one wave, as `gpuplatform snapshot` would write it.

Run: `FLEET_NODES=2000 python benchmarks/fleet_snapshot.py WAVE DIR`. Deterministic and healthy:
nodes carry the wave's mode label; legacy nodes advertise `nvidia.com/gpu` and run the device
plugin; DRA nodes advertise none, run the DRA kubelet plugin and publish the catalog's
ResourceSlices; the driver's controller runs; every pod is ready; every workload runs one pod on a
node of its tier's kind (with an allocated ResourceClaim once it has moved); Karpenter pools have
two nodes labelled with their NodePool. Sizes follow the fleet: 2,000 nodes give a snapshot of
the size `evidence` meets on such a cluster.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from gpuplatform.inventory import lookup_product, slices_for_node
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform

FLEET = Path(__file__).resolve().with_name("fleet.py")
DRA_NAMESPACE = "nvidia-dra-driver-gpu"


def _node(name: str, product: str, gpus: int, dra: bool, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "labels": {
                "nvidia.com/gpu.product": product.replace(" ", "-"),
                "nvidia.com/gpu.count": str(gpus),
                **labels,
            },
        },
        "status": {"allocatable": {"cpu": "64", "nvidia.com/gpu": "0" if dra else str(gpus)}},
    }


def _pod(name: str, namespace: str, node: str, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
        "labels": extra.pop("labels", {}),
    }
    if "owners" in extra:
        meta["ownerReferences"] = extra.pop("owners")
    spec = {
        "nodeName": node,
        "containers": [{"name": "main", "image": "busybox", **extra.pop("container", {})}],
    }
    status = {"phase": "Running", "containerStatuses": [{"name": "main", "ready": True}]}
    return {"metadata": meta, "spec": {**spec, **extra}, "status": status}


def _plugin_pod(node: str, dra: bool) -> dict[str, Any]:
    if dra:
        owner = {"kind": "DaemonSet", "name": "dra-driver-nvidia-gpu-kubelet-plugin", "controller": True}
        return _pod(f"dra-driver-nvidia-gpu-kubelet-plugin-{node}", DRA_NAMESPACE, node, owners=[owner])
    return _pod(
        f"nvidia-device-plugin-daemonset-{node}",
        "gpu-operator",
        node,
        labels={"app": "nvidia-device-plugin-daemonset"},
    )


def build(wave: str) -> dict[str, list[dict[str, Any]]]:
    """Items per snapshot kind for the fleet at `wave`."""
    (loaded,) = load_stack(FLEET)
    platform = loaded.platform
    state = plan_platform(platform).wave(wave)
    kinds: dict[str, list[dict[str, Any]]] = {
        k: []
        for k in ("nodes", "pods", "daemonsets", "replicasets", "jobs", "resourceslices", "resourceclaims")
    }
    classes = [*state.tiers, *state.bridges]
    kinds["deviceclasses"] = [{"metadata": {"name": platform.class_name(c)}} for c in classes]
    controller = {
        "app.kubernetes.io/name": "dra-driver-nvidia-gpu",
        "nvidia-dra-driver-gpu-component": "controller",
    }
    kinds["pods"].append(
        _pod("dra-driver-nvidia-gpu-controller-0", DRA_NAMESPACE, "control-plane", labels=controller)
    )
    kinds["resourceclaimtemplates"] = []
    dra_nodes: dict[str, list[str]] = {}
    legacy_nodes: list[str] = []
    for pool in platform.node_pools:
        dra = state.pool_modes[pool.name] == "dra"
        product = lookup_product(pool.product).product_name
        labels = {platform.mode_label_key: state.pool_modes[pool.name]}
        names = list(pool.nodes)
        if pool.provisioner is not None:
            labels["karpenter.sh/nodepool"] = pool.provisioner.name
            names = [f"{pool.provisioner.name}-{i}" for i in range(2)]
        for name in names:
            kinds["nodes"].append(_node(name, product, pool.gpus_per_node, dra, labels))
            kinds["pods"].append(_plugin_pod(name, dra))
            if dra:
                slices = slices_for_node(
                    name, pool.product, pool.gpus_per_node, mig_layout=pool.mig_layout or None
                )
                kinds["resourceslices"] += slices
                dra_nodes.setdefault(pool.name, []).append(name)
            else:
                legacy_nodes.append(name)
    placed = [n for names in dra_nodes.values() for n in names]
    for i, workload in enumerate(platform.workloads):
        moved = workload.name in {platform.workloads[j].name for j in state.workloads}
        if moved and placed:
            node = placed[i % len(placed)]
            claim = f"{workload.name}-gpu-{i:05d}"
            kinds["pods"].append(
                _pod(f"{workload.name}-{i:05d}", workload.namespace, node, resourceClaims=[{"name": "gpu"}])
            )
            kinds["resourceclaims"].append(
                {
                    "metadata": {"name": claim, "namespace": workload.namespace},
                    "status": {
                        "allocation": {
                            "devices": {
                                "results": [
                                    {
                                        "request": "gpu",
                                        "driver": "gpu.nvidia.com",
                                        "pool": node,
                                        "device": "gpu-0",
                                    }
                                ]
                            }
                        },
                        "reservedFor": [
                            {
                                "resource": "pods",
                                "name": f"{workload.name}-{i:05d}",
                                "uid": f"uid-{workload.namespace}-{workload.name}-{i:05d}",
                            }
                        ],
                    },
                }
            )
        elif legacy_nodes:
            node = legacy_nodes[i % len(legacy_nodes)]
            limits = {"resources": {"limits": {"nvidia.com/gpu": str(workload.gpus)}}}
            kinds["pods"].append(_pod(f"{workload.name}-{i:05d}", workload.namespace, node, container=limits))
    return kinds


def write(wave: str, folder: Path) -> Path:
    """Write the snapshot folder (one `<kind>.json` per kind and `manifest.json`)."""
    folder.mkdir(parents=True, exist_ok=True)
    for kind, items in build(wave).items():
        (folder / f"{kind}.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    manifest = {
        "context": "fleet",
        "serverVersion": "v1.36.1",
        "time": "2026-12-03T00:00:00Z",
        "missing": [],
        "kinds": {},
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


if __name__ == "__main__":
    write(sys.argv[1], Path(sys.argv[2]))
