"""Closed-world ResourceQuota: a tenant gets devices of its own tiers only, and zero of everything else.

Every DeviceClass the cluster has in the wave — the platform's tiers and bridges, the DRA driver
chart's own classes — gets a `<class>.deviceclass.resource.k8s.io/devices` limit: the tenant's
limit for its tiers, 0 for the rest, except the class that serves the bridge for tenants entitled
to it (the scheduler charges bridged claims to that class). `allocationMode: All` is charged as the
maximum device count; the admission policy refuses it unless the tenant is allowed.

`requests.nvidia.com/gpu` follows the workloads: the bridge allowance, plus the GPUs of the legacy
workloads and NIM services that still run on the device plugin in the namespace, until they move
and the wave after their move (the one a rollback to the legacy path comes back from) has passed.
"""

from __future__ import annotations

import math

from gpuplatform.gates.matchers import GPU_RESOURCE as GPU
from gpuplatform.model.tenants import Tenant
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, k8s_object
from gpuplatform.versions import CHART_DEVICE_CLASSES

__all__ = ["QUOTA_NAME", "bridge_classes", "legacy_gpus", "render_quota", "tenant_quota"]

QUOTA_NAME = "gpuplatform-gpu-quota"


def bridge_classes(plan: Plan, state: WaveState) -> list[str]:
    """The classes that serve `nvidia.com/gpu` requests in this wave."""
    p = plan.platform
    classes = [p.class_name(b.name) for b in p.bridges if b.name in state.bridges and b.source == "platform"]
    if plan.chart_bridges(state):
        classes += [c for c, resource in CHART_DEVICE_CLASSES.items() if resource]
    return classes


def _pods_during_rollout(kind: str, replicas: int) -> int:
    """Pods that exist at once while the workload rolls out: a Deployment surges by 25% (rounded
    up; the default `maxSurge`), the others replace pods one by one."""
    return replicas + (math.ceil(replicas / 4) if kind in ("Deployment", "NIMService") else 0)


def legacy_gpus(plan: Plan, state: WaveState, namespace: str) -> dict[str, int]:
    """`nvidia.com/gpu` the device-plugin workloads of `namespace` need in this wave, by workload.

    A workload requesting `nvidia.com/gpu` counts in every wave up to the one after its `movesIn`
    (other resources, such as MIG profiles, have no quota); a NIM service's legacy predecessor
    (`replaces`) likewise, with the new service's count and replicas.
    """
    p = plan.platform
    index = {w.name: i for i, w in enumerate(p.waves)}
    needs: dict[str, int] = {}
    for w in p.workloads:
        if w.resource == GPU and w.namespace == namespace and state.index <= index[w.moves_in] + 1:
            needs[f"{w.kind}/{w.name}"] = w.gpus * _pods_during_rollout(w.kind, w.replicas)
    for nim in p.nim_services:
        if nim.namespace == namespace and nim.replaces and state.index <= index[nim.moves_in] + 1:
            needs[f"NIMService/{nim.replaces}"] = nim.count * _pods_during_rollout("NIMService", nim.replicas)
    return needs


def tenant_quota(plan: Plan, state: WaveState, tenant: Tenant) -> Obj:
    """The tenant's ResourceQuota in this wave."""
    p = plan.platform
    q = tenant.quota
    legacy = sum(legacy_gpus(plan, state, tenant.ns).values())
    hard: dict[str, str] = {
        "count/resourceclaims.resource.k8s.io": str(q.claims),
        "count/resourceclaimtemplates.resource.k8s.io": str(q.claim_templates),
        "requests.nvidia.com/gpu": str((q.gpus if tenant.bridge else 0) + legacy),
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
