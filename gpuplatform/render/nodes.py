"""Partial Node objects (labels only, server-side applied) for the nodes of static pools."""

from __future__ import annotations

from gpuplatform.model.nodes import NodePool
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import Mode, Plan, WaveState
from gpuplatform.render.meta import NEVER_DELETE_ANNOTATIONS, Obj, k8s_object
from gpuplatform.versions import VALIDATOR_BUG_FIXED_IN, parse_release

__all__ = [
    "DEVICE_PLUGIN_LABEL",
    "DRA_PLUGIN_LABEL",
    "VALIDATOR_LABEL",
    "node_labels",
    "pool_taint",
    "render_nodes",
]

DRA_PLUGIN_LABEL = "nvidia.com/dra-kubelet-plugin"
DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.device-plugin"
VALIDATOR_LABEL = "nvidia.com/gpu.deploy.operator-validator"


def _validator_off(platform: Platform, pool: NodePool) -> bool:
    if pool.operator_validator is not None:
        return not pool.operator_validator
    fixed = VALIDATOR_BUG_FIXED_IN
    return fixed is None or parse_release(platform.gpu_operator.version) < fixed


def node_labels(platform: Platform, pool: NodePool, mode: Mode) -> dict[str, str]:
    """Labels a pool's nodes carry in `mode`.

    DRA: `nvidia.com/dra-kubelet-plugin=true`, `nvidia.com/gpu.deploy.device-plugin=false`, the
    mode label `dra` and, where the GPU Operator release has the validator bug,
    `nvidia.com/gpu.deploy.operator-validator=false`. Legacy: the mode label only; the operator
    owns its `nvidia.com/gpu.deploy.*=true` labels.
    """
    labels: dict[str, str] = {platform.mode_label_key: mode}
    if mode == "dra":
        labels[DRA_PLUGIN_LABEL] = "true"
        labels[DEVICE_PLUGIN_LABEL] = "false"
        if _validator_off(platform, pool):
            labels[VALIDATOR_LABEL] = "false"
    return labels


def pool_taint(platform: Platform, pool: NodePool) -> dict[str, str]:
    """The DRA pool's taint as a Kubernetes taint (default `<modeLabel>=dra:NoSchedule`)."""
    if pool.taint is not None:
        taint = {"key": pool.taint.key, "value": pool.taint.value, "effect": pool.taint.effect}
        return {k: v for k, v in taint.items() if v}
    return {"key": platform.mode_label_key, "value": "dra", "effect": "NoSchedule"}


def render_nodes(plan: Plan, state: WaveState) -> list[Obj]:
    """One partial Node per node of every static pool, never pruned and never deleted."""
    objects: list[Obj] = []
    for pool in plan.platform.node_pools:
        labels = node_labels(plan.platform, pool, state.pool_modes[pool.name])
        for node in pool.nodes:
            objects.append(
                k8s_object(
                    "v1", "Node", node, wave=state.name, labels=labels, annotations=NEVER_DELETE_ANNOTATIONS
                )
            )
    return objects
