"""What the device plugin advertises on a node: one fact, read by the policy, capacity, `simulate`
and `rehearse`.

- NVIDIA/k8s-device-plugin v0.19.0 `internal/rm/device_map.go`: under the `single` MIG strategy MIG
  devices are `nvidia.com/gpu` and every one must have the same profile ("invalid MIG
  configuration", the plugin fails); under `mixed` they are `nvidia.com/mig-<profile>`, whole GPUs
  `nvidia.com/gpu`.
- The GPU Operator passes its ClusterPolicy's `mig.strategy` (chart default `single`) to the plugin
  as MIG_STRATEGY (gpu-operator v26.3.1 `controllers/object_controls.go` `applyMIGConfiguration`).
"""

from __future__ import annotations

from collections import Counter

from gpuplatform.charts.model import render_gpu_operator
from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.model.platform import Platform

__all__ = ["advertised", "running_mig_strategy"]


def advertised(layout: tuple[str, ...], gpus: int, strategy: str) -> dict[str, int] | None:
    """The extended resources the device plugin advertises per node; None when it fails to start."""
    if not layout:
        return {GPU_RESOURCE: gpus}
    if strategy == "single":
        return {GPU_RESOURCE: gpus * len(layout)} if len(set(layout)) == 1 else None
    return {f"nvidia.com/mig-{p}": gpus * n for p, n in sorted(Counter(layout).items())}


def running_mig_strategy(platform: Platform) -> str:
    """`mig.strategy` of the GPU Operator running before the migration: the spec's values over the
    chart's defaults (the migration never changes it)."""
    spec = platform.gpu_operator
    return render_gpu_operator(spec.version, dict(spec.values)).mig_strategy
