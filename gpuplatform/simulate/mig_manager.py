"""The GPU Operator's MIG manager, and the device plugin following `mig.strategy`.

- gpu-operator v26.3.1 `controllers/state_manager.go` (`migConfigLabelKey`, `migConfigDisabledValue`):
  a MIG-capable node without `nvidia.com/mig.config` gets `all-disabled` (the chart's
  `migManager.config.default`); the MIG manager (values.yaml `migManager.version` v0.14.0) runs
  NVIDIA/mig-parted v0.14.0.
- mig-parted v0.14.0 `cmd/nvidia-mig-manager/main.go` runs once per change of `nvidia.com/mig.config`;
  `pkg/mig/reconfigure/reconfigure.go` `Run`: an unknown config sets `failed`; a config already
  applied sets `success`; otherwise `nvidia.com/mig.config.state=pending`, the deploy labels of the
  device plugin, GFD, DCGM exporter and DCGM become `paused-for-mig-change` (`maybeSetPaused` keeps
  `false`), it waits for their pods to go, `nvidia-mig-parted apply`, restores the labels
  (`maybeSetTrue`) and sets `success`. Any error sets `failed` and returns: the clients stay paused
  until the label changes again. The DRA kubelet plugin is not one of its clients.
- `apply` destroys the GPU and compute instances first (`pkg/mig/config/config.go` `ci.Destroy`,
  `gi.Destroy`), which NVML refuses while a process uses them: a GPU pod running on the node makes
  the reconfiguration fail.
- The operator passes `mig.strategy` as MIG_STRATEGY (gpu-operator v26.3.1 `object_controls.go`
  `applyMIGConfiguration`), and the DaemonSet's RollingUpdate (values.yaml `daemonsets.updateStrategy`)
  restarts the plugin when it changes.
"""

from __future__ import annotations

from functools import partial

from gpuplatform.labels import DEPLOY_LABEL_PREFIX, MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL
from gpuplatform.simulate.mig_layouts import DISABLED, layout_of, plugin_config
from gpuplatform.simulate.model import Group, Workload
from gpuplatform.simulate.world import START, STOP, Reaction, World

__all__ = ["MIG_PAUSED", "mig_manager_reactions"]

MIG_PAUSED = "paused-for-mig-change"
_CLIENTS = ("device-plugin", "gpu-feature-discovery", "dcgm-exporter", "dcgm")


def _holders(world: World, group: Group) -> list[Workload]:
    """Pods whose processes use the node's GPUs (running or still terminating)."""
    return [
        w for w in world.cluster.workloads if w.group == group.id and w.phase in ("running", "terminating")
    ]


def _set_state(group: Group, state: str) -> None:
    group.set_label(MIG_CONFIG_STATE_LABEL, state, "mig-manager")


def _pause(group: Group) -> None:
    _set_state(group, "pending")
    for name in _CLIENTS:
        if group.labels.get(DEPLOY_LABEL_PREFIX + name, "false") != "false":
            group.set_label(DEPLOY_LABEL_PREFIX + name, MIG_PAUSED, "mig-manager")


def _fail(world: World, group: Group, holders: list[Workload]) -> None:
    _set_state(group, "failed")
    group.mig_failed = group.labels[MIG_CONFIG_LABEL]
    world.pending_failure = (
        "mig-reconfigure",
        f"{group.name}: the MIG manager cannot apply {group.labels[MIG_CONFIG_LABEL]}: "
        f"{', '.join(w.key for w in holders)} use the GPUs; state failed, its GPU clients stay paused",
        [f"Node/{group.nodes[0]}"] + [f"Pod/{w.key}" for w in holders],
    )


def _unknown(group: Group, label: str) -> None:
    _set_state(group, "failed")
    group.mig_failed = label


def _apply(group: Group, layout: tuple[str, ...]) -> None:
    group.mig_layout = layout
    for name in _CLIENTS:
        if group.labels.get(DEPLOY_LABEL_PREFIX + name) == MIG_PAUSED:
            group.set_label(DEPLOY_LABEL_PREFIX + name, "true", "mig-manager")
    _set_state(group, "success")


def _reconfigure(world: World, group: Group) -> list[Reaction]:
    label = group.labels.get(MIG_CONFIG_LABEL)
    state = group.labels.get(MIG_CONFIG_STATE_LABEL)
    if label is None or group.operands.get("mig-manager") != "running":
        return []
    layout = layout_of(world, group, label)
    if (state == "success" and layout == group.mig_layout) or (
        state == "failed" and label == group.mig_failed
    ):
        return []
    if layout is None:
        return [
            Reaction(
                STOP, f"MIG manager: unknown config {label} on {group.name}", partial(_unknown, group, label)
            )
        ]
    if layout == group.mig_layout and state != "pending":
        return [
            Reaction(
                START,
                f"MIG manager: {label} already applied on {group.name}",
                partial(_set_state, group, "success"),
            )
        ]
    if state != "pending":
        return [
            Reaction(
                STOP,
                f"MIG manager pauses the GPU clients of {group.name} for {label}",
                partial(_pause, group),
            )
        ]
    if any(name in group.operands for name in _CLIENTS):
        return []
    holders = _holders(world, group)
    if holders:
        return [
            Reaction(
                STOP,
                f"MIG manager fails to apply {label} on {group.name}: GPUs in use",
                partial(_fail, world, group, holders),
            )
        ]
    return [
        Reaction(
            START,
            f"MIG manager applies {label} on {group.name} and restores its GPU clients",
            partial(_apply, group, layout),
        )
    ]


def _default(group: Group) -> None:
    group.set_label(MIG_CONFIG_LABEL, DISABLED, "gpu-operator")


def _restart_plugin(group: Group) -> None:
    group.operands.pop("device-plugin", None)
    group.device_plugin_registered = False


def mig_manager_reactions(world: World) -> list[Reaction]:
    """The operator's `all-disabled` default, the MIG manager, and the device plugin following `mig.strategy`."""
    out: list[Reaction] = []
    managed = "mig-manager" in world.operator().operands
    for group in world.cluster.groups:
        if managed and group.mig_capable and MIG_CONFIG_LABEL not in group.labels and group.nfd_labelled:
            out.append(
                Reaction(
                    START,
                    f"GPU Operator labels {group.name} {MIG_CONFIG_LABEL}={DISABLED}",
                    partial(_default, group),
                )
            )
        out += _reconfigure(world, group)
        if group.device_plugin_registered and group.plugin_config != plugin_config(world, group):
            out.append(
                Reaction(
                    STOP,
                    f"device plugin on {group.name} restarts for {plugin_config(world, group)}",
                    partial(_restart_plugin, group),
                )
            )
    return out
