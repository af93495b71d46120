"""Legacy workloads of the spec: the claim templates the tool owns and the hand-off for their owners.

From the wave named by `movesIn` on, the workload's template exists and its owner gets a
`WorkloadHandoff` (the same conversion `gpuplatform convert` does, stated as data) and, when the spec
names the original manifest, the converted file itself (whose containers keep their own GPUs: see
`convert/handoff.py`). Earlier waves keep the legacy contract, so rolling back restores it.
"""

from __future__ import annotations

from gpuplatform.model.tenants import ClaimTemplate
from gpuplatform.model.workloads import Workload
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.handoff import converted_file
from gpuplatform.render.meta import Obj, order_keys
from gpuplatform.render.tenants import claim_template_object, dra_pool_tolerations

__all__ = [
    "render_workload_handoffs",
    "render_workload_templates",
    "template_name",
    "workload_handoff",
    "workload_template_name",
]


def extended_resource_toleration(resource: str) -> Obj:
    """What ExtendedResourceToleration added while the pods requested `resource` (kubernetes/kubernetes
    `plugin/pkg/admission/extendedresourcetoleration/admission.go`); converted pods must carry it."""
    return {"key": resource, "operator": "Exists", "effect": "NoSchedule"}


def template_name(workload: str) -> str:
    """The template a converted workload's pods claim from (`<workload>-gpu`)."""
    return f"{workload}-gpu"


def workload_template_name(workload: Workload) -> str:
    return template_name(workload.name)


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


def _note(w: Workload) -> str:
    if w.manifest:
        return "Apply the converted manifest: each GPU container names its own request of the claim."
    if w.shared_claim:
        return "Every GPU container references claim gpu and they share its devices (sharedClaim)."
    return (
        "Claim gpu is the pod's GPU container's. A pod with several GPU containers needs `manifest` in the "
        "spec, so that each keeps its own GPUs (one request per container) as with the device plugin."
    )


def render_workload_handoffs(plan: Plan, state: WaveState) -> list[Obj]:
    """One `WorkloadHandoff` per converted workload."""
    return [workload_handoff(plan, state, w) for w in _moved(plan, state)]


def workload_handoff(plan: Plan, state: WaveState, w: Workload) -> Obj:
    """The `WorkloadHandoff` of one workload the wave has converted."""
    tolerations = [extended_resource_toleration(w.resource), *dra_pool_tolerations(plan.platform)]
    return order_keys(
        {
            "apiVersion": "gpuplatform.dev/v1alpha1",
            "kind": "WorkloadHandoff",
            "metadata": {"name": f"{w.kind.lower()}-{w.name}", "namespace": w.namespace},
            "spec": {
                "wave": state.name,
                "target": {"kind": w.kind, "namespace": w.namespace, "name": w.name},
                "removeResource": w.resource,
                "podResourceClaims": [
                    {"name": "gpu", "resourceClaimTemplateName": workload_template_name(w)}
                ],
                "containerClaims": [{"name": "gpu"}],
                "tolerations": tolerations,
                "manifest": converted_file(w),
                "note": _note(w),
            },
        }
    )
