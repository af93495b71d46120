"""The Helm values the migration needs, merged onto the team's own values without dropping any.

The team's values are what the running release has (`gpuplatform import operator-values`); the
platform's are merged on top: mappings merge, lists of named items merge by name, other lists
keep the team's items and gain ours. Lists Helm would replace wholesale (tolerations) start from
the team's list, or the chart's default (chart facts) when the team set none, so that setting them
never drops what the chart tolerated.
"""

from __future__ import annotations

from typing import Any

from gpuplatform.charts.facts import MISSING, ChartFacts, chart_facts, value_at
from gpuplatform.charts.model import OperatorOutput, render_gpu_operator
from gpuplatform.labels import DRA_PLUGIN_LABEL
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.tolerations import gpu_node_taints, tolerations_for
from gpuplatform.versions import DCGM_EXPORTER_DRA_ENV

__all__ = [
    "EVICTION_ENV",
    "EXPORTER_DRA_ENV",
    "UPGRADE_DRAIN",
    "dra_driver_chart",
    "dra_driver_values",
    "gpu_operator_chart",
    "gpu_operator_values",
    "merge_values",
    "operator_settings",
    "running_operator",
]

#: The GPU Operator's driver manager evicts the DRA kubelet plugin on driver upgrades (dra-api.md §10;
#: versions.DRIVER_MANAGER_EVICTION_LABEL_SINCE).
EVICTION_ENV = {"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": DRA_PLUGIN_LABEL}
#: The upgrade controller drains a node (`kubectl drain`: every pod, claim holders included) before it
#: restarts the driver, so unattended upgrades (`driver.upgradePolicy.autoUpgrade`, the chart default)
#: release claims while the DRA kubelet plugin still runs: without it the controller deletes only the
#: pods requesting `nvidia.com/gpu*` (NVIDIA/gpu-operator v26.3.1 `cmd/gpu-operator/main.go`
#: `gpuPodSpecFilter`) and the claim holders keep the driver loaded. The drain-required state comes
#: before pod-restart-required, whose new driver pod pauses the plugin (NVIDIA/k8s-operator-libs
#: a0a0256, the version v26.3.1 requires: `pkg/upgrade/upgrade_state.go`, `drain_manager.go`).
UPGRADE_DRAIN = {"driver": {"upgradePolicy": {"drain": {"enable": True}}}}
#: DCGM exporter's DRA mode: its metrics name the pods of DRA-allocated GPUs too
#: (versions.DCGM_EXPORTER_DRA_ENV; the read it needs is `render.dcgm_exporter`).
EXPORTER_DRA_ENV = {"name": DCGM_EXPORTER_DRA_ENV, "value": "true"}
_RESOURCE_API = "resource.k8s.io/v1"
#: NVIDIA/gpu-operator v26.3.1 controllers/object_controls.go `applyCommonDaemonsetConfig`: the
#: ClusterPolicy's `daemonsets.tolerations` replace the tolerations of every operand DaemonSet.
OPERAND_TOLERATIONS = ("daemonsets", "tolerations")
NFD_WORKER_TOLERATIONS = ("node-feature-discovery", "worker", "tolerations")
KUBELET_PLUGIN_TOLERATIONS = ("kubeletPlugin", "tolerations")


def merge_values(team: Any, ours: Any) -> Any:
    """Deep-merge `ours` onto `team`: mappings merge, lists of named items merge by name, lists of
    other items gain our items they lack, scalars become ours. Team keys we do not set stay."""
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


def gpu_operator_chart(platform: Platform) -> ChartFacts:
    """Facts of the gpu-operator chart the spec pins (the policy reports an inexact match)."""
    return chart_facts("gpu-operator", platform.gpu_operator.version)[0]


def dra_driver_chart(platform: Platform) -> ChartFacts:
    """Facts of the DRA driver chart the spec pins (its name changed in 0.4.0)."""
    return chart_facts("dra-driver", platform.dra_driver.chart_version)[0]


