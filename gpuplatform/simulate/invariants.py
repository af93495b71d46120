"""What must hold after every step of a transition, and what must hold once it is done.

Checked after every step (`STEP_CHECKS`):
- one-allocator: no node where the device plugin advertises GPUs while the DRA driver publishes
  (or still shows) ResourceSlices for them, no GPU held by a running device-plugin pod there, and no
  pod that reaches a node's GPUs through `NVIDIA_VISIBLE_DEVICES` without asking an allocator (a
  third allocator, which neither the device plugin nor the DRA driver knows about);
- claim-stranded: no allocated claim on a node whose DRA kubelet plugin is gone or going;
- mig-devices: no pod holds devices (a claim's allocation, device-plugin GPUs) of a MIG layout its
  node no longer has: the MIG manager reconfigured the GPUs under it. (`mig-reconfigure`, a
  reconfiguration refused because GPU pods run on the node, is raised by the MIG manager's model.)
- workload-disrupted: no running workload evicted, hung or refused unless the transition moves it;
  and, once the controllers have settled (`SETTLED_CHECKS`), every declared workload (the spec's,
  and with `--snapshot` the cluster's GPU pods) has somewhere to run: none of its pods is Pending
  outside its own declared move (the transition that converts it or takes it back);
- early-bridge (checked where the scheduler binds): no unmigrated `nvidia.com/gpu` pod placed on a
  DRA node through a class's `extendedResourceName` before a wave at or after the
  `compatibility-bridge` stage that enables a bridge (the stages decide, not where the spec
  declares a bridge).
Checked when the transition and each disturbance are over (`check_settled`):
- operands: the driver and the operator's operands run on every GPU node, the device plugin on
  legacy nodes and the DRA kubelet plugin on DRA nodes;
- mig-slices: a running DRA kubelet plugin publishes the node's MIG layout, not the one it found
  when it started (`Group.published_layout`: DRA driver v0.4.1 does not republish after a MIG change).
"""

from __future__ import annotations

from gpuplatform.gates.matchers import OPERANDS
from gpuplatform.kueue.simulate import KUEUE_SUSPENDED
from gpuplatform.simulate.model import Workload
from gpuplatform.simulate.world import World

__all__ = ["SETTLED_CHECKS", "STEP_CHECKS", "check_settled", "workload_name"]

_OPERANDS = tuple(o.name for o in OPERANDS)


def one_allocator(world: World) -> None:
    holders: dict[str, str] = {}
    for w in world.cluster.workloads:
        if w.allocator == "visible-devices" and w.phase in ("running", "terminating"):
            g = world.cluster.group(w.group)
            world.fail(
                "one-allocator",
                f"{w.key} reaches the GPUs of {g.name} through NVIDIA_VISIBLE_DEVICES without a GPU "
                "request: a third allocator that neither the device plugin nor the DRA driver sees",
                [f"Pod/{w.key}", f"Node/{g.nodes[0]}"],
            )
        if w.allocator == "device-plugin" and w.phase in ("running", "terminating"):
            holders.setdefault(w.group, w.key)
    for g in world.cluster.groups:
        if g.slices == "none":
            continue
        if g.allocatable_gpu:
            world.fail(
                "one-allocator",
                f"{g.name}: the device plugin advertises nvidia.com/gpu={g.gpus} while the DRA driver "
                f"publishes ResourceSlices ({g.slices}) for the same GPUs",
                [f"Node/{g.nodes[0]}", f"ResourceSlice/{g.nodes[0]}-gpu.nvidia.com"],
            )
        if g.id in holders:
            world.fail(
                "one-allocator",
                f"{g.name}: {holders[g.id]} holds device-plugin GPUs while the DRA driver publishes them",
                [f"Pod/{holders[g.id]}", f"Node/{g.nodes[0]}"],
            )


def claim_stranded(world: World) -> None:
    for w in world.cluster.workloads:
        if w.allocator not in ("dra", "bridge") or w.phase not in (
            "running",
            "terminating",
            "stuck-terminating",
        ):
            continue
        g = world.cluster.group(w.group)
        if g.kubelet_plugin != "running":
            world.fail(
                "claim-stranded",
                f"{w.key} has a claim allocated on {g.name} whose DRA kubelet plugin is "
                f"{'going' if g.kubelet_plugin == 'terminating' else 'gone'}",
                [f"Pod/{w.key}", f"ResourceClaim/{w.key}-gpu", f"Node/{g.nodes[0]}"],
            )


