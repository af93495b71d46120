"""Alerts (`spec.monitoring.enabled`): a PrometheusRule for states that must never last.

The expressions read kube-state-metrics. Two need its node-label allowlist
(`--metric-labels-allowlist=nodes=[nvidia.com/dra-kubelet-plugin]`). kube-state-metrics exposes no
ResourceClaim metrics by default, so "a claim pending too long" is approximated by a pod pending
that long in a tenant namespace, and "a claim reserved for a pod that no longer exists" is left to
the `cleanup` evidence check.
"""

from __future__ import annotations

from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, k8s_object

__all__ = ["render_alerts"]


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
                'count by (node) (kube_pod_info{created_by_name="nvidia-device-plugin-daemonset"}'
                ' * on (node) group_left() kube_node_labels{label_nvidia_com_dra_kubelet_plugin="true"}) > 0'
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
