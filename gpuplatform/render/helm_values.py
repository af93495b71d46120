"""The Helm values the migration needs, merged onto the team's own values without dropping any."""

from __future__ import annotations

from typing import Any

from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.nodes import DRA_PLUGIN_LABEL, pool_taint

__all__ = ["EVICTION_ENV", "dra_driver_values", "gpu_operator_values", "merge_values"]

#: The GPU Operator's driver manager evicts the DRA kubelet plugin on driver upgrades (dra-api.md §10).
EVICTION_ENV = {"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": DRA_PLUGIN_LABEL}
_RESOURCE_API = "resource.k8s.io/v1"


def merge_values(team: Any, ours: Any) -> Any:
    """Deep-merge `ours` onto `team`: mappings merge, lists of named items merge by name, lists of
    other mappings gain our items they lack, scalars become ours. Team keys we do not set stay."""
    if isinstance(team, dict) and isinstance(ours, dict):
        out = dict(team)
        for key, value in ours.items():
            out[key] = merge_values(team[key], value) if key in team else value
        return out
    if isinstance(team, list) and isinstance(ours, list):
        if all(isinstance(i, dict) and "name" in i for i in team + ours):
            merged = {i["name"]: i for i in team}
            merged.update({i["name"]: merge_values(merged.get(i["name"], {}), i) for i in ours})
            return [merged[n] for n in dict.fromkeys([i["name"] for i in team] + [i["name"] for i in ours])]
        return team + [i for i in ours if i not in team]
    return ours


#: The NFD worker's own default toleration (gpu-operator v26.3.1 values.yaml), kept when ours replace the list.
_CONTROL_PLANE = {
    "key": "node-role.kubernetes.io/control-plane",
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}


def gpu_operator_values(plan: Plan, state: WaveState) -> dict[str, Any]:
    """Team values + driver-manager eviction env + `devicePlugin.enabled` (false once no pool is legacy)
    + operand and NFD worker tolerations for every DRA pool's taint.

    Helm replaces a list value, and the operator replaces every operand DaemonSet's tolerations
    with `daemonsets.tolerations` (controllers/object_controls.go `applyCommonDaemonsetConfig`), so
    both lists carry the chart's defaults too; without them the driver, toolkit, GFD, DCGM and MIG
    manager are never scheduled again on a tainted DRA node once the driver manager evicts them.
    """
    tolerations = _tolerations(plan)
    ours = {
        "devicePlugin": {"enabled": state.device_plugin_enabled},
        "driver": {"manager": {"env": [dict(EVICTION_ENV)]}},
        "daemonsets": {"tolerations": tolerations},
        "node-feature-discovery": {"worker": {"tolerations": [dict(_CONTROL_PLANE), *tolerations]}},
    }
    merged: dict[str, Any] = merge_values(plan.platform.gpu_operator.values, ours)
    return merged


def _tolerations(plan: Plan) -> list[dict[str, str]]:
    taints = {tuple(pool_taint(plan.platform, p).items()) for p in plan.platform.node_pools}
    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    for taint in sorted((dict(t) for t in taints), key=lambda t: (t["key"], t.get("value", ""), t["effect"])):
        item = {
            "key": taint["key"],
            "operator": "Equal",
            "value": taint.get("value", ""),
            "effect": taint["effect"],
        }
        tolerations.append(item if item["value"] else {k: v for k, v in item.items() if k != "value"})
    return tolerations


def dra_driver_values(plan: Plan) -> dict[str, Any]:
    """Team values + what the procedure needs: driver root, the device-plugin guard override, the
    resource API pinned, the kubelet plugin scoped to `nvidia.com/dra-kubelet-plugin=true` and
    tolerating the DRA pools' taints, and the driver feature gates."""
    d = plan.platform.dra_driver
    ours: dict[str, Any] = {
        "nvidiaDriverRoot": d.nvidia_driver_root,
        "gpuResourcesEnabledOverride": True,
        "resourceApiVersion": _RESOURCE_API,
        "kubeletPlugin": {"nodeSelector": {DRA_PLUGIN_LABEL: "true"}, "tolerations": _tolerations(plan)},
    }
    if d.feature_gates:
        ours["featureGates"] = dict(sorted(d.feature_gates.items()))
    merged: dict[str, Any] = merge_values(d.values, ours)
    return merged
