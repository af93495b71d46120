"""How the allocators' pods are recognised in a cluster: data in one place, used by every gate.

Sources: the GPU Operator's device-plugin DaemonSet asset (samples/gpu-operator/
state-device-plugin_0500_daemonset.yaml: label `app=nvidia-device-plugin-daemonset`) and the DRA
driver chart's kubelet-plugin DaemonSet (templates/kubeletplugin.yaml: `<chart name>-kubelet-plugin`
in the release namespace).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DEVICE_PLUGIN_LABEL",
    "DRA_DRIVER",
    "DRA_KUBELET_PLUGIN_SUFFIX",
    "GPU_RESOURCE",
    "is_device_plugin_pod",
    "is_dra_kubelet_plugin_pod",
]

DEVICE_PLUGIN_LABEL = ("app", "nvidia-device-plugin-daemonset")
DRA_KUBELET_PLUGIN_SUFFIX = "-kubelet-plugin"
DRA_DRIVER = "gpu.nvidia.com"
GPU_RESOURCE = "nvidia.com/gpu"


def is_device_plugin_pod(pod: dict[str, Any]) -> bool:
    """A pod of the GPU Operator's device-plugin DaemonSet."""
    key, value = DEVICE_PLUGIN_LABEL
    return (pod.get("metadata", {}).get("labels") or {}).get(key) == value


def is_dra_kubelet_plugin_pod(pod: dict[str, Any], namespace: str) -> bool:
    """A pod of the DRA driver's kubelet-plugin DaemonSet in the driver's namespace."""
    meta = pod.get("metadata", {})
    owners = meta.get("ownerReferences") or []
    return meta.get("namespace") == namespace and any(
        o.get("kind") == "DaemonSet" and str(o.get("name", "")).endswith(DRA_KUBELET_PLUGIN_SUFFIX)
        for o in owners
    )
