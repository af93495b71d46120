"""The operator's manual steps (from the step sequence) acting on the modelled cluster.

Taints and provisioner labels come from the rendered hand-offs of the target wave. A pool
selected by a label selector inside its group is relabelled in place, node by node, as its runbook
does (`render/runbook_pools.py`: the group's template is shared with its other pools), and so is a
cloud's node group: the cloud applies the group's new labels and taints to its running nodes (GKE
"Update Kubernetes node labels and taints for node pools"). Any other provisioner-managed pool is
replaced, not relabelled: Karpenter copies the NodePool template's labels to a node only when it
registers (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/nodeclaim/lifecycle/registration.go
`syncNode`) and replaces drifted nodes (`disruption/drift.go`); Cluster API pools and node groups
of no named cloud get their labels at registration (kubelet `--node-labels`), so their nodes are
replaced the same way. A new group next to an old
one (`takesOverFrom`) registers its nodes the same way, and the old group's nodes it takes are
drained and deleted (`gcloud container clusters resize`: "When decreasing a cluster, the nodes are
drained").
"""

from __future__ import annotations

from typing import Any

from gpuplatform.labels import DRA_PLUGIN_LABEL, VALIDATOR_DEPLOY_LABEL
from gpuplatform.plan.steps import OPERATOR_DEVICE_PLUGIN, Step, drained_by_hand
from gpuplatform.render.helm_values import merge_values
from gpuplatform.simulate.groups import pool_group, provisioned_name
from gpuplatform.simulate.model import Group
from gpuplatform.simulate.operator import host_driver
from gpuplatform.simulate.workloads import converted, legacy
from gpuplatform.simulate.world import World

__all__ = ["apply_manual", "handoff"]


def handoff(world: World, wave: str, pool: str) -> dict[str, Any]:
    """The rendered `NodePoolHandoff` spec of `pool` in `wave` (empty when none is rendered)."""
    state = world.plan.wave(wave)
    content = world.tree.files.get(f"handoff/{state.dir_name}/nodepoolhandoff_{pool}.yaml")
    spec: dict[str, Any] = content[0]["spec"] if isinstance(content, list) else {}
    return spec


def _groups(world: World, pools: tuple[str, ...]) -> list[Group]:
    return [g for g in world.cluster.groups if g.pool in pools]


def _evict(world: World, groups: list[Group], *, claims_only: bool, delete: bool, why: str) -> None:
    ids = {g.id for g in groups}
    for w in world.cluster.workloads:
        if w.group in ids and (not claims_only or w.allocator in ("dra", "bridge")):
            w.moves = True
            w.evict(why, delete=delete)


def _register(world: World, pool: str, gid: str, nodes: list[str], spec: dict[str, Any]) -> Group:
    """New nodes of `pool` register with their group template's labels and taints: the kubelet's,
    the pool's member labels and the hand-off's; nothing runs on them yet."""
    new = pool_group(world.plan.pools[pool], gid, nodes, registered=True)
    for key, value in (spec.get("labels") or {}).items():
        new.set_label(str(key), str(value), "provisioner")
    new.taints = [dict(t) for t in spec.get("taints") or []]
    new.driver_loaded = host_driver(world)
    world.cluster.groups.append(new)
    world.record("provisioner", f"new node {new.name} registers with the hand-off's labels and taints")
    world.settle()
    return new


def _remove(world: World, group: Group, why: str) -> None:
    """The provisioner cordons and drains the nodes, then deletes them."""
    group.cordoned = True
    _evict(world, [group], claims_only=False, delete=False, why=why)
    world.record("provisioner", f"drains {group.name} ({why})")
    world.settle()
    world.cluster.groups.remove(group)
    group.slices = "none"
    world.record("provisioner", f"deletes {group.name}")


def _replace(world: World, group: Group, spec: dict[str, Any]) -> None:
    """The provisioner launches a node born with the hand-off's labels and taints, then drains and deletes the old one."""
    new = _register(world, group.pool, f"{group.id}~new", [f"{n}-r" for n in group.nodes], spec)
    new.elastic = group.elastic
    _remove(world, group, f"provisioner replaces {group.name}")