def mig_devices(world: World) -> None:
    for w in world.cluster.workloads:
        if not w.group or w.phase not in ("running", "terminating", "stuck-terminating", "restarting"):
            continue
        g = world.cluster.group(w.group)
        if w.mig_layout != g.mig_layout:
            old, new = (", ".join(x) or "whole GPUs" for x in (w.mig_layout, g.mig_layout))
            world.fail(
                "mig-devices",
                f"{w.key} holds {w.allocator} devices of {g.name} from MIG layout [{old}], which the MIG "
                f"manager replaced with [{new}]: its devices no longer exist",
                [f"Pod/{w.key}", f"Node/{g.nodes[0]}"],
            )


def workload_disrupted(world: World) -> None:
    if world.disturbance:
        return
    for w in world.cluster.workloads:
        if w.origin == "validation" or (w.moves and not w.reason.startswith(KUEUE_SUSPENDED)):
            continue
        if w.phase in ("terminating", "stuck-terminating", "refused"):
            what = {
                "refused": "is refused",
                "terminating": "is evicted",
                "stuck-terminating": "hangs in Terminating",
            }
            world.fail(
                "workload-disrupted",
                f"{w.key} {what[w.phase]} though the transition does not move it: {w.reason}",
                [f"Pod/{w.key}"],
            )


def workload_name(w: Workload) -> str:
    """The declared workload a pod belongs to, named as `capacity` names its demand."""
    if w.origin == "spec":
        return f"workload {w.namespace}/{w.workload}"
    return f"snapshot workload {w.controller or 'Pod'} {w.namespace}/{w.workload or w.name}"


def workload_stranded(world: World) -> None:
    """Every declared workload has somewhere to run once the controllers settle, but in its own move."""
    if world.disturbance:
        return
    stranded: dict[str, list[Workload]] = {}
    for w in world.cluster.workloads:
        if w.origin in ("spec", "snapshot") and w.phase == "pending" and not w.converting:
            stranded.setdefault(workload_name(w), []).append(w)
    if not stranded:
        return
    parts = []
    for name, pods in sorted(stranded.items()):
        why = next((p.reason for p in pods if p.reason), "")
        parts.append(
            f"{name} has nowhere to run: {len(pods)} pod(s) Pending, no node can take them"
            + (f" (since: {why})" if why else "")
        )
    world.fail(
        "workload-disrupted",
        "; ".join(parts),
        [f"Pod/{p.key}" for pods in stranded.values() for p in pods],
    )


STEP_CHECKS = (one_allocator, claim_stranded, mig_devices, workload_disrupted)
SETTLED_CHECKS = (workload_stranded,)


def check_settled(world: World, why: str) -> None:
    """Every GPU node runs its driver stack and the allocator its declared mode wants."""
    op = world.operator()
    for g in world.cluster.groups:
        wanted = [n for n in _OPERANDS if n in op.operands and (n != "mig-manager" or g.mig_capable)]
        down = {n: g.operands.get(n, "absent") for n in wanted if g.operands.get(n) != "running"}
        mode = world.mode(g)
        if mode == "legacy" and op.device_plugin and g.operands.get("device-plugin") != "running":
            down["device-plugin"] = g.operands.get("device-plugin", "absent")
        if mode == "dra" and g.kubelet_plugin != "running":
            down["dra-kubelet-plugin"] = g.kubelet_plugin
        if g.kubelet_plugin == "running" and g.slices_layout != g.mig_layout:
            old, new = (", ".join(x) or "whole GPUs" for x in (g.slices_layout, g.mig_layout))
            world.fail(
                "mig-slices",
                f"{why}: {g.name}'s ResourceSlices still list the devices of MIG layout [{old}], but the GPUs "
                f"are partitioned as [{new}]: the DRA kubelet plugin publishes only what it found when it "
                "started; restart it on the node (the runbook's MIG change)",
                [f"Node/{g.nodes[0]}", f"ResourceSlice/{g.nodes[0]}-gpu.nvidia.com"],
            )
        if down:
            world.fail(
                "operands",
                f"{why}: {g.name} ({mode}) does not run {', '.join(f'{n} ({p})' for n, p in down.items())}",
                [f"Node/{g.nodes[0]}"] + [f"Pod/{n}@{g.nodes[0]}" for n in down],
            )
    if world.observe is not None:
        world.observe(world, why)
