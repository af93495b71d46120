"""The step sequence of a transition: the operator's manual steps, the merge, and what each sync unit does.

This is the one source of order: `plan --from/--to` prints it, the runbooks render it, the
rendered sync order is `sync_order.SYNC_UNITS`, and `gpuplatform simulate` replays these manual
steps around the engine's sync of the rendered tree.

Forward, a pool that moves to DRA is tainted (through its provisioner), cordoned and drained of
GPU pods before the merge, so no device-plugin allocation survives the switch; back, the DRA
workloads on it are removed while its kubelet plugin still runs, so every claim is released
before the plugin leaves (kubernetes/kubernetes#129402: a pod whose claim cannot be unprepared
hangs in Terminating).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpuplatform.errors import InputError
from gpuplatform.gates import gates_for_wave
from gpuplatform.inventory.catalog import mig_profiles
from gpuplatform.labels import DEVICE_PLUGIN_DEPLOY_LABEL
from gpuplatform.plan.sync_order import SYNC_UNITS
from gpuplatform.plan.waves import Plan, WaveState, validator_workaround

__all__ = [
    "ARGOCD_APPS",
    "OPERATOR_DEVICE_PLUGIN",
    "MaintenanceEvent",
    "Step",
    "drained_by_hand",
    "maintenance_steps",
    "mig_capable",
    "transition_steps",
]

StepKind = Literal["manual", "merge", "sync"]
#: The manual step of an unmanaged GPU Operator's owner: `devicePlugin.enabled` as the target wave says.
OPERATOR_DEVICE_PLUGIN = "operator-device-plugin"
#: The manual step that syncs a remote cluster's child Applications (Argo CD orders no two Applications).
ARGOCD_APPS = "sync-argocd-apps"


@dataclass(frozen=True)
class Step:
    """One step: a manual action of the operator, the merge, or a sync unit the engine applies.

    `action` is the manual action (`taint`, `cordon`, `drain-gpu-pods`, `release-claims`,
    `apply-handoff`, `untaint`, `uncordon`, `convert-workloads`, `roll-back-workloads`, `restore-legacy-workloads`,
    `drain-pools` (a drain wave); around node maintenance `drain-claims`, `uncordon-node`, `revalidate`,
    `restart-kubelet-plugin`; for new groups `create-node-group`, `take-nodes`,
    `give-back-nodes`, `delete-node-group`), `merge`, or the sync unit's id; `layer` is the unit's
    folder.
    """

    kind: StepKind
    action: str
    what: str
    pools: tuple[str, ...] = ()
    layer: str = ""
    after: str = ""
    """A manual step after the merge that waits for this sync unit, not for the whole sync."""


Pools = tuple[str, ...]


def _moves(a: WaveState, b: WaveState, to: str) -> Pools:
    return tuple(p for p in a.pool_modes if a.pool_modes[p] != b.pool_modes[p] and b.pool_modes[p] == to)


def _static(plan: Plan, pools: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(p for p in pools if plan.pools[p].provisioner is None)


def drained_by_hand(plan: Plan, pools: tuple[str, ...]) -> tuple[str, ...]:
    """Pools whose nodes an operator cordons and drains: static pools, and node groups and Cluster API
    pools, whose new labels reach running nodes in place (GKE, EKS and AKS update a group's node labels
    and taints without replacing the nodes). Karpenter replaces drifted nodes and drains them itself."""
    return tuple(
        p for p in pools if (owner := plan.pools[p].provisioner) is None or owner.kind != "karpenter"
    )


def _provisioned(plan: Plan, pools: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(p for p in pools if plan.pools[p].provisioner is not None)


def _created(a: WaveState, b: WaveState) -> Pools:
    """New groups (`takesOverFrom`) that exist in `b` but not in `a`."""
    return tuple(p for p in a.absent if b.present(p))


def _deleted(a: WaveState, b: WaveState) -> Pools:
    """New groups that exist in `a` but not in `b`: a rollback deletes them."""
    return _created(b, a)


def _owners_device_plugin(plan: Plan, a: WaveState, b: WaveState) -> Step | None:
    """An unmanaged GPU Operator's device plugin switch, which no engine applies: its owner turns the
    plugin back on before any node returns to it, or off once no pool is legacy."""
    if plan.platform.gpu_operator.managed or a.device_plugin_enabled == b.device_plugin_enabled:
        return None
    state = (
        "back on (devicePlugin.enabled=true) before any node goes back to it"
        if b.device_plugin_enabled
        else "off (devicePlugin.enabled=false): no pool is legacy any more"
    )
    return Step(
        "manual",
        OPERATOR_DEVICE_PLUGIN,
        f"the GPU Operator is not gpuplatform's (gpuOperator.managed: false): its owner turns its device plugin {state}",
    )


def _before(plan: Plan, a: WaveState, b: WaveState, forward: Pools, back: Pools) -> list[Step]:
    steps: list[Step] = []
    if (switch := _owners_device_plugin(plan, a, b)) is not None and b.device_plugin_enabled:
        steps.append(switch)
    gone = tuple(t for t in a.tenants if t not in b.tenants)
    if deleted := _deleted(a, b):
        steps.append(
            Step(
                "manual",
                "give-back-nodes",
                "give the groups the new ones took nodes from their nodes back (legacy, with the device plugin)",
                deleted,
            )
        )
    if drained_back := drained_by_hand(plan, back):
        steps.append(
            Step("manual", "cordon", "cordon the nodes that go back to the device plugin", drained_back)
        )
    if set(a.workloads) - set(b.workloads):
        steps.append(
            Step(
                "manual",
                "roll-back-workloads",
                "re-apply the legacy manifests of the workloads that go back, as a rolling update, and wait for it: "
                "their nvidia.com/gpu pods start on device-plugin nodes before their claim pods stop, whose claims "
                "are released while the kubelet plugin still runs (a workload is never scaled to zero)",
            )
        )
    if gone or back or deleted:
        steps.append(
            Step(
                "manual",
                "release-claims",
                f"remove the DRA workloads on the pools that go back{' or go away' if deleted else ''} and of the "
                "tenants that go, and wait until their claims are released (the kubelet plugin still runs)",
                back + deleted,
            )
        )
    if pools := _static(plan, forward):
        steps.append(
            Step(
                "manual",
                "taint",
                "taint the nodes that move to DRA (hand-off to their provisioner's owner)",
                pools,
            )
        )
    if pools := drained_by_hand(plan, forward):
        steps += [
            Step("manual", "cordon", "cordon the nodes that move to DRA", pools),
            Step(
                "manual",
                "drain-gpu-pods",
                "drain their GPU pods: no device-plugin allocation may survive the switch",
                pools,
            ),
        ]
    if moved := _provisioned(plan, forward + back):
        steps.append(
            Step(
                "manual",
                "apply-handoff",
                "apply the provisioner hand-off (the labels and taints of the pool's nodes): Karpenter "
                "replaces the nodes, a cloud's node group and a pool selected inside one are relabelled in place",
                moved,
            )
        )
    if deleted:
        steps.append(
            Step(
                "manual",
                "delete-node-group",
                "cordon and drain the new groups the target wave does not have, then delete them",
                deleted,
            )
        )
    if created := _created(a, b):
        steps += [
            Step(
                "manual",
                "create-node-group",
                "create the new DRA groups next to the groups they take nodes from, born with the hand-off's "
                "labels and taint (their kubelet plugin starts once the driver runs)",
                created,
            ),
            Step(
                "manual",
                "take-nodes",
                "shrink the groups the new ones take nodes from by as many nodes, draining those it removes",
                created,
            ),
        ]
    return steps


def _sync(plan: Plan, a: WaveState, b: WaveState, forward: Pools, back: Pools) -> list[Step]:
    p = plan.platform
    text: dict[str, str] = {}
    gates = gates_for_wave(plan, b)
    pre = [g.id for g in gates if g.phase == "pre"]
    post = [g.id for g in gates if g.phase == "post"]
    if pre:
        text["gates-pre"] = f"gates {', '.join(pre)} must hold, or nothing after them is applied"
    if back:
        text["release"] = (
            f"the DRA kubelet plugin leaves pools {', '.join(back)}; the Job waits until its pods "
            "and ResourceSlices are gone"
        )
    operators = []
    if a.driver_installed != b.driver_installed:
        operators.append(
            f"DRA driver {'installed' if b.driver_installed else 'uninstalled'} ({p.dra_driver.namespace})"
        )
    if a.device_plugin_enabled != b.device_plugin_enabled and p.gpu_operator.managed:
        operators.append(f"GPU Operator devicePlugin.enabled={str(b.device_plugin_enabled).lower()}")
    if operators:
        text["00-operators"] = "; ".join(operators)
    if forward or back:
        text["10-nodes"] = "; ".join(
            [f"pools {', '.join(forward)}: device plugin off ({DEVICE_PLUGIN_DEPLOY_LABEL}=false)"]
            * bool(forward)
            + [f"pools {', '.join(back)}: device plugin back (label removed, the operator sets it true)"]
            * bool(back)
        )
    if forward:
        text["enable"] = (
            f"once the device plugin is gone from pools {', '.join(forward)} (no plugin pod, no "
            "nvidia.com/gpu allocatable, no pod holding GPUs) the Job labels them "
            "nvidia.com/dra-kubelet-plugin=true; otherwise it fails and the sync stops"
        )
    if a.tiers != b.tiers or a.bridges != b.bridges:
        text["20-device-classes"] = "tiers and bridge classes of the wave"
    if a.tenants != b.tenants:
        text["30-policy"] = "tenant admission policies of the wave"
    if (
        a.tenants != b.tenants
        or a.workloads != b.workloads
        or a.nim_services != b.nim_services
        or a.validation != b.validation
    ):
        text["40-tenants"] = "tenant namespaces, quotas, claim templates, workload templates of the wave"
    if post:
        text["gates-post"] = f"gates {', '.join(post)} must hold within the timeout"
    return [
        Step("sync", u.id, f"{u.what}: {text[u.id]}", forward + back, u.folder)
        for u in SYNC_UNITS
        if u.id in text
    ]


def _after(plan: Plan, a: WaveState, b: WaveState, forward: Pools, back: Pools) -> list[Step]:
    steps: list[Step] = []
    d = plan.platform.delivery
    if "argocd" in d.engines and d.remote:
        steps.append(
            Step(
                "manual",
                ARGOCD_APPS,
                f"Argo CD, remote cluster: once the wave's 00-operators are applied (after the pre-transition gates "
                f"and the release Job), sync `{plan.platform.name}-apps` by hand with `--prune`: it installs or removes "
                "the releases; then wait until every child Application the wave removes is gone",
                after="00-operators",
            )
        )
    if static_forward := drained_by_hand(plan, forward):
        steps.append(
            Step(
                "manual",
                "uncordon",
                "once the enable Job has completed (the DRA kubelet plugin runs there), uncordon the nodes now "
                "on DRA (their taint stays): the post-transition gates place their probes on them",
                static_forward,
                after="enable",
            )
        )
    if pools := _static(plan, back):
        steps += [
            Step(
                "manual",
                "untaint",
                "once the node labels are applied (the device plugin runs there again), remove the DRA taint "
                "(hand-off to the provisioner's owner): the post-transition gates place their probes there",
                pools,
                after="10-nodes",
            ),
        ]
    if pools := drained_by_hand(plan, back):
        steps.append(
            Step(
                "manual", "uncordon", "uncordon the nodes back on the device plugin", pools, after="10-nodes"
            )
        )
    if pools := drained_by_hand(plan, a.drains if b.index < a.index else ()):
        steps.append(
            Step(
                "manual",
                "uncordon",
                f"uncordon the nodes drain wave {a.name} drained: they stay legacy",
                pools,
            )
        )
    if set(b.workloads) - set(a.workloads):
        steps.append(
            Step(
                "manual",
                "convert-workloads",
                "apply the converted workload hand-offs (claims instead of nvidia.com/gpu)",
            )
        )
    if back:
        steps.append(
            Step(
                "manual",
                "restore-legacy-workloads",
                "the workloads removed from the pools that went back return on their legacy manifests",
                back,
            )
        )
    if (switch := _owners_device_plugin(plan, a, b)) is not None and not b.device_plugin_enabled:
        steps.append(switch)
    if b.drains and b.index > a.index:
        steps.append(
            Step(
                "manual",
                "drain-pools",
                "drain the pools the next wave moves between allocators (static pools and node groups are "
                "cordoned and drained now and stay cordoned until that wave; Karpenter drains its nodes when it "
                "replaces them)",
                b.drains,
            )
        )
    return steps


def transition_steps(plan: Plan, a: WaveState, b: WaveState) -> tuple[Step, ...]:
    """Every step of the transition from `a` to `b`, in order (empty when `a` is `b`)."""
    if a.index == b.index:
        return ()
    merge = Step("merge", "merge", f"set activeWave: {b.name}, synth, review and merge")
    moves = _moves(a, b, "dra"), _moves(a, b, "legacy")
    return tuple(
        [*_before(plan, a, b, *moves), merge, *_sync(plan, a, b, *moves), *_after(plan, a, b, *moves)]
    )


#: Node maintenance events the runbook gives steps for (and `simulate` replays or tests).
MaintenanceEvent = Literal["restart", "driver-upgrade", "mig-change"]


def mig_capable(plan: Plan, pool: str) -> bool:
    """Whether the pool's GPUs can be partitioned (its product has MIG profiles, or it declares a layout)."""
    spec = plan.pools[pool]
    try:
        return bool(spec.mig_layout or mig_profiles(spec.product))
    except InputError:  # a product the catalog does not know: its MIG support is unknown
        return False