def _create_group(world: World, pool: str, target: str) -> None:
    """`create-node-group`: the new group's nodes, copies of its source pool's, born with the hand-off."""
    owner = world.plan.pools[pool].provisioner
    assert owner is not None
    nodes = [provisioned_name(pool, i) for i in range(max(1, owner.min_nodes))]
    _register(world, pool, pool, nodes, handoff(world, target, pool))


def _take_nodes(world: World, pool: str) -> None:
    """`take-nodes`: the source group shrinks by the new group's nodes; the cloud drains those it removes."""
    spec = world.plan.pools[pool]
    assert spec.provisioner is not None and spec.takes_over_from is not None
    left = spec.provisioner.min_nodes
    for group in [g for g in world.cluster.groups if g.pool == spec.takes_over_from]:
        if left <= 0:
            break
        part = group if len(group.nodes) <= left else group.split(left, f"~to-{pool}")
        if part is not group:
            world.cluster.groups.insert(world.cluster.groups.index(group), part)
        left -= len(part.nodes)
        _remove(world, part, f"node group {spec.takes_over_from} shrinks for {pool}")


def _give_back(world: World, pool: str, target: str) -> None:
    """`give-back-nodes`: the source group grows by the nodes the new group took, with its own template."""
    spec = world.plan.pools[pool]
    assert spec.provisioner is not None and spec.takes_over_from is not None
    source = spec.takes_over_from
    names = [f"{source}-from-{pool}-{i}" for i in range(spec.provisioner.min_nodes)]
    _register(world, source, f"{source}~from-{pool}", names, handoff(world, target, source))


def _delete_group(world: World, pool: str) -> None:
    """`delete-node-group`: cordoned, drained and deleted (its claims were released the step before)."""
    for group in [g for g in world.cluster.groups if g.pool == pool]:
        _remove(world, group, f"node group {pool} is deleted")


def _taint(group: Group, spec: dict[str, Any]) -> None:
    """`kubectl taint`: the hand-off's taints the group does not carry yet."""
    for taint in spec.get("taints") or []:
        if taint not in group.taints:
            group.taints.append(dict(taint))


def _untaint(group: Group, spec: dict[str, Any]) -> None:
    """`kubectl taint ...-`: the taints the hand-off removes."""
    removed = spec.get("removeTaints") or []
    group.taints = [t for t in group.taints if t not in removed]


def _relabel(world: World, group: Group, spec: dict[str, Any]) -> None:
    """The hand-off on the running nodes, as the runbook does it (`runbook_pools._selected_nodes_update`,
    `_cloud_update`): to DRA, the taint and every label but the DRA kubelet plugin's, then, once the
    device plugin is gone, the plugin's label; back, the plugin's label first, then, once its
    ResourceSlices are gone, the rest and the taint."""
    labels = {str(k): str(v) for k, v in (spec.get("labels") or {}).items()}
    removed = [str(k) for k in spec.get("removeLabels") or []]
    if DRA_PLUGIN_LABEL in removed:
        group.set_label(DRA_PLUGIN_LABEL, None, "kubectl")
        world.record(
            "operator", f"removes {DRA_PLUGIN_LABEL} from {group.name}, waits for its ResourceSlices to go"
        )
        world.settle(until=lambda: group.slices == "none")
    _taint(group, spec)
    for key, value in labels.items():
        if key != DRA_PLUGIN_LABEL:
            group.set_label(key, value, "kubectl")
    for key in removed:
        group.set_label(key, None, "kubectl")
    _untaint(group, spec)
    world.record("operator", f"labels and taints {group.name} in place with the hand-off's")
    world.settle()
    if DRA_PLUGIN_LABEL in labels:
        world.settle(until=lambda: not group.device_plugin_registered)
        group.set_label(DRA_PLUGIN_LABEL, labels[DRA_PLUGIN_LABEL], "kubectl")
        world.record("operator", f"sets {DRA_PLUGIN_LABEL} on {group.name} once its device plugin is gone")
        world.settle()


def _in_place(world: World, pool: str) -> bool:
    """Whether the runbook moves `pool` by relabelling its running nodes: a pool selected inside its
    group by labels, or a cloud's node group, whose labels the cloud applies to its running nodes
    (GKE "Update Kubernetes node labels and taints for node pools": "without re-creating the node
    pool")."""
    spec = world.plan.pools[pool]
    p = spec.provisioner
    return spec.selector is not None or (p is not None and p.kind == "node-group" and p.cloud is not None)


