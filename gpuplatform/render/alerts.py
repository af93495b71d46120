"""Alerts (`spec.monitoring.enabled`): a PrometheusRule for states that must never last.

Every expression reads metrics kube-state-metrics exports by default (kubernetes/kube-state-metrics
docs/metrics: `kube_pod_info`, `kube_node_spec_taint`, `kube_daemonset_status_number_unavailable`,
`kube_pod_status_phase`), so each can fire as rendered. A DRA node is recognised by its pool's DRA
taint (`kube_node_spec_taint`), not by the `nvidia.com/dra-kubelet-plugin` label: kube-state-metrics
exports node labels only when allowlisted (`--metric-labels-allowlist`). It has no ResourceClaim
metrics by default, so "a claim pending too long" is approximated by a pod pending that long in a
tenant namespace, and "a claim reserved for a pod that no longer exists" is left to the `cleanup`
evidence check.
"""

from __future__ import annotations

from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, k8s_object
from gpuplatform.render.tolerations import gpu_node_taints

__all__ = ["DEVICE_PLUGIN_DAEMONSET", "dra_node_selector", "render_alerts"]

#: The GPU Operator's device plugin DaemonSet (NVIDIA/gpu-operator v26.3.1
#: assets/state-device-plugin/0500_daemonset.yaml).
DEVICE_PLUGIN_DAEMONSET = "nvidia-device-plugin-daemonset"


def dra_node_selector(plan: Plan) -> str:
    """PromQL: one series per node carrying a DRA pool's taint (`kube_node_spec_taint`)."""
    series = [
        f'kube_node_spec_taint{{key="{t["key"]}", value="{t.get("value", "")}", effect="{t["effect"]}"}}'
        for t in gpu_node_taints(plan.platform)
    ]
    return f"max by (node) ({' or '.join(series)})"


def render_alerts(plan: Plan, state: WaveState) -> list[Obj]:
    """The wave's PrometheusRule, when monitoring is enabled."""
    p = plan.platform
    m = p.monitoring
    if not m.enabled:
        return []
    tenants = "|".join(sorted(t.ns for t in p.tenants if t.name in state.tenants)) or "^$"
    rules = [
        {
            "alert": "GpuDevicePluginOnDraNode",
            "expr": (
                f'count by (node) (kube_pod_info{{created_by_name="{DEVICE_PLUGIN_DAEMONSET}"}}'
                f" * on (node) group_left() {dra_node_selector(plan)}) > 0"
            ),
            "for": "5m",
            "labels": {"severity": "critical"},
            "annotations": {"summary": "A DRA node runs the device plugin: its GPUs have two allocators."},
        },
        {
            "alert": "GpuDraKubeletPluginNotReady",
            "expr": f'kube_daemonset_status_number_unavailable{{namespace="{p.dra_driver.namespace}", daemonset=~".*-kubelet-plugin"}} > 0',
            "for": "10m",
            "labels": {"severity": "critical"},
            "annotations": {"summary": "The NVIDIA DRA kubelet plugin is not ready on some DRA nodes."},
        },
        {
            "alert": "GpuClaimPendingTooLong",
            "expr": f'max by (namespace, pod) (kube_pod_status_phase{{phase="Pending", namespace=~"{tenants}"}}) == 1',
            "for": f"{m.claim_pending_minutes}m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": f"A pod in a GPU tenant namespace has waited for its claim over {m.claim_pending_minutes}m."
            },
        },
    ]
    return [
        k8s_object(
            "monitoring.coreos.com/v1",
            "PrometheusRule",
            f"gpuplatform-{p.name}",
            wave=state.name,
            namespace=m.namespace,
            spec={"groups": [{"name": "gpuplatform.dra-migration", "rules": rules}]},
        )
    ]
