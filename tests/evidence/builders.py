"""Cluster snapshots of a platform in one wave: the model's healthy cluster, broken on request.

`build(platform, wave)` is the simulator's cluster of the wave as its gates read it
(`gpuplatform.simulate.wave_cluster`), as `gpuplatform snapshot` would show it
(`simulate.snapshot.cluster_snapshot`): every node of every pool (a provisioner pool with its
`minNodes`, at least one), its operands, allocators, ResourceSlices, the workloads, the validation
probes with the `nvidia-smi -L` line of the device they hold, the gate Jobs' pods and their proof.
The helpers below make the objects a test adds to break it.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuplatform.load.stacks import load_stack
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.simulate.snapshot import cluster_snapshot
from gpuplatform.simulate.snapshot_nodes import kubelet_plugin_pod as plugin_pod
from gpuplatform.simulate.snapshot_nodes import operand_pod
from gpuplatform.simulate.wave_cluster import wave_world

REPO = Path(__file__).resolve().parents[2]
OPERATOR_NS = "gpu-operator"


def ready(*containers: str) -> list[dict[str, Any]]:
    return [{"name": c, "ready": True} for c in containers]


def node(
    name: str,
    *,
    gpus: str | None = None,
    product: str = "NVIDIA-H100-80GB-HBM3",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    allocatable = {"cpu": "64"} | ({"nvidia.com/gpu": gpus} if gpus is not None else {})
    return {
        "metadata": {
            "name": name,
            "labels": {"nvidia.com/gpu.product": product, "nvidia.com/gpu.count": "8", **(labels or {})},
        },
        "status": {"allocatable": allocatable},
    }


def pod(
    name: str,
    namespace: str,
    node_name: str,
    *,
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    gpus: int = 0,
    phase: str = "Running",
    uid: str | None = None,
    containers: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{namespace}-{name}",
        "labels": labels or {},
    }
    if owners:
        meta["ownerReferences"] = owners
    status: dict[str, Any] = {"phase": phase}
    if phase == "Running":
        status["containerStatuses"] = containers if containers is not None else ready("main")
    return {
        "metadata": meta,
        "spec": {"nodeName": node_name, "containers": [container], **spec},
        "status": status,
    }


def device_plugin_pod(node_name: str) -> dict[str, Any]:
    """The GPU Operator's device-plugin pod on `node_name`, as the model runs it."""
    return operand_pod(OPERATOR_NS, node_name, "device-plugin")


def kubelet_plugin_pod(node_name: str, namespace: str = "nvidia-dra-driver-gpu") -> dict[str, Any]:
    """The DRA driver's kubelet plugin pod on `node_name`, as the model runs it."""
    return plugin_pod(namespace, "dra-driver-nvidia-gpu", node_name, ["gpus", "compute-domains"])


def claim(
    name: str,
    namespace: str,
    node_name: str,
    device: str = "gpu-0",
    reserved_uid: str | None = None,
    owner: dict[str, Any] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": "gpu.nvidia.com", "pool": node_name, "device": device}
                ]
            }
        }
    }
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if reserved_uid is not None:
        status["reservedFor"] = [{"resource": "pods", "name": f"pod-of-{name}", "uid": reserved_uid}]
    if owner is not None:
        meta["ownerReferences"] = [{"kind": "Pod", "controller": True, **owner}]
    return {"metadata": meta, "status": status}


@dataclass
class Cluster:
    """A cluster as kubectl would show it, plus the logs `snapshot` keeps."""

    kinds: dict[str, list[dict[str, Any]] | None] = field(default_factory=dict)
    nvidia_smi: dict[str, str] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)

    @classmethod
    def healthy(cls) -> Cluster:
        """The reference platform in its native-claim-pilot wave, with a legacy trainer."""
        cluster = build(reference_platform(), "native-claim-pilot")
        trainer = pod(
            "trainer-7d4f9-x2x",
            "ml",
            "gpu-legacy-01",
            gpus=2,
            labels={"pod-template-hash": "7d4f9"},
            owners=[{"kind": "ReplicaSet", "name": "trainer-7d4f9", "controller": True}],
        )
        cluster.list("pods").append(trainer)
        cluster.kinds["replicasets"] = [
            {
                "metadata": {
                    "name": "trainer-7d4f9",
                    "namespace": "ml",
                    "ownerReferences": [{"kind": "Deployment", "name": "trainer", "controller": True}],
                }
            }
        ]
        return cluster

    def list(self, kind: str) -> list[dict[str, Any]]:
        items = self.kinds[kind]
        assert items is not None
        return items

    def named(self, kind: str, name: str) -> dict[str, Any]:
        return next(o for o in self.list(kind) if o["metadata"]["name"] == name)

    def pods_on(self, node_name: str) -> list[dict[str, Any]]:
        return [p for p in self.list("pods") if p["spec"].get("nodeName") == node_name]

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        for kind, items in self.kinds.items():
            if items is not None:
                (folder / f"{kind}.json").write_text(
                    json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2)
                )
        missing = [k for k, v in self.kinds.items() if v is None]
        manifest = {
            "context": "test",
            "serverVersion": "v1.36.1",
            "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "missing": missing,
            "kinds": {k: f"{len(v)} object(s)" for k, v in self.kinds.items() if v is not None},
        }
        (folder / "manifest.json").write_text(json.dumps(manifest))
        for sub, texts, suffix in (("nvidia-smi", self.nvidia_smi, "csv"), ("logs", self.logs, "log")):
            if texts:
                (folder / sub).mkdir(exist_ok=True)
            for target, text in texts.items():
                ns, _, name = target.partition("/")
                (folder / sub / f"{ns}_{name}.{suffix}").write_text(text)
        return folder


def reference_platform() -> Platform:
    return load_stack(REPO / "stacks" / "reference.py")[0].platform


def build(platform: Platform, wave: str) -> Cluster:
    """The model's healthy cluster of `platform` in `wave` (a copy the test may break)."""
    snapshot = cluster_snapshot(wave_world(plan_platform(platform), wave))
    return Cluster(kinds=copy.deepcopy(snapshot.kinds), logs=dict(snapshot.logs))
