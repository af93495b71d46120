"""The workload mix a transition is replayed with.

By default: one unmigrated `nvidia.com/gpu` Deployment pinned to each legacy pool, one unmigrated
pod that tolerates every taint (the dangerous case: nothing but the scheduler keeps it off DRA
nodes), each spec workload in its legacy or converted form, and one claim workload per claim
template of every enabled tenant (tolerating the DRA pools' taints, as the validation Job does).
"""

from __future__ import annotations

from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.nodes import pool_taint
from gpuplatform.render.workload_handoff import workload_template_name
from gpuplatform.simulate.model import Toleration, Workload

__all__ = ["LEGACY_NAMESPACE", "converted", "workload_mix"]

LEGACY_NAMESPACE = "gpu-legacy"


def _dra_tolerations(plan: Plan) -> list[Toleration]:
    out: list[Toleration] = []
    for pool in plan.platform.node_pools:
        taint = pool_taint(plan.platform, pool)
        item: Toleration = {
            "key": taint["key"],
            "operator": "Equal",
            "value": taint.get("value", ""),
            "effect": taint["effect"],
        }
        if item not in out:
            out.append(item)
    return out


def converted(plan: Plan, index: int) -> Workload:
    """Spec workload `index` in its claim form (the hand-off's template; no toleration is added)."""
    w = plan.platform.workloads[index]
    p = plan.platform
    return Workload(
        w.name,
        w.namespace,
        "claim",
        w.gpus,
        "spec",
        template=workload_template_name(w),
        device_class=p.class_name(w.tier),
    )


def workload_mix(plan: Plan, state: WaveState) -> list[Workload]:
    """The workloads that exist in `state` (their placement is the scheduler's)."""
    p = plan.platform
    out = [
        Workload(f"legacy-{pool}", LEGACY_NAMESPACE, "legacy", 1, "default", pool=pool)
        for pool in state.legacy_pools
    ]
    if state.legacy_pools:
        out.append(
            Workload(
                "legacy-tolerates-all",
                LEGACY_NAMESPACE,
                "legacy",
                1,
                "default",
                tolerations=[{"operator": "Exists"}],
            )
        )
    for i, w in enumerate(p.workloads):
        if i in state.workloads:
            out.append(converted(plan, i))
        else:
            out.append(Workload(w.name, w.namespace, "legacy", w.gpus, "spec"))
    tolerations = _dra_tolerations(plan)
    for tenant in p.tenants:
        if tenant.name not in state.tenants:
            continue
        tiers = {t.name for t in p.tiers}
        for template in tenant.claim_templates:
            if template.tier in tiers:
                out.append(
                    Workload(
                        f"{template.name}-user",
                        tenant.ns,
                        "claim",
                        template.count,
                        "default",
                        tolerations=list(tolerations),
                        template=template.name,
                        device_class=p.class_name(template.tier),
                    )
                )
    return out