def apply_manual(world: World, step: Step, source: str, target: str) -> None:
    """Perform one manual step, record it, let the controllers react."""
    groups = _groups(world, step.pools)
    action = step.action
    if action == "taint":
        for g in groups:
            _taint(g, handoff(world, target, g.pool))
    elif action == "untaint":
        for g in groups:
            _untaint(g, handoff(world, target, g.pool))
    elif action in ("cordon", "uncordon", "uncordon-node"):
        for g in groups:
            g.cordoned = action == "cordon"
    elif action == "drain-gpu-pods":
        _evict(world, groups, claims_only=False, delete=False, why="drained before the allocator switch")
    elif action == "drain-pools":
        drained = _groups(world, drained_by_hand(world.plan, step.pools))
        for g in drained:
            g.cordoned = True
        _evict(world, drained, claims_only=False, delete=False, why=f"drained in drain wave {target}")
    elif action in ("release-claims", "drain-claims"):
        if action == "drain-claims":
            for g in groups:
                g.cordoned = True
        _evict(world, groups, claims_only=True, delete=action == "release-claims", why=step.what)
        gone = {
            t.ns
            for t in world.plan.platform.tenants
            if t.name in world.plan.wave(source).tenants and t.name not in world.plan.wave(target).tenants
        }
        for w in world.cluster.workloads:
            if w.namespace in gone and w.kind == "claim":
                w.moves = True
                w.evict(step.what, delete=True)
    elif action == "apply-handoff":
        world.record("operator", step.what)
        for g in groups:
            spec = handoff(world, target, g.pool)
            if _in_place(world, g.pool):
                _relabel(world, g, spec)
            else:
                _replace(world, g, spec)
        return
    elif action in ("create-node-group", "take-nodes", "give-back-nodes", "delete-node-group"):
        for pool in step.pools:
            if action == "create-node-group":
                _create_group(world, pool, target)
            elif action == "take-nodes":
                _take_nodes(world, pool)
            elif action == "give-back-nodes":
                _give_back(world, pool, target)
            else:
                _delete_group(world, pool)
    elif action in ("convert-workloads", "roll-back-workloads", "restore-legacy-workloads"):
        _convert(world, source, target)
    elif action == OPERATOR_DEVICE_PLUGIN:  # helm upgrade --reuse-values --set devicePlugin.enabled=...
        enabled = world.plan.wave(target).device_plugin_enabled
        world.operator_handoff = merge_values(
            world.operator_handoff or {}, {"devicePlugin": {"enabled": enabled}}
        )
    elif action == "restart-kubelet-plugin":  # kubectl delete pod: the DaemonSet starts it again
        for g in groups:
            if g.kubelet_plugin == "running":
                g.kubelet_plugin, g.published_layout = "absent", None
    elif action == "revalidate":
        for g in groups:
            if (
                g.operands.get("container-toolkit") == "running"
                and g.labels.get(VALIDATOR_DEPLOY_LABEL) == "false"
            ):
                g.markers.add("toolkit-ready")
    world.record(
        "operator", f"{step.action}: {step.what}" + (f" ({', '.join(step.pools)})" if step.pools else "")
    )
    world.settle()


def _convert(world: World, source: str, target: str) -> None:
    """Replace each spec workload whose form differs between the waves by its other form."""
    a, b = world.plan.wave(source), world.plan.wave(target)
    p = world.plan.platform
    for index in sorted(set(a.workloads) ^ set(b.workloads)):
        spec = p.workloads[index]
        kind = "claim" if index in b.workloads else "legacy"
        pods = [
            w
            for w in world.cluster.workloads
            if w.origin == "spec"
            and (w.namespace, w.workload) == (spec.namespace, spec.name)
            and w.phase != "done"
        ]
        if pods and all(w.kind == kind for w in pods):  # rolled back before the merge already
            continue
        for w in world.cluster.workloads:
            if w.origin == "spec" and (w.namespace, w.workload) == (spec.namespace, spec.name):
                w.moves = w.converting = True
                w.evict("converted", delete=True)
        fresh = converted(world.plan, index) if index in b.workloads else legacy(world.plan, index)
        for w in fresh:
            w.moves = w.converting = True
        world.cluster.workloads += fresh
