"""Runbook commands for a new DRA node group created next to a legacy one (`takesOverFrom`).

Forward, the new group is created as a copy of the old one, born with the target wave's hand-off
(the DRA labels and taint, so no device plugin ever runs on it), then the old group gives up as
many nodes; back, the old group gets its nodes back first, then the new group's claims are
released (a step of its own, while the kubelet plugin runs), and the group is drained and
deleted. The cloud commands are `render/cloud_commands.py`'s; the step order is `plan.steps`'.
"""

from __future__ import annotations

from gpuplatform.labels import DEVICE_PLUGIN_DEPLOY_LABEL, DRA_PLUGIN_LABEL
from gpuplatform.model.nodes import NodePool
from gpuplatform.plan.steps import Step
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.cloud_commands import (
    CLOUD_VARIABLES,
    node_group_create,
    node_group_delete,
    node_group_resize,
)
from gpuplatform.render.runbook_actions import Action
from gpuplatform.render.runbook_pools import (
    CHECK_FAILED,
    GPU_PODS,
    HOLDS_TEXT,
    check_each_node,
    handoff_file,
    handoff_spec,
    node_target,
)

__all__ = ["TAKEOVER_ACTIONS", "takeover_actions"]

#: The manual steps of `plan.steps` for new groups, in the order they may appear.
TAKEOVER_ACTIONS = ("give-back-nodes", "delete-node-group", "create-node-group", "take-nodes")


def _cloud(pool: NodePool) -> tuple[str, str]:
    """(cloud, group name) of a node-group pool (the model refuses a takeover without a cloud)."""
    assert pool.provisioner is not None and pool.provisioner.cloud is not None
    return pool.provisioner.cloud, pool.provisioner.name


def _variables(cloud: str) -> str:
    return ", ".join(f"`{v}`" for v in CLOUD_VARIABLES[cloud])


def _count_at_least(pool: NodePool, count: int) -> str:
    """Wait until `count` nodes of the pool are Ready."""
    ready = (
        f"kubectl get nodes {node_target(pool)} -o json | jq '[.items[] | select(.status.conditions[]? "
        '| select(.type == "Ready" and .status == "True"))] | length\''
    )
    return f'until [ "$({ready})" -ge {count} ]; do sleep 15; done'


def _show(plan: Plan, pool: NodePool) -> str:
    mode = plan.platform.mode_label_key
    return f"kubectl get nodes {node_target(pool)} -L {DRA_PLUGIN_LABEL},{DEVICE_PLUGIN_DEPLOY_LABEL},{mode}"


def _create(plan: Plan, b: WaveState, pool: NodePool, source: NodePool) -> list[Action]:
    cloud, name = _cloud(pool)
    _, old = _cloud(source)
    assert pool.provisioner is not None
    spec = handoff_spec(plan, b, pool)
    labels, taints = spec["labels"], spec["taints"]
    assert isinstance(labels, dict) and isinstance(taints, list)
    count, most = pool.provisioner.min_nodes, pool.provisioner.max_nodes
    shown = ", ".join(f"`{k}={v}`" for k, v in labels.items())
    return [
        Action(
            f"Pool `{pool.name}`: create {cloud.upper()} node group `{name}` as a copy of `{old}` (pool "
            f"`{source.name}`; its machine type, GPUs, image and zones are read from the live group) with {count} "
            f"node(s){f' (at most {most})' if most is not None else ''}, born with hand-off "
            f"`{handoff_file(plan, b, 'NodePoolHandoff', pool.name)}`: labels {shown} and its taint, so no device "
            f"plugin ever runs there and the DRA kubelet plugin starts once the driver runs. Set {_variables(cloud)}, "
            "then:",
            node_group_create(cloud, name, old, count, most, labels, taints),
        ),
        Action(
            f"Wait for the {count} node(s) of `{name}` and check their labels (no `{DEVICE_PLUGIN_DEPLOY_LABEL}` other than "
            "`false`, the DRA labels set):",
            (_count_at_least(pool, count), _show(plan, pool)),
        ),
    ]


def _take(plan: Plan, pool: NodePool, source: NodePool) -> list[Action]:
    cloud, _ = _cloud(pool)
    _, old = _cloud(source)
    assert pool.provisioner is not None
    count = pool.provisioner.min_nodes
    return [
        Action(
            f"Pool `{source.name}`: shrink node group `{old}` by {count} node(s), and its maximum with it, now that "
            f"`{pool.provisioner.name}` carries them. The cloud picks the nodes it removes and drains them "
            "(their device-plugin pods are rescheduled on the group's other nodes: `capacity` counted the group "
            f"with {count} node(s) fewer from this wave on). Set {_variables(cloud)}, then:",
            node_group_resize(cloud, old, -count),
        ),
        Action(f"Check what is left of `{old}`:", (_show(plan, source),)),
    ]


def _give_back(plan: Plan, pool: NodePool, source: NodePool) -> list[Action]:
    cloud, _ = _cloud(pool)
    _, old = _cloud(source)
    assert pool.provisioner is not None and source.provisioner is not None
    count = pool.provisioner.min_nodes
    return [
        Action(
            f"Pool `{source.name}`: grow node group `{old}` by the {count} node(s) `{pool.provisioner.name}` took "
            f"(and its maximum with it) before that group goes: its new nodes come up on the device plugin, with "
            f"the group's own labels. Set {_variables(cloud)}, then:",
            (*node_group_resize(cloud, old, count), _count_at_least(source, source.provisioner.min_nodes)),
        )
    ]


def _delete(plan: Plan, pool: NodePool) -> list[Action]:
    cloud, name = _cloud(pool)
    target = node_target(pool)
    return [
        Action(
            f"Pool `{pool.name}`: its claims are released (the step before); drain node group `{name}`:",
            (
                f"kubectl cordon {target}",
                f"kubectl drain {target} --ignore-daemonsets --delete-emptydir-data",
            ),
        ),
        Action(
            f"Check that no live pod on node group `{name}` {HOLDS_TEXT} (prints nothing):",
            (check_each_node(pool, GPU_PODS),),
        ),
        Action(
            f"Delete node group `{name}` (the target wave has no such pool; its gates would not look at its nodes). "
            f"Set {_variables(cloud)}, then (the check prints nothing once every node is gone):",
            (
                *node_group_delete(cloud, name),
                f'nodes=$(kubectl get nodes {target} -o name) && [ -z "$nodes" ] '
                f'|| echo "{CHECK_FAILED} nodes of node group {name} remain or could not be listed: $nodes"',
            ),
        ),
    ]


def takeover_actions(plan: Plan, a: WaveState, b: WaveState, step: Step) -> list[Action]:
    """The commands of one new-group step of the transition from `a` to `b`, pool by pool."""
    actions: list[Action] = []
    for name in step.pools:
        pool = plan.pools[name]
        assert pool.takes_over_from is not None
        source = plan.pools[pool.takes_over_from]
        if step.action == "create-node-group":
            actions += _create(plan, b, pool, source)
        elif step.action == "take-nodes":
            actions += _take(plan, pool, source)
        elif step.action == "give-back-nodes":
            actions += _give_back(plan, pool, source)
        else:
            actions += _delete(plan, pool)
    return actions
