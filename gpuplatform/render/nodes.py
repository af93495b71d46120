"""Partial Node objects (labels only, server-side applied) for the nodes of static pools."""

from __future__ import annotations

from gpuplatform.labels import (
    DEVICE_PLUGIN_DEPLOY_LABEL,
    DRA_PLUGIN_LABEL,
    MIG_CONFIG_LABEL,
    VALIDATOR_DEPLOY_LABEL,
)
from gpuplatform.model.nodes import NodePool
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import Mode, Plan, WaveState, validator_workaround
from gpuplatform.render.meta import NEVER_DELETE_ANNOTATIONS, Obj, k8s_object

#: Where the Node objects live, once per pool state, for every wave's `10-nodes` to name.
NODES_ROOT = "nodes"

__all__ = [
    "NODES_ROOT",
    "node_folders",
    "node_labels",
    "pool_taint",
    "provisioner_labels",
]


def node_labels(
    platform: Platform, pool: NodePool, mode: Mode, device_plugin_enabled: bool = True
) -> dict[str, str]:
    """Labels GitOps applies to a pool's nodes in `mode`.

    DRA: the mode label `dra`, `nvidia.com/gpu.deploy.device-plugin=false` and, while the
    validator workaround is needed, `nvidia.com/gpu.deploy.operator-validator=false`. Never
    `nvidia.com/dra-kubelet-plugin`: the allocator switch Jobs own it (render/allocator_switch.py).
    Legacy: the mode label only; the operator owns its `nvidia.com/gpu.deploy.*=true` labels.
    """
    labels: dict[str, str] = {platform.mode_label_key: mode}
    if mode == "dra":
        labels[DEVICE_PLUGIN_DEPLOY_LABEL] = "false"
        if validator_workaround(platform, pool, device_plugin_enabled):
            labels[VALIDATOR_DEPLOY_LABEL] = "false"
    return labels


def provisioner_labels(
    platform: Platform, pool: NodePool, mode: Mode, device_plugin_enabled: bool = True
) -> dict[str, str]:
    """Labels a provisioner gives the pool's new nodes: `node_labels` and, on DRA, the kubelet plugin's.

    A new node never ran the device plugin, so it may start with both; provisioners set template
    labels only when a node registers and never write them back (karpenter v1.9.1
    `registration.go` `syncNode`), so they do not fight the driver manager.
    """
    labels = node_labels(platform, pool, mode, device_plugin_enabled)
    if mode == "dra":
        labels[DRA_PLUGIN_LABEL] = "true"
    config = pool.mig_config_name
    if config is not None and pool.selector is None:
        # in every wave: a node the group creates must come up with the pool's layout
        labels[MIG_CONFIG_LABEL] = config
    return dict(sorted(labels.items()))


def pool_taint(platform: Platform, pool: NodePool) -> dict[str, str]:
    """The DRA pool's taint as a Kubernetes taint (default `<modeLabel>=dra:NoSchedule`)."""
    if pool.taint is not None:
        taint = {"key": pool.taint.key, "value": pool.taint.value, "effect": pool.taint.effect}
        return {k: v for k, v in taint.items() if v}
    return {"key": platform.mode_label_key, "value": "dra", "effect": "NoSchedule"}


def _state(labels: dict[str, str], mode: Mode) -> str:
    """The name of a pool's node state: its mode, and whether the validator is kept off."""
    return f"{mode}-without-validator" if VALIDATOR_DEPLOY_LABEL in labels else mode


def node_folders(plan: Plan, state: WaveState) -> dict[str, list[Obj]]:
    """The partial Node of every node of every static pool, never pruned and never deleted, by the
    folder under `nodes/` that holds them: `<pool>/<state>`. Their content is the pool's labels in
    the wave, never the wave itself, so every wave that gives a pool the same labels applies the same
    folder (a pool's Nodes differ only in their name: built once per pool, copied per node)."""
    folders: dict[str, list[Obj]] = {}
    for pool in plan.platform.node_pools:
        if not pool.nodes:
            continue
        mode = state.pool_modes[pool.name]
        labels = node_labels(plan.platform, pool, mode, state.device_plugin_enabled)
        shape = k8s_object("v1", "Node", "", wave=None, labels=labels, annotations=NEVER_DELETE_ANNOTATIONS)
        meta = shape["metadata"]
        folders[f"{pool.name}/{_state(labels, mode)}"] = [
            {
                **shape,
                "metadata": {
                    **meta,
                    "name": node,
                    "labels": {**meta["labels"]},
                    "annotations": {**meta["annotations"]},
                },
            }
            for node in pool.nodes
        ]
    return folders