def maintenance_steps(
    plan: Plan, state: WaveState, pool: str, event: MaintenanceEvent
) -> tuple[tuple[Step, ...], tuple[Step, ...]]:
    """What the operator does before and after a node restart, a driver upgrade done by hand or a MIG
    change (`nvidia.com/mig.config`) of `pool` in `state` (the runbook's node maintenance; an
    unattended upgrade is the GPU Operator's).

    A MIG change on a DRA node: the MIG manager cannot destroy GPU instances a pod uses, so the claim
    holders are drained first; DRA driver v0.4.1 enumerates the node's devices once, when its kubelet
    plugin starts, and never republishes them after a MIG change made outside it (the model's
    `Group.published_layout`), so the plugin is restarted on the node once the MIG manager reports
    success, before the node is uncordoned.

    Before a driver upgrade of a DRA node its claim holders are drained while the kubelet plugin
    runs: the driver manager takes the plugin away (NODE_LABEL_FOR_GPU_POD_EVICTION) in the same
    batch as the operands, before it drains GPU pods (NVIDIA/k8s-driver-manager
    `evictAllGPUOperatorComponents`, v0.10.0-v0.12.0); the node is uncordoned after. On a pool that
    turns the operator-validator off, nothing recreates `/run/nvidia/validations/toolkit-ready` after
    either event (only the validator writes it), so the operator revalidates the node afterwards.
    """
    if state.pool_modes[pool] != "dra":
        return (), ()
    before: list[Step] = []
    after: list[Step] = []
    if event == "driver-upgrade":
        before.append(
            Step(
                "manual",
                "drain-claims",
                "cordon the node and drain its GPU pods while its DRA kubelet plugin runs",
                (pool,),
            )
        )
        after.append(
            Step("manual", "uncordon-node", "uncordon the node once its driver pod is Ready again", (pool,))
        )
    if event == "mig-change":
        if not mig_capable(plan, pool):
            return (), ()
        before.append(
            Step(
                "manual",
                "drain-claims",
                "cordon the node and drain its GPU pods while its DRA kubelet plugin runs (the MIG manager "
                "cannot destroy GPU instances a pod uses)",
                (pool,),
            )
        )
        after += [
            Step(
                "manual",
                "restart-kubelet-plugin",
                "once nvidia.com/mig.config.state is success, restart the DRA kubelet plugin on the node: "
                "it publishes only the devices it found when it started",
                (pool,),
            ),
            Step(
                "manual",
                "uncordon-node",
                "uncordon the node once its ResourceSlices list the new devices",
                (pool,),
            ),
        ]
        return tuple(before), tuple(after)
    if validator_workaround(plan.platform, plan.pools[pool], state.device_plugin_enabled):
        after.append(
            Step(
                "manual",
                "revalidate",
                "the pool turns the validator off (operatorValidator: false): once the toolkit pod is Ready, "
                "recreate the marker (kubectl debug node/<node> --image=busybox -- touch "
                "/host/run/nvidia/validations/toolkit-ready)",
                (pool,),
            )
        )
    return tuple(before), tuple(after)
