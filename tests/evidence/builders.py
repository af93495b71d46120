"""Deterministic cluster snapshots for the reference platform, healthy by default, broken on request."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuplatform.inventory.catalog import slices_for_node

UUID_PREFIX = "GPU-"


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
    return {
        "metadata": meta,
        "spec": {"nodeName": node_name, "containers": [container], **spec},
        "status": {"phase": phase},
    }


def device_plugin_pod(node_name: str) -> dict[str, Any]:
    return pod(
        f"nvidia-device-plugin-daemonset-{node_name}",
        "gpu-operator",
        node_name,
        labels={"app": "nvidia-device-plugin-daemonset"},
    )


def kubelet_plugin_pod(node_name: str) -> dict[str, Any]:
    owner = {"kind": "DaemonSet", "name": "dra-driver-nvidia-gpu-kubelet-plugin", "controller": True}
    return pod(
        f"dra-driver-nvidia-gpu-kubelet-plugin-{node_name}",
        "nvidia-dra-driver-gpu",
        node_name,
        owners=[owner],
    )


def claim(
    name: str, namespace: str, node_name: str, device: str = "gpu-0", reserved_uid: str | None = None
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
    if reserved_uid is not None:
        status["reservedFor"] = [{"resource": "pods", "name": f"pod-of-{name}", "uid": reserved_uid}]
    return {"metadata": {"name": name, "namespace": namespace}, "status": status}


@dataclass
class Cluster:
    """The reference cluster in wave native-claim-pilot, as kubectl would show it."""

    kinds: dict[str, list[dict[str, Any]] | None] = field(default_factory=dict)
    nvidia_smi: dict[str, str] = field(default_factory=dict)

    @classmethod
    def healthy(cls) -> Cluster:
        slices = slices_for_node("gpu-dra-01", "H100-80GB", 8, driver_release="0.4.1")
        uuid = slices[0]["spec"]["devices"][0]["attributes"]["uuid"]["string"]
        validation = pod(
            "gpu-dra-validation-abcde",
            "gpu-dra-pilot",
            "gpu-dra-01",
            labels={"job-name": "gpu-dra-validation"},
            phase="Succeeded",
            resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "hopper-large-gpu"}],
        )
        validation["status"]["resourceClaimStatuses"] = [
            {"name": "gpu", "resourceClaimName": "gpu-dra-validation-abcde-gpu-x1"}
        ]
        trainer = pod(
            "trainer-7d4f9-x2x",
            "ml",
            "gpu-legacy-01",
            gpus=2,
            labels={"pod-template-hash": "7d4f9"},
            owners=[{"kind": "ReplicaSet", "name": "trainer-7d4f9", "controller": True}],
        )
        cluster = cls(
            kinds={
                "nodes": [node("gpu-legacy-01", gpus="8"), node("gpu-dra-01", gpus="0")],
                "pods": [
                    device_plugin_pod("gpu-legacy-01"),
                    kubelet_plugin_pod("gpu-dra-01"),
                    validation,
                    trainer,
                ],
                "daemonsets": [],
                "replicasets": [
                    {
                        "metadata": {
                            "name": "trainer-7d4f9",
                            "namespace": "ml",
                            "ownerReferences": [
                                {"kind": "Deployment", "name": "trainer", "controller": True}
                            ],
                        }
                    }
                ],
                "jobs": [],
                "deviceclasses": [{"metadata": {"name": "nvidia-hopper-large-memory.platform.example.com"}}],
                "resourceslices": slices,
                "resourceclaims": [claim("gpu-dra-validation-abcde-gpu-x1", "gpu-dra-pilot", "gpu-dra-01")],
                "resourceclaimtemplates": [],
            },
            nvidia_smi={
                "gpu-dra-pilot/gpu-dra-validation-abcde": f"name, memory.total [MiB], uuid\nNVIDIA H100 80GB HBM3, 81559 MiB, {uuid}\n"
            },
        )
        return cluster

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
            "time": "2026-12-02T00:00:00Z",
            "missing": missing,
            "kinds": {},
        }
        (folder / "manifest.json").write_text(json.dumps(manifest))
        if self.nvidia_smi:
            (folder / "nvidia-smi").mkdir(exist_ok=True)
            for target, text in self.nvidia_smi.items():
                ns, _, name = target.partition("/")
                (folder / "nvidia-smi" / f"{ns}_{name}.csv").write_text(text)
        return folder
