"""Closed-world ResourceQuota: a tenant gets devices of its own tiers only, and zero of everything else.

Every DeviceClass the cluster has in the wave — the platform's tiers and bridges, the DRA driver
chart's own classes — gets a `<class>.deviceclass.resource.k8s.io/devices` limit: the tenant's
limit for its tiers, 0 for the rest, except the class that serves the bridge for tenants entitled
to it (the scheduler charges bridged claims to that class). `allocationMode: All` is charged as the
maximum device count; the admission policy refuses it unless the tenant is allowed.
"""

from __future__ import annotations

from gpuplatform.model.tenants import Tenant
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, k8s_object
from gpuplatform.versions import CHART_DEVICE_CLASSES

__all__ = ["QUOTA_NAME", "bridge_classes", "render_quota", "tenant_quota"]

QUOTA_NAME = "gpuplatform-gpu-quota"


def bridge_classes(plan: Plan, state: WaveState) -> list[str]:
    """The classes that serve `nvidia.com/gpu` requests in this wave."""
    p = plan.platform
    classes = [p.class_name(b.name) for b in p.bridges if b.name in state.bridges and b.source == "platform"]
    if plan.chart_bridges(state):
        classes += [c for c, resource in CHART_DEVICE_CLASSES.items() if resource]
    return classes


def tenant_quota(plan: Plan, state: WaveState, tenant: Tenant) -> Obj:
    """The tenant's ResourceQuota in this wave."""
    p = plan.platform
    q = tenant.quota
    hard: dict[str, str] = {
        "count/resourceclaims.resource.k8s.io": str(q.claims),
        "count/resourceclaimtemplates.resource.k8s.io": str(q.claim_templates),
        "requests.nvidia.com/gpu": str(q.gpus if tenant.bridge else 0),
    }
    own = {p.class_name(t) for t in tenant.tiers}
    bridged = set(bridge_classes(plan, state)) if tenant.bridge else set()
    known = {p.class_name(t) for t in state.tiers} | {
        p.class_name(b.name) for b in p.bridges if b.source == "platform"
    }
    if state.driver_installed:
        known |= set(CHART_DEVICE_CLASSES)
    for cls in sorted(known | own):
        limit = q.devices if cls in own else q.gpus if cls in bridged else 0
        hard[f"{cls}.deviceclass.resource.k8s.io/devices"] = str(limit)
    return k8s_object(
        "v1",
        "ResourceQuota",
        QUOTA_NAME,
        wave=state.name,
        namespace=tenant.ns,
        spec={"hard": dict(sorted(hard.items()))},
    )


def render_quota(plan: Plan, state: WaveState) -> list[Obj]:
    """One ResourceQuota per enabled tenant."""
    return [tenant_quota(plan, state, t) for t in plan.platform.tenants if t.name in state.tenants]
