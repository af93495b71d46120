"""A driver upgrade on one node, as NVIDIA/k8s-driver-manager runs it in the driver pod's init container.

`cmd/driver-manager/main.go` (v0.10.0, the GPU Operator v26.3.1 default; v0.12.0 the same for
what is modelled here): `evictAllGPUOperatorComponents` sets every `nvidia.com/gpu.deploy.*`
label that is `true` to `paused-for-driver-upgrade` (a `false` stays `false`) and, in the same
update, the label named by NODE_LABEL_FOR_GPU_POD_EVICTION when the node has it; it waits for the
operand pods to terminate, drains GPU pods, unloads and reinstalls the driver, then
`rescheduleGPUOperatorComponents` sets the paused labels back to `true`. The modules cannot be
unloaded while a process holds the GPUs (the DRA kubelet plugin through NVML included). A GitOps
engine that owns one of these labels writes it back when it next corrects drift; when that
happens is not modelled, so it is taken to happen while the node is paused.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuplatform.simulate.model import Group
from gpuplatform.simulate.operator import DEPLOY_PREFIX
from gpuplatform.simulate.world import World

__all__ = ["PAUSED", "upgrade_driver"]

PAUSED = "paused-for-driver-upgrade"
MANAGER = "k8s-driver-manager"


def _paused(value: str) -> str:
    """`maybeSetPaused`."""
    if value in ("", "false") or PAUSED in value:
        return value
    return PAUSED if value == "true" else f"{value}_{PAUSED}"


def _restored(value: str) -> str:
    """`maybeSetTrue`."""
    return "true" if value == PAUSED else value.replace(f"_{PAUSED}", "")


def upgrade_driver(world: World, group: Group, correct_drift: Callable[[World], list[str]]) -> None:
    """Run the driver manager on `group` (one node), the engine's drift correction landing mid-way."""
    label = world.operator().eviction_label
    keys = [k for k in group.labels if k.startswith(DEPLOY_PREFIX) and k != DEPLOY_PREFIX + "driver"]
    if label and group.labels.get(label):
        keys.append(label)
    before = {k: group.labels[k] for k in keys}
    for key, value in before.items():
        group.set_label(key, _paused(value), MANAGER)
    world.record(
        "driver-manager",
        f"{group.name}: operand labels paused ({', '.join(sorted(k for k in before if _paused(before[k]) != before[k]))})",
    )
    world.settle()
    fixed = correct_drift(world)
    if fixed:
        world.record(world.engine, f"drift correction writes back {'; '.join(fixed)}")
        world.settle()
    holders = [n for n, phase in group.operands.items() if n != "driver" and phase != "unschedulable"]
    if group.kubelet_plugin != "absent":
        holders.append(f"DRA kubelet plugin ({group.kubelet_plugin})")
    if holders:
        world.fail(
            "driver-upgrade",
            f"{group.name}: the driver cannot be unloaded, the GPUs are still held by {', '.join(holders)}"
            + ("" if label else " (NODE_LABEL_FOR_GPU_POD_EVICTION is not set)"),
            [f"Node/{group.nodes[0]}", f"Pod/nvidia-driver-daemonset@{group.nodes[0]}"],
        )
    group.driver_loaded = False
    world.record("driver-manager", f"{group.name}: driver unloaded and reinstalled")
    group.driver_loaded = True
    for key, value in before.items():
        current = group.labels.get(key, "")
        if current == _paused(value):
            group.set_label(key, _restored(current), MANAGER)
    world.record("driver-manager", f"{group.name}: operand labels restored")
    world.settle()
