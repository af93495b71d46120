"""The GPU Operator (ClusterPolicy mode) and NFD on each node group, as NVIDIA/gpu-operator v26.3.1 does it.

- `controllers/state_manager.go` `labelGPUNodes`: a node with NFD's NVIDIA PCI label gets
  `nvidia.com/gpu.present=true` and every absent `nvidia.com/gpu.deploy.<operand>` label set to `true`
  (`addGPUStateLabels` honours a present value, so `false` or `paused-for-driver-upgrade` stay);
  `mig-manager` only on MIG-capable products (`hasMIGCapableGPU`: H100, A100, A30).
- Each operand DaemonSet selects `nvidia.com/gpu.deploy.<operand>: "true"`
  (`assets/state-*/0500_daemonset.yaml`) and tolerates `ClusterPolicy.spec.daemonsets.tolerations`
  when set (`applyCommonDaemonsetConfig`); the DaemonSet controller places a new pod only where
  every NoSchedule/NoExecute taint is tolerated, and a running pod stays on a NoSchedule taint.
- Init containers: the toolkit's `driver-validation` writes `driver-ready`; the device plugin,
  GFD, DCGM, DCGM exporter and MIG manager wait for `/run/nvidia/validations/toolkit-ready`,
  which only the operator-validator's `toolkit-validation` init container writes
  (cmd/nvidia-validator/main.go); the validator's `plugin-validation` (present only while
  `devicePlugin.enabled`, object_controls.go `TransformValidatorComponent`) fails without
  `nvidia.com/gpu` capacity on the node (`validateGPUResource`: the crash loop of
  NVIDIA/gpu-operator#2550); the validator's preStop runs `rm -f /run/nvidia/validations/*-ready`
  (assets/state-operator-validation/0500_daemonset.yaml) when its main container ran.
- The device plugin crash-loops when `mig.strategy` is `single` and the node's MIG devices are not
  all of one profile (NVIDIA/k8s-device-plugin v0.19.0 `internal/rm/device_map.go`).
- NFD (node-feature-discovery subchart) labels a node only where its worker runs, which needs
  `node-feature-discovery.worker.tolerations` to tolerate the node's taints.
"""

from __future__ import annotations

from functools import partial

from gpuplatform.charts.model import OperatorOutput
from gpuplatform.inventory.device_plugin import advertised
from gpuplatform.labels import DEPLOY_LABEL_PREFIX, GPU_PRESENT_LABEL, NFD_NVIDIA_PCI_LABEL
from gpuplatform.simulate.model import Group, untolerated
from gpuplatform.simulate.world import START, STOP, Reaction, World

__all__ = [
    "NEEDS_TOOLKIT",
    "STATE_LABELS",
    "gpu_operator_reactions",
    "host_driver",
]

NEEDS_TOOLKIT = ("device-plugin", "gpu-feature-discovery", "dcgm", "dcgm-exporter", "mig-manager")
STATE_LABELS = (
    "driver",
    "gpu-feature-discovery",
    "container-toolkit",
    "device-plugin",
    "dcgm",
    "dcgm-exporter",
    "node-status-exporter",
    "operator-validator",
)
_SCHEDULING = ("NoSchedule", "NoExecute")


def _fill(group: Group) -> None:
    group.set_label(GPU_PRESENT_LABEL, "true", "gpu-operator")
    for name in STATE_LABELS + (("mig-manager",) if group.mig_capable else ()):
        if DEPLOY_LABEL_PREFIX + name not in group.labels:
            group.set_label(DEPLOY_LABEL_PREFIX + name, "true", "gpu-operator")


def host_driver(world: World) -> bool:
    """The NVIDIA driver is the host's (`driver.enabled: false`): loaded at boot, never reloaded by
    the operator, whose validator finds it on the host and lets the operands start
    (NVIDIA/gpu-operator v26.3.1 `cmd/nvidia-validator/main.go` `(*Driver).runValidation`:
    "Detected a pre-installed driver on the host")."""
    return "driver" not in world.operator().operands


