"""The kubelet's side of both allocators, and the DRA kubelet plugin DaemonSet's placement.

- Device plugin (kubernetes/kubernetes pkg/kubelet/cm/devicemanager/manager.go): a registered
  plugin's devices make `status.allocatable['nvidia.com/gpu']`; when the plugin disconnects its
  devices are marked unhealthy at once (`PluginDisconnected` -> `markResourceUnhealthy`), so
  allocatable drops to 0 while capacity lingers for the stop grace period. Pods that hold
  device-plugin GPUs keep running: the kubelet never evicts them for this.
- DRA (pkg/kubelet/cm/dra): the kubelet plugin registers over the plugin-registration socket and
  publishes the node's ResourceSlices; after it unregisters the kubelet wipes that driver's slices
  only after a delay, so they stay visible to the scheduler for a while (modelled as `stale`; the
  wipe is `delayed`: no engine waits for it between two sync units).
  A pod with an allocated claim needs the plugin to unprepare it when it terminates; without it the
  pod stays Terminating (kubernetes/kubernetes#129402).
- The kubelet plugin DaemonSet (chart templates/kubeletplugin.yaml) runs where its nodeSelector and
  required affinity match and every NoSchedule/NoExecute taint is tolerated; its init container
  waits for the driver root (`kubelet-plugin-prestart.sh`), so it needs a loaded driver.
- The plugin enumerates the node's devices when it starts and publishes that list for as long as it
  runs (`Group.published_layout`): after a MIG change only a restart of the plugin republishes.
"""

from __future__ import annotations

from functools import partial

from gpuplatform.simulate.mig_layouts import plugin_config
from gpuplatform.simulate.model import Group, untolerated
from gpuplatform.simulate.world import START, STOP, Reaction, World

__all__ = ["kubelet_reactions"]

_SCHEDULING = ("NoSchedule", "NoExecute")


def _register(world: World, group: Group) -> None:
    group.device_plugin_registered = True
    group.plugin_config = plugin_config(world, group)


def _device_plugin(world: World, group: Group) -> list[Reaction]:
    running = group.operands.get("device-plugin") == "running"
    if running and not group.device_plugin_registered:
        return [
            Reaction(
                START,
                f"device plugin registers nvidia.com/gpu on {group.name}",
                partial(_register, world, group),
            )
        ]
    if not running and group.device_plugin_registered:
        return [
            Reaction(
                STOP,
                f"kubelet marks nvidia.com/gpu unhealthy on {group.name} (allocatable 0)",
                lambda: setattr(group, "device_plugin_registered", False),
            )
        ]
    return []


def _start_plugin(group: Group) -> None:
    """The plugin enumerates the node's devices once, as the MIG layout is now (`Group.published_layout`)."""
    group.kubelet_plugin = "running"
    group.published_layout = group.mig_layout


def _plugin_gone(group: Group) -> None:
    group.kubelet_plugin = "absent"
    group.published_layout = None


def _kubelet_plugin(world: World, group: Group) -> list[Reaction]:
    dra = world.dra()
    wanted = (
        dra is not None
        and not dra.error
        and dra.selects(group.labels)
        and not untolerated(dra.tolerations, group.taints, _SCHEDULING)
    )
    out: list[Reaction] = []
    if wanted and group.kubelet_plugin == "absent" and group.driver_loaded:
        out.append(
            Reaction(
                START,
                f"DRA kubelet plugin starts on {group.name}",
                partial(_start_plugin, group),
            )
        )
    elif not wanted and group.kubelet_plugin == "running":
        out.append(
            Reaction(
                STOP,
                f"DRA kubelet plugin is stopping on {group.name}",
                lambda: setattr(group, "kubelet_plugin", "terminating"),
            )
        )
    elif group.kubelet_plugin == "terminating":
        out.append(
            Reaction(
                STOP,
                f"DRA kubelet plugin gone from {group.name}",
                partial(_plugin_gone, group),
            )
        )
    if group.kubelet_plugin == "running" and group.slices != "published":
        out.append(
            Reaction(
                START,
                f"DRA driver publishes the ResourceSlices of {group.name}",
                lambda: setattr(group, "slices", "published"),
            )
        )
    elif group.kubelet_plugin != "running" and group.slices == "published":
        out.append(
            Reaction(
                STOP,
                f"ResourceSlices of {group.name} outlive their plugin",
                lambda: setattr(group, "slices", "stale"),
            )
        )
    elif group.kubelet_plugin == "absent" and group.slices == "stale":
        out.append(
            Reaction(
                STOP,
                f"kubelet wipes the stale ResourceSlices of {group.name}",
                lambda: setattr(group, "slices", "none"),
                delayed=True,
            )
        )
    return out


def _terminations(world: World) -> list[Reaction]:
    out: list[Reaction] = []
    for w in world.cluster.workloads:
        if w.phase != "terminating":
            continue
        group = world.cluster.group(w.group) if w.group else None
        if w.allocator in ("dra", "bridge") and (group is None or group.kubelet_plugin != "running"):
            out.append(
                Reaction(
                    STOP,
                    f"{w.key} hangs in Terminating: no kubelet plugin to unprepare its claim",
                    w.stuck,
                )
            )
            continue

        out.append(Reaction(STOP, f"{w.key} terminated (claims unprepared, devices free)", w.terminated))
    return out


def _restarts(world: World) -> list[Reaction]:
    """Pods of a restarted node run again once their allocator is back (claims prepared, devices admitted)."""
    out: list[Reaction] = []
    for w in world.cluster.workloads:
        if w.phase != "restarting":
            continue
        group = world.cluster.group(w.group)
        ready = (
            group.kubelet_plugin == "running"
            if w.allocator in ("dra", "bridge")
            else group.device_plugin_registered
        )
        if ready:
            out.append(
                Reaction(
                    START, f"{w.key} runs again on {group.name}", partial(setattr, w, "phase", "running")
                )
            )
    return out


def kubelet_reactions(world: World) -> list[Reaction]:
    """Plugin registration, ResourceSlices and pod termination on every group."""
    out: list[Reaction] = []
    for group in world.cluster.groups:
        out += _device_plugin(world, group)
        out += _kubelet_plugin(world, group)
    return out + _terminations(world) + _restarts(world)
