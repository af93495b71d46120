"""A driver upgrade on one node: the GPU Operator's upgrade controller, then NVIDIA/k8s-driver-manager.

- Upgrade controller (NVIDIA/gpu-operator v26.3.1 `controllers/upgrade_controller.go`, k8s-operator-libs
  `pkg/upgrade` at a0a0256): with `driver.upgradePolicy.autoUpgrade` (the chart default) it cordons the
  node and deletes the pods `gpuPodSpecFilter` selects (`cmd/gpu-operator/main.go`: Running or Pending
  pods whose containers request `nvidia.com/gpu*` or `nvidia.com/mig-*`), never a pod holding only a
  claim; with `driver.upgradePolicy.drain.enable` (which gpuplatform renders, `render/helm_values.py`)
  it then drains the node (`drain_manager.go`: `kubectl drain` of every pod, claim holders included),
  and only then restarts the driver pod (`upgrade_state.go`: drain-required before
  pod-restart-required), whose driver manager pauses the DRA kubelet plugin. The operator annotates the node `nvidia.com/gpu-driver-upgrade-enabled`
  (`controllers/state_manager.go`), which turns the driver manager's own eviction off.
- Driver manager (`cmd/driver-manager/main.go`, the version the release ships, see `versions.py`):
  `evictAllGPUOperatorComponents` sets every `nvidia.com/gpu.deploy.*` label that is `true` to
  `paused-for-driver-upgrade` (a `false` stays) and, in the same update, the label named by
  NODE_LABEL_FOR_GPU_POD_EVICTION; without the annotation and with ENABLE_GPU_POD_EVICTION it then
  drains GPU pods: v0.10.0 those requesting `nvidia.com/gpu*`, v0.12.0 also claim holders
  (`DRIVER_MANAGER_DRAINS_CLAIMS_SINCE`), after their kubelet plugin was paused. The modules cannot be
  unloaded while anything holds the GPUs: an operand, the DRA kubelet plugin (NVML), a workload pod.
  `rescheduleGPUOperatorComponents` sets the paused labels back.
A GitOps engine that owns one of these labels writes it back when it next corrects drift; when that
happens is not modelled, so it is taken to happen while the node is paused.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuplatform.labels import DEPLOY_LABEL_PREFIX
from gpuplatform.simulate.model import Group, Workload
from gpuplatform.simulate.world import World
from gpuplatform.versions import DRIVER_MANAGER_DRAINS_CLAIMS_SINCE, parse_release

__all__ = ["PAUSED", "drained_by_manager", "upgrade_driver"]

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


def drained_by_manager(manager_version: str, w: Workload) -> bool:
    """Whether the driver manager's GPU-pod drain takes `w` (v0.12.0 also claim holders)."""
    if w.kind == "legacy":
        return True
    return w.kind == "claim" and parse_release(manager_version) >= DRIVER_MANAGER_DRAINS_CLAIMS_SINCE


def _on(world: World, group: Group) -> list[Workload]:
    return [
        w for w in world.cluster.workloads if w.group == group.id and w.phase in ("running", "restarting")
    ]


def _evict(world: World, group: Group, actor: str, pods: list[Workload]) -> None:
    group.cordoned = True
    for w in pods:
        w.evict(f"{actor} drains {group.name} for a driver upgrade")
    world.record(actor, f"cordons {group.name} and deletes {', '.join(w.key for w in pods) or 'no GPU pod'}")
    world.settle()


def upgrade_driver(world: World, group: Group, correct_drift: Callable[[World], list[str]]) -> None:
    """Run the upgrade controller and the driver manager on `group` (one node), drift correction mid-way."""
    op = world.operator()
    if op.auto_upgrade:
        actor = "gpu-operator upgrade controller"
        _evict(world, group, actor, [w for w in _on(world, group) if w.kind == "legacy"])
        if op.upgrade_drain:
            _evict(world, group, f"{actor} (drain)", _on(world, group))
    label = op.eviction_label
    keys = [
        k for k in group.labels if k.startswith(DEPLOY_LABEL_PREFIX) and k != DEPLOY_LABEL_PREFIX + "driver"
    ]
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
    if not op.auto_upgrade and op.gpu_pod_eviction:
        pods = [w for w in _on(world, group) if drained_by_manager(op.manager_version, w)]
        _evict(world, group, f"k8s-driver-manager {op.manager_version}", pods)
    holders = [n for n, phase in group.operands.items() if n != "driver" and phase != "unschedulable"]
    if group.kubelet_plugin != "absent":
        holders.append(f"DRA kubelet plugin ({group.kubelet_plugin})")
    holders += [
        f"pod {w.key} ({w.phase})"
        for w in world.cluster.workloads
        if w.group == group.id and w.phase in ("running", "restarting", "terminating", "stuck-terminating")
    ]
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