def _label_reactions(world: World, group: Group) -> list[Reaction]:
    op = world.operator()
    out: list[Reaction] = []
    external = not op.nfd  # `nfd.enabled: false`: the cluster's own NFD labels every node
    if not group.nfd_labelled and (
        external or not untolerated(op.nfd_tolerations, group.taints, _SCHEDULING)
    ):

        def nfd() -> None:
            group.nfd_labelled = True
            group.set_label(NFD_NVIDIA_PCI_LABEL, "true", "nfd")

        out.append(Reaction(START, f"{'external ' if external else ''}NFD labels {group.name}", nfd))
    if group.nfd_labelled and group.labels.get(DEPLOY_LABEL_PREFIX + "operands") != "false":
        wanted = STATE_LABELS + (("mig-manager",) if group.mig_capable else ())
        if GPU_PRESENT_LABEL not in group.labels or any(
            DEPLOY_LABEL_PREFIX + n not in group.labels for n in wanted
        ):
            out.append(
                Reaction(START, f"GPU Operator fills the deploy labels of {group.name}", lambda: _fill(group))
            )
    return out


def _ready(world: World, group: Group, name: str) -> str:
    """The phase a just-scheduled operand reaches: running, or waiting/crash-looping in an init container."""
    if name == "driver":
        return "running"
    if not group.driver_loaded or (group.operands.get("driver") != "running" and not host_driver(world)):
        return "waiting"
    if name == "container-toolkit":
        return "running"
    if name in NEEDS_TOOLKIT and "toolkit-ready" not in group.markers:
        return "waiting"
    if (
        name == "device-plugin"
        and advertised(group.mig_layout, group.gpus, world.operator().mig_strategy) is None
    ):
        return "crashloop"  # k8s-device-plugin v0.19.0 internal/rm/device_map.go: "invalid MIG configuration"
    if name in NEEDS_TOOLKIT:
        return "running"
    if name == "operator-validator":
        if group.operands.get("container-toolkit") != "running":
            return "waiting"
        if world.operator().device_plugin and not group.device_plugin_registered:
            return "crashloop"
        return "running"
    return "running"


def _start(world: World, group: Group, name: str) -> None:
    phase = _ready(world, group, name)
    group.operands[name] = phase  # type: ignore[assignment]
    if name == "container-toolkit" and phase == "running":
        group.markers.add("driver-ready")
    if name == "operator-validator" and phase in ("running", "crashloop"):
        group.markers |= {"driver-ready", "toolkit-ready"}
        group.validator_started = phase == "running"
    if name == "driver":
        group.driver_loaded = True


def _unschedulable(group: Group, name: str) -> None:
    group.operands[name] = "unschedulable"


def _stop(group: Group, name: str) -> None:
    del group.operands[name]
    if name == "operator-validator" and group.validator_started:
        group.markers -= {"driver-ready", "toolkit-ready", "plugin-ready", "cuda-ready"}
        group.validator_started = False


def _operand_reactions(
    world: World, group: Group, op: OperatorOutput, enabled: frozenset[str]
) -> list[Reaction]:
    out: list[Reaction] = []
    blocked = untolerated(op.operand_tolerations, group.taints, _SCHEDULING)
    labels, operands = group.labels, group.operands
    for name in sorted(enabled | operands.keys()):
        want = name in enabled and labels.get(DEPLOY_LABEL_PREFIX + name) == "true"
        have = operands.get(name)
        if want and have == "running":
            continue
        if want and (have is None or have == "unschedulable"):
            if blocked:
                if have is None:
                    out.append(
                        Reaction(
                            STOP,
                            f"{name} cannot be scheduled on {group.name}: untolerated taint",
                            partial(_unschedulable, group, name),
                        )
                    )
                continue
            out.append(Reaction(START, f"{name} starts on {group.name}", partial(_start, world, group, name)))
        elif want and have in ("waiting", "crashloop") and _ready(world, group, name) != have:
            out.append(
                Reaction(
                    START,
                    f"{name} on {group.name}: {_ready(world, group, name)}",
                    partial(_start, world, group, name),
                )
            )
        elif not want and have is not None:
            out.append(Reaction(STOP, f"{name} leaves {group.name}", partial(_stop, group, name)))
    return out


def gpu_operator_reactions(world: World) -> list[Reaction]:
    """NFD labels, the operator's label fill and the operand DaemonSets on every group."""
    out: list[Reaction] = []
    op = world.operator()
    enabled = frozenset(op.operands) - (frozenset() if op.device_plugin else {"device-plugin"})
    for group in world.cluster.groups:
        out += _label_reactions(world, group)
        out += _operand_reactions(world, group, op, enabled)
    return out
