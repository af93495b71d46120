"""Closed-world ResourceQuota, as typed: a tenant gets devices of its own tiers only, and zero of everything else.

Every DeviceClass the cluster has in the wave — the platform's tiers and bridges, the DRA driver
chart's own classes — gets a `<class>.deviceclass.resource.k8s.io/devices` limit: the tenant's
per-tier limit for its tiers (`TenantQuota.tier_limits`: they sum to `quota.devices`, the total; a
ResourceQuota has no limit across classes, kubernetes pkg/quota/v1/evaluator/core/resource_claims.go),
0 for the rest, except the classes that serve the bridge for tenants entitled to it (the scheduler
charges bridged claims there), limited to `quota.gpus`. `allocationMode: All` is charged as the
maximum device count; the admission policy refuses it unless the tenant is allowed.

`requests.nvidia.com/gpu` is `quota.gpus`; only with `quota.legacyWorkloads` are the GPUs of the
legacy workloads and NIM services that still run on the device plugin in the namespace added, until
they move and the wave after their move (the one a rollback to the legacy path comes back from) has
passed. Claim and template counts are limited only when typed.
"""

from __future__ import annotations

import math

from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.model.tenants import Tenant
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, k8s_object
from gpuplatform.versions import CHART_DEVICE_CLASSES

__all__ = ["QUOTA_NAME", "bridge_classes", "legacy_gpus", "quota_notes", "render_quota", "tenant_quota"]

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
        if w.resource == GPU_RESOURCE and w.namespace == namespace and state.index <= index[w.moves_in] + 1:
            needs[f"{w.kind}/{w.name}"] = w.gpus * _pods_during_rollout(w.kind, w.replicas)
    for nim in p.nim_services:
        if nim.namespace == namespace and nim.replaces and state.index <= index[nim.moves_in] + 1:
            needs[f"NIMService/{nim.replaces}"] = nim.count * _pods_during_rollout("NIMService", nim.replicas)
    return needs


def tenant_quota(plan: Plan, state: WaveState, tenant: Tenant) -> Obj:
    """The tenant's ResourceQuota in this wave."""
    p = plan.platform
    q = tenant.quota
    legacy = sum(legacy_gpus(plan, state, tenant.ns).values()) if q.legacy_workloads else 0
    hard: dict[str, str] = {"requests.nvidia.com/gpu": str(q.gpus + legacy)}
    if q.claims is not None:
        hard["count/resourceclaims.resource.k8s.io"] = str(q.claims)
    if q.claim_templates is not None:
        hard["count/resourceclaimtemplates.resource.k8s.io"] = str(q.claim_templates)
    per_tier = {p.class_name(t): n for t, n in q.tier_limits(tenant.tiers).items()}
    bridged = set(bridge_classes(plan, state)) if tenant.bridge else set()
    known = {p.class_name(t) for t in state.tiers} | {
        p.class_name(b.name) for b in p.bridges if b.source == "platform"
    }
    if state.driver_installed:
        known |= set(CHART_DEVICE_CLASSES)
    for cls in sorted(known | set(per_tier)):
        limit = per_tier.get(cls, q.gpus if cls in bridged else 0)
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


def quota_notes(plan: Plan, state: WaveState) -> list[str]:
    """What `plan` says about the wave's quotas beyond the typed numbers: the GPUs
    `quota.legacyWorkloads` adds, or declared device-plugin workloads that `quota.gpus` does not cover."""
    notes = []
    for tenant in plan.platform.tenants:
        needs = legacy_gpus(plan, state, tenant.ns) if tenant.name in state.tenants else {}
        need, typed = sum(needs.values()), tenant.quota.gpus
        workloads = ", ".join(f"{w}: {n}" for w, n in sorted(needs.items()))
        if needs and tenant.quota.legacy_workloads:
            notes.append(f"{tenant.ns}: nvidia.com/gpu {typed} + {need} (quota.legacyWorkloads: {workloads})")
        elif need > typed:
            notes.append(
                f"{tenant.ns}: quota.gpus {typed} < {need} needed by device-plugin workloads ({workloads})"
            )
    return notes
