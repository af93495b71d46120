"""The read DCGM exporter's DRA mode needs: ResourceSlices, cluster-wide, for its ServiceAccount.

In DRA mode (versions.DCGM_EXPORTER_DRA_ENV, set by `helm_values.operator_settings`) the exporter
maps the (pool, device) names the kubelet's pod-resources socket reports for DRA allocations back
to GPU UUIDs through a ResourceSlice informer; without list/watch on `resourceslices` that informer
never syncs and DRA-allocated GPUs carry no pod, namespace or container labels. GPU Operator 26.3.x
grants only a namespaced Role on configmaps and pods (versions.DCGM_EXPORTER_DRA_RULES cites the
sources), so the platform renders this ClusterRole and its binding, in every wave, managed
operator or not, whenever the operator runs the exporter.
"""

from __future__ import annotations

from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.helm_values import gpu_operator_chart
from gpuplatform.render.meta import Obj, k8s_object
from gpuplatform.versions import DCGM_EXPORTER_DRA_RULES, DCGM_EXPORTER_SERVICE_ACCOUNT

__all__ = ["EXPORTER_ROLE", "render_exporter_rbac"]

EXPORTER_ROLE = "gpuplatform-dcgm-exporter-dra"


def render_exporter_rbac(plan: Plan, state: WaveState) -> list[Obj]:
    """The ClusterRole and ClusterRoleBinding, when the GPU Operator runs DCGM exporter."""
    op = plan.platform.gpu_operator
    if gpu_operator_chart(plan.platform).effective(op.values, ("dcgmExporter", "enabled")) is not True:
        return []
    rules = [{k: list(v) for k, v in rule.items()} for rule in DCGM_EXPORTER_DRA_RULES]
    return [
        k8s_object(
            "rbac.authorization.k8s.io/v1", "ClusterRole", EXPORTER_ROLE, wave=state.name, rules=rules
        ),
        k8s_object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            EXPORTER_ROLE,
            wave=state.name,
            subjects=[
                {"kind": "ServiceAccount", "name": DCGM_EXPORTER_SERVICE_ACCOUNT, "namespace": op.namespace}
            ],
            roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": EXPORTER_ROLE},
        ),
    ]