def _tolerations(team: dict[str, Any], chart: ChartFacts, path: tuple[str, ...], platform: Platform) -> Any:
    """The team's list at `path` (else the chart's default) tolerating every GPU-node taint."""
    base = value_at(team, path)
    if base is MISSING:
        base = chart.default(path)
    listed = base if isinstance(base, list) else []
    return tolerations_for([t for t in listed if isinstance(t, dict)], gpu_node_taints(platform))


def _nest(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {path[-1]: value}
    for key in reversed(path[:-1]):
        out = {key: out}
    return out


def operator_settings(platform: Platform) -> dict[str, Any]:
    """What the running GPU Operator needs in every wave, managed or not: the driver-manager
    eviction env, the upgrade controller's drain, DCGM exporter's DRA mode (unless the team's values
    set it; GP256 then checks it), and operand and NFD worker tolerations for every taint the spec
    puts on GPU nodes."""
    op = platform.gpu_operator
    chart = gpu_operator_chart(platform)
    ours: dict[str, Any] = merge_values(
        merge_values({"driver": {"manager": {"env": [dict(EVICTION_ENV)]}}}, UPGRADE_DRAIN),
        _nest(OPERAND_TOLERATIONS, _tolerations(op.values, chart, OPERAND_TOLERATIONS, platform)),
    )
    exporter_env = value_at(op.values, ("dcgmExporter", "env"))
    team_env = exporter_env if isinstance(exporter_env, list) else []
    team_set = any(isinstance(e, dict) and e.get("name") == DCGM_EXPORTER_DRA_ENV for e in team_env)
    if chart.effective(op.values, ("dcgmExporter", "enabled")) is True and not team_set:
        ours = merge_values(ours, {"dcgmExporter": {"env": [dict(EXPORTER_DRA_ENV)]}})
    if chart.effective(op.values, ("nfd", "enabled")) is True:
        worker = _tolerations(op.values, chart, NFD_WORKER_TOLERATIONS, platform)
        ours = merge_values(ours, _nest(NFD_WORKER_TOLERATIONS, worker))
    return ours


def gpu_operator_values(plan: Plan, state: WaveState) -> dict[str, Any]:
    """Team values + `devicePlugin.enabled` (false once no pool is legacy), `driver.version` from the
    spec (the chart default would reinstall the driver) and the `operator_settings`."""
    p = plan.platform
    op = p.gpu_operator
    ours = merge_values(
        {"devicePlugin": {"enabled": state.device_plugin_enabled}, "driver": {"version": op.driver_version}},
        operator_settings(p),
    )
    merged: dict[str, Any] = merge_values(op.values, ours)
    return merged


def dra_driver_values(plan: Plan) -> dict[str, Any]:
    """Team values + what the procedure needs: driver root, the device-plugin guard override, the
    resource API pinned, ComputeDomains as the spec says (off by default), the kubelet plugin
    scoped to `nvidia.com/dra-kubelet-plugin=true`, tolerating every GPU-node taint and rolled out
    `kubeletPluginMaxUnavailable` nodes at a time, and the driver feature gates."""
    p = plan.platform
    d = p.dra_driver
    plugin = {
        "nodeSelector": {DRA_PLUGIN_LABEL: "true"},
        "tolerations": _tolerations(d.values, dra_driver_chart(p), KUBELET_PLUGIN_TOLERATIONS, p),
        "updateStrategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": d.kubelet_plugin_max_unavailable},
        },
    }
    ours: dict[str, Any] = {
        "nvidiaDriverRoot": d.nvidia_driver_root,
        "gpuResourcesEnabledOverride": True,
        "resourceApiVersion": _RESOURCE_API,
        "resources": {"computeDomains": {"enabled": d.compute_domains}},
        "kubeletPlugin": plugin,
    }
    if d.feature_gates:
        ours["featureGates"] = dict(sorted(d.feature_gates.items()))
    merged: dict[str, Any] = merge_values(d.values, ours)
    return merged


def running_operator(platform: Platform) -> OperatorOutput:
    """The GPU Operator as it runs in every wave: the team's values with `operator_settings`
    (the release, or the hand-off of an unmanaged one), through the chart's model."""
    op = platform.gpu_operator
    return render_gpu_operator(op.version, merge_values(op.values, operator_settings(platform)))
