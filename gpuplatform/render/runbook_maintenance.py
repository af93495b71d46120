"""The runbook's node maintenance while a wave is active: what the operator does around a driver
upgrade or a node restart of each pool (`plan.steps.maintenance_steps`, the steps `simulate`
replays around its disturbances), and what the GPU Operator does by itself.

Driver upgrades run unattended by default (`driver.upgradePolicy.autoUpgrade`, the chart's default):
the upgrade controller cordons and drains the node before it restarts the driver, because the
platform renders `driver.upgradePolicy.drain.enable` (`render/helm_values.py`). An upgrade done by
hand (autoUpgrade off) needs the plan's `drain-claims` step first. A MIG change of a DRA node ends
with a restart of its DRA kubelet plugin: DRA driver v0.4.1 publishes only the devices it found when
the plugin started (`plan.steps.maintenance_steps`).
"""

from __future__ import annotations

from gpuplatform.gates.nodes import pool_selector
from gpuplatform.plan.steps import Step, maintenance_steps
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.runbook_actions import Action

__all__ = ["maintenance_actions"]


def _commands(plan: Plan, step: Step) -> tuple[str, ...]:
    """The commands of a maintenance step, on the node `$NODE`."""
    if step.action == "drain-claims":
        return (
            'kubectl cordon "$NODE"',
            'kubectl drain "$NODE" --ignore-daemonsets --delete-emptydir-data',
        )
    if step.action == "uncordon-node":
        return ('kubectl uncordon "$NODE"',)
    if step.action == "restart-kubelet-plugin":
        ns = plan.platform.dra_driver.namespace
        pods = f'kubectl -n {ns} get pods --field-selector spec.nodeName="$NODE"'
        return (
            f'until [ "$(kubectl get node "$NODE" -o jsonpath={_MIG_STATE})" = success ]; do sleep 10; done',
            f"{pods} -o name | grep -- -kubelet-plugin- | xargs -r kubectl -n {ns} delete --wait",
            f"until {pods} -o jsonpath={_READY} | grep -- -kubelet-plugin- | grep -qv false; do sleep 5; done",
            'kubectl get resourceslices --field-selector spec.nodeName="$NODE" -o yaml',
        )
    return ()


#: jsonpath of the MIG manager's state label, and of each pod's name and its containers' readiness.
_MIG_STATE = "'{.metadata.labels.nvidia\\.com/mig\\.config\\.state}'"
_READY = "'{range .items[*]}{.metadata.name} {.status.containerStatuses[*].ready}{\"\\n\"}{end}'"


def _steps(plan: Plan, steps: tuple[Step, ...], when: str) -> list[Action]:
    return [Action(f"{when}: {s.what}.", _commands(plan, s)) for s in steps]


def maintenance_actions(plan: Plan, state: WaveState) -> list[Action]:
    """Per pool of `state` with maintenance steps: the unattended upgrade, then the steps by hand."""
    actions: list[Action] = []
    for name in state.pool_modes:
        if not state.present(name):
            continue
        before, after = maintenance_steps(plan, state, name, "driver-upgrade")
        _, restarted = maintenance_steps(plan, state, name, "restart")
        mig_before, mig_after = maintenance_steps(plan, state, name, "mig-change")
        if not (before or after or restarted or mig_before):
            continue
        parts = _steps(plan, before, "Before a driver upgrade by hand") + _steps(plan, after, "After it")
        parts += _steps(plan, restarted, "After a node restart")
        parts += _steps(plan, mig_before, "Before a MIG change (`nvidia.com/mig.config`) of the node")
        parts += _steps(plan, mig_after, "After it")
        where = pool_selector(plan.pools[name]).describe()
        actions.append(
            Action(
                f"Pool `{name}` ({where}), on DRA in this wave. Driver upgrades run unattended by default "
                "(`driver.upgradePolicy.autoUpgrade`): the GPU Operator's upgrade controller cordons each node and "
                "drains it (`driver.upgradePolicy.drain.enable`, in the values gpuplatform renders) before the driver "
                "restarts, so every claim is released while the DRA kubelet plugin still runs, and uncordons it after. "
                "By hand (autoUpgrade off), after a restart and around a MIG change, with `NODE` set to the node's name:",
                parts=tuple(parts),
            )
        )
    return actions
