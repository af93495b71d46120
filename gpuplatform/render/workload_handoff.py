"""Legacy workloads of the spec: the claim templates the tool owns and the hand-off for their owners.

From the wave named by `movesIn` on, the workload's template exists and its owner gets a
`WorkloadHandoff` (the same conversion `gpuplatform convert` does, stated as data) and, when the spec
names the original manifest, the converted file itself. Earlier waves keep the legacy contract,
so rolling back restores it.
"""

from __future__ import annotations

from gpuplatform.model.tenants import ClaimTemplate
from gpuplatform.model.workloads import Workload
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.handoff import converted_file
from gpuplatform.render.meta import Obj, order_keys
from gpuplatform.render.tenants import claim_template_object

__all__ = ["render_workload_handoffs", "render_workload_templates", "workload_template_name"]


def workload_template_name(workload: Workload) -> str:
    return f"{workload.name}-gpu"


def _moved(plan: Plan, state: WaveState) -> list[Workload]:
    return [plan.platform.workloads[i] for i in state.workloads]


def render_workload_templates(plan: Plan, state: WaveState) -> list[Obj]:
    """A ResourceClaimTemplate per converted workload, in the workload's namespace."""
    return [
        claim_template_object(
            plan.platform,
            w.namespace,
            ClaimTemplate(name=workload_template_name(w), tier=w.tier, count=w.gpus),
            state.name,
        )
        for w in _moved(plan, state)
    ]


def render_workload_handoffs(plan: Plan, state: WaveState) -> list[Obj]:
    """One `WorkloadHandoff` per converted workload."""
    out = []
    for w in _moved(plan, state):
        out.append(
            order_keys(
                {
                    "apiVersion": "gpuplatform.dev/v1alpha1",
                    "kind": "WorkloadHandoff",
                    "metadata": {"name": f"{w.kind.lower()}-{w.name}", "namespace": w.namespace},
                    "spec": {
                        "wave": state.name,
                        "target": {"kind": w.kind, "namespace": w.namespace, "name": w.name},
                        "removeResource": "nvidia.com/gpu",
                        "podResourceClaims": [
                            {"name": "gpu", "resourceClaimTemplateName": workload_template_name(w)}
                        ],
                        "containerClaims": [{"name": "gpu"}] if w.shared_claim else [],
                        "manifest": converted_file(w),
                    },
                }
            )
        )
    return out
