"""NIM services: the NIM Operator's `spec.draResources`, and the claims or templates the tool owns.

The tool owns neither the teams' NIMServices nor their workloads: what it owns (claim templates,
claims) is rendered in the tenant folder; the NIMService change goes to `handoff/<NN>-<wave>/` as a
`NimServiceHandoff`. `draResources` is immutable, so the migration is blue/green: a new NIMService
(`name`) next to the old one (`replaces`), removed by its owner in a later wave.
"""

from __future__ import annotations

from typing import Any

from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.model.tenants import ClaimTemplate
from gpuplatform.model.workloads import AttributeSelector, NimService
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, k8s_object, order_keys
from gpuplatform.render.nim_cel import NIM_DRIVER
from gpuplatform.render.tenants import claim_template_object, dra_pool_tolerations, tenant_labels, tenant_of

__all__ = ["NIM_DRIVER", "dra_resources", "nim_cache", "render_nim_handoffs", "render_nim_owned"]

_CHART_GPU_CLASS = "gpu.nvidia.com"


def _value(selector: AttributeSelector) -> dict[str, Any]:
    kind = selector.value_type or {bool: "bool", int: "int", str: "string"}[type(selector.value)]
    return {f"{kind}Value": selector.value}


def _claim_name(nim: NimService) -> str:
    return f"{nim.name}-gpu"


def nim_cache(nim: NimService) -> str:
    """The NIMCache the new service mounts: never its legacy predecessor's (default: its own name)."""
    return nim.cache or nim.name


def dra_resources(plan: Plan, nim: NimService) -> list[Obj]:
    """`spec.draResources` of the NIMService, in the shape the spec chose."""
    if nim.mode == "template":
        return [{"resourceClaimTemplateName": _claim_name(nim)}]
    if nim.mode == "claim":
        return [{"resourceClaimName": _claim_name(nim)}]
    device: Obj = {
        "name": "gpu",
        "count": nim.count,
        "deviceClassName": plan.platform.class_name(nim.tier) if nim.tier else _CHART_GPU_CLASS,
        "driverName": NIM_DRIVER,
    }
    if nim.attribute_selectors:
        device["attributeSelectors"] = [
            {"key": s.key, "op": s.op, "value": _value(s)} for s in nim.attribute_selectors
        ]
    if nim.capacity_selectors:
        device["capacitySelectors"] = [
            {"key": s.key, "op": s.op, "value": s.value} for s in nim.capacity_selectors
        ]
    if nim.cel_expressions:
        device["celExpressions"] = list(nim.cel_expressions)
    return [{"claimCreationSpec": {"devices": [device]}}]


def render_nim_owned(plan: Plan, state: WaveState) -> list[Obj]:
    """The claim templates and claims of the NIM services moved by this wave (tool-owned)."""
    objects: list[Obj] = []
    for nim in plan.platform.nim_services:
        if nim.name not in state.nim_services or nim.mode == "claimCreationSpec" or nim.tier is None:
            continue
        template = claim_template_object(
            plan.platform,
            nim.namespace,
            ClaimTemplate(name=_claim_name(nim), tier=nim.tier, count=nim.count),
            state.name,
        )
        if nim.mode == "claim":
            template = k8s_object(
                "resource.k8s.io/v1",
                "ResourceClaim",
                _claim_name(nim),
                wave=state.name,
                namespace=nim.namespace,
                labels=tenant_labels(tenant_of(plan.platform, nim.namespace)),
                spec=template["spec"]["spec"],
            )
        objects.append(template)
    return objects


def render_nim_handoffs(plan: Plan, state: WaveState) -> list[Obj]:
    """One `NimServiceHandoff` per NIM service moved by this wave: what its owner applies."""
    objects = []
    for nim in plan.platform.nim_services:
        if nim.name not in state.nim_services:
            continue
        objects.append(
            order_keys(
                {
                    "apiVersion": "gpuplatform.dev/v1alpha1",
                    "kind": "NimServiceHandoff",
                    "metadata": {"name": nim.name, "namespace": nim.namespace},
                    "spec": {
                        "wave": state.name,
                        "nimService": {
                            "name": nim.name,
                            "namespace": nim.namespace,
                            "replicas": nim.replicas,
                        },
                        "replaces": nim.replaces or "",
                        "draResources": dra_resources(plan, nim),
                        "tolerations": dra_pool_tolerations(plan.platform),
                        "nimCache": nim_cache(nim),
                        "removeResourceLimits": [GPU_RESOURCE],
                        "note": "draResources is immutable: create this NIMService next to the one it replaces, "
                        "cut traffic over, and delete the old one in a later wave; rolling back restores the "
                        "old NIMService's resources.limits nvidia.com/gpu path. Give it its own NIMCache "
                        "(spec.storage.nimCache.name) built for the GPU product it lands on: engine profiles "
                        "are GPU-specific and an RWO cache mounts on one node only.",
                    },
                }
            )
        )
    return objects
