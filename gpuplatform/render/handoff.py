"""Hand-offs: changes to objects the tool does not own, written where no engine syncs them.

Node taints are whole-list fields owned by the node provisioner, and provisioner-managed pools
have no Node objects at all, so their labels and taints are handed to the provisioner's owner.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from gpuplatform.gates.nodes import pool_selector
from gpuplatform.model.nodes import NodePool
from gpuplatform.model.workloads import NimService, Workload
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, order_keys
from gpuplatform.render.nodes import node_labels, pool_taint, provisioner_labels

__all__ = [
    "HANDOFF_API",
    "converted_file",
    "handoff_labels",
    "karpenter_labels_patch",
    "render_pool_handoffs",
]

HANDOFF_API = "gpuplatform.dev/v1alpha1"


def converted_file(item: Workload | NimService) -> str:
    """The hand-off file of the converted manifest of a workload or NIM service that names one."""
    if isinstance(item, NimService):
        return f"nimservice_{item.namespace}_{item.name}.yaml"
    return PurePosixPath(item.manifest or "").name


def handoff_labels(plan: Plan, state: WaveState, pool: NodePool) -> dict[str, str]:
    """The labels the pool's nodes carry in `state`: GitOps's (static) or the provisioner template's."""
    mode = state.pool_modes[pool.name]
    if pool.provisioner is None:
        return node_labels(plan.platform, pool, mode, state.device_plugin_enabled)
    return provisioner_labels(plan.platform, pool, mode, state.device_plugin_enabled)


def _other_wave_labels(plan: Plan, state: WaveState, pool: NodePool) -> list[str]:
    """Labels the pool carries in another wave and not in `state`: the hand-off removes them, so it
    reaches `state` from any wave (a rollback undoes its forward hand-off, never only sets the mode)."""
    here = handoff_labels(plan, state, pool)
    keys = {key for other in plan.waves for key in handoff_labels(plan, other, pool)}
    return sorted(keys - set(here))


def karpenter_labels_patch(plan: Plan, state: WaveState, pool: NodePool) -> Obj:
    """A JSON merge patch (RFC 7386) of the pool's Karpenter NodePool: the template labels of this
    wave, and `null` for every label the pool carries in another wave and not in this one, so it
    reaches this wave's labels from any wave (`kubectl patch nodepool NAME --type merge --patch-file F`).

    Taints are a whole-list field the NodePool's owner shares: a merge patch would replace the list,
    so the taint is a JSON patch the runbook builds from the live list (`runbook_pools.py`)."""
    assert pool.provisioner is not None
    labels: dict[str, str | None] = dict(handoff_labels(plan, state, pool))
    labels.update(dict.fromkeys(_other_wave_labels(plan, state, pool)))
    return order_keys(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": pool.provisioner.name},
            "spec": {"template": {"metadata": {"labels": dict(sorted(labels.items()))}}},
        }
    )


def render_pool_handoffs(plan: Plan, state: WaveState) -> list[Obj]:
    """Per pool: the labels its nodes must carry in this wave and those of other waves they must
    lose (`removeLabels`), the taint they carry or lose, and whether they must be empty of GPU
    workloads (a drain wave, before the next wave moves them). Applying any wave's hand-off after
    another's gives the same labels and taints, so every rollback undoes its forward hand-off."""
    objects: list[Obj] = []
    for pool in plan.platform.node_pools:
        if not state.present(pool.name):
            continue
        mode = state.pool_modes[pool.name]
        taints = [pool_taint(plan.platform, pool)] if mode == "dra" else []
        owner = {"kind": "static", "name": pool.name}
        if pool.provisioner is not None:
            owner = {"kind": pool.provisioner.kind, "name": pool.provisioner.name}
        handoff: Obj = {
            "apiVersion": HANDOFF_API,
            "kind": "NodePoolHandoff",
            "metadata": {"name": pool.name},
            "spec": {
                "wave": state.name,
                "mode": mode,
                "drain": pool.name in state.drains,
                "provisioner": owner,
                "nodes": list(pool.nodes),
                "labels": handoff_labels(plan, state, pool),
                "removeLabels": _other_wave_labels(plan, state, pool),
                "taints": taints,
                "removeTaints": [] if mode == "dra" else [pool_taint(plan.platform, pool)],
            },
        }
        if pool.selector is not None:
            term = pool_selector(pool).node_selector_term()
            handoff["spec"]["selector"] = {"matchExpressions": term["matchExpressions"]}
        objects.append(order_keys(handoff))
        if pool.provisioner is not None and pool.provisioner.kind == "karpenter":
            objects.append(karpenter_labels_patch(plan, state, pool))
    return objects
