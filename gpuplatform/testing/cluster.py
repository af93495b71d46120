"""A platform's cluster in one wave as the model runs it, and the objects a test adds to break it.

`wave_cluster(platform, wave)` is the simulator's healthy cluster of the wave
(`simulate.wave_cluster`), as `gpuplatform snapshot` would show it (`simulate.snapshot`): every
node of every pool (a provisioner pool with its `minNodes`, at least one), its operands,
allocators, ResourceSlices, the workloads, the validation probes with the `nvidia-smi -L` line of
the device they hold, the gate Jobs' pods and their proof. `Cluster.write(folder)` writes it as a
snapshot folder that `gpuplatform evidence`, `check --snapshot` and `capacity --snapshot` read.
"""

from __future__ import annotations

import builtins
import copy
import json
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuplatform.evidence.evaluate import evaluate_wave
from gpuplatform.evidence.verdict import GateResult
from gpuplatform.labels import GPU_COUNT_LABEL, GPU_PRODUCT_LABEL, GPU_RESOURCE
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.simulate.snapshot import cluster_snapshot
from gpuplatform.simulate.snapshot_nodes import kubelet_plugin_pod as _plugin_pod
from gpuplatform.simulate.snapshot_nodes import operand_pod
from gpuplatform.simulate.wave_cluster import wave_world
from gpuplatform.snapshot.read import load_snapshot

__all__ = [
    "OPERATOR_NAMESPACE",
    "Cluster",
    "claim",
    "device_plugin_pod",
    "judge_wave",
    "kubelet_plugin_pod",
    "node",
    "pod",
    "ready",
    "wave_cluster",
]

#: The GPU Operator's namespace in the model's clusters.
OPERATOR_NAMESPACE = "gpu-operator"


@dataclass
class Cluster:
    """A cluster as kubectl would show it (`kinds`: resource -> items, None when not read), plus
    the `nvidia-smi` output and the logs `gpuplatform snapshot` keeps (`namespace/pod` -> text)."""

    kinds: dict[str, list[dict[str, Any]] | None] = field(default_factory=dict)
    nvidia_smi: dict[str, str] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)

    def list(self, kind: str) -> list[dict[str, Any]]:
        """The items of `kind` (`pods`, `nodes`, `resourceslices`...), to read or change in place."""
        items = self.kinds[kind]
        if items is None:
            raise KeyError(f"{kind} were not read in this cluster")
        return items

    def named(self, kind: str, name: str) -> dict[str, Any]:
        """The first object of `kind` named `name`."""
        return next(o for o in self.list(kind) if o["metadata"]["name"] == name)

    def pods_on(self, node_name: str) -> builtins.list[dict[str, Any]]:
        """The pods bound to `node_name`."""
        return [p for p in self.list("pods") if p["spec"].get("nodeName") == node_name]

    def write(self, folder: Path) -> Path:
        """The cluster as a snapshot folder (one `<kind>.json` List each, `manifest.json` dated
        now, `nvidia-smi/` and `logs/`), as `gpuplatform snapshot --out` writes one."""
        folder.mkdir(parents=True, exist_ok=True)
        for kind, items in self.kinds.items():
            if items is not None:
                (folder / f"{kind}.json").write_text(
                    json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2)
                )
        manifest = {
            "context": "test",
            "serverVersion": "v1.36.1",
            "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "missing": [k for k, v in self.kinds.items() if v is None],
            "kinds": {k: f"{len(v)} object(s)" for k, v in self.kinds.items() if v is not None},
        }
        (folder / "manifest.json").write_text(json.dumps(manifest))
        for sub, texts, suffix in (("nvidia-smi", self.nvidia_smi, "csv"), ("logs", self.logs, "log")):
            if texts:
                (folder / sub).mkdir(exist_ok=True)
            for target, text in texts.items():
                namespace, _, name = target.partition("/")
                (folder / sub / f"{namespace}_{name}.{suffix}").write_text(text)
        return folder


def wave_cluster(platform: Platform, wave: str) -> Cluster:
    """The model's healthy cluster of `platform` in `wave` (a copy the test may break)."""
    snapshot = cluster_snapshot(wave_world(plan_platform(platform), wave))
    return Cluster(kinds=copy.deepcopy(snapshot.kinds), logs=dict(snapshot.logs))


def judge_wave(platform: Platform, wave: str, cluster: Cluster | Path) -> list[GateResult]:
    """Every gate of `wave` and every evidence check judged on `cluster` (or a snapshot folder),
    as `gpuplatform evidence` judges a real cluster; a result's `status` is held, broken or unknown.
    A Cluster is read back from a temporary snapshot folder, removed before this returns."""
    plan = plan_platform(platform)
    if isinstance(cluster, Path):
        return evaluate_wave(plan, plan.wave(wave), load_snapshot(cluster))
    with tempfile.TemporaryDirectory(prefix="gpuplatform-snapshot-") as folder:
        return evaluate_wave(plan, plan.wave(wave), load_snapshot(cluster.write(Path(folder))))


def ready(*containers: str) -> list[dict[str, Any]]:
    """`containerStatuses` with every one of `containers` ready."""
    return [{"name": c, "ready": True} for c in containers]


def node(
    name: str,
    *,
    gpus: str | None = None,
    product: str = "NVIDIA-H100-80GB-HBM3",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A GPU Node with GPU feature discovery's product and count labels; `gpus` is its
    allocatable `nvidia.com/gpu` (None: the device plugin advertises nothing)."""
    allocatable = {"cpu": "64"} | ({GPU_RESOURCE: gpus} if gpus is not None else {})
    return {
        "metadata": {
            "name": name,
            "labels": {GPU_PRODUCT_LABEL: product, GPU_COUNT_LABEL: "8", **(labels or {})},
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
    """A pod bound to `node_name`, limiting `gpus` device-plugin GPUs; a running pod's containers
    are ready unless `containers` says otherwise; `spec` adds fields to its spec."""
    container: dict[str, Any] = {"name": "main", "image": "busybox"}
    if gpus:
        container["resources"] = {"limits": {GPU_RESOURCE: str(gpus)}}
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
    return operand_pod(OPERATOR_NAMESPACE, node_name, "device-plugin")


def kubelet_plugin_pod(node_name: str, namespace: str = "nvidia-dra-driver-gpu") -> dict[str, Any]:
    """The DRA driver's kubelet plugin pod on `node_name`, as the model runs it."""
    return _plugin_pod(namespace, "dra-driver-nvidia-gpu", node_name, ["gpus", "compute-domains"])


def claim(
    name: str,
    namespace: str,
    node_name: str,
    device: str = "gpu-0",
    reserved_uid: str | None = None,
    owner: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ResourceClaim allocated `device` of the DRA driver's pool on `node_name`, reserved for
    the pod with `reserved_uid` and owned by the pod `owner` names, when given."""
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
