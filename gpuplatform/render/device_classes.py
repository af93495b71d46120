"""DeviceClasses: one per service tier and one per platform bridge class."""

from __future__ import annotations

from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, k8s_object
from gpuplatform.render.selectors import full_gpu_expression, tier_expression

__all__ = ["render_device_classes"]

_API = "resource.k8s.io/v1"


def render_device_classes(plan: Plan, state: WaveState) -> list[Obj]:
    """The tiers and platform bridges enabled in `state` (chart-sourced bridges render nothing)."""
    p = plan.platform
    tiers = {t.name: t for t in p.tiers}
    objects: list[Obj] = []
    for name in state.tiers:
        tier = tiers[name]
        spec: Obj = {"selectors": [{"cel": {"expression": tier_expression(tier)}}]}
        if tier.config:
            spec["config"] = [{"opaque": {"driver": tier.driver, "parameters": dict(c)}} for c in tier.config]
        objects.append(k8s_object(_API, "DeviceClass", p.class_name(name), wave=state.name, spec=spec))
    bridges = {b.name: b for b in p.bridges}
    for name in state.bridges:
        bridge = bridges[name]
        if bridge.source == "chart":
            continue
        expression = tier_expression(tiers[bridge.tier]) if bridge.tier else full_gpu_expression()
        spec = {
            "selectors": [{"cel": {"expression": expression}}],
            "extendedResourceName": bridge.extended_resource_name,
        }
        objects.append(k8s_object(_API, "DeviceClass", p.class_name(name), wave=state.name, spec=spec))
    return objects
