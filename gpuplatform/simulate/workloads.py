"""The workload mix a transition is replayed with.

By default: one unmigrated `nvidia.com/gpu` Deployment pinned to each legacy pool, one unmigrated
pod that tolerates every taint (the dangerous case: nothing but the scheduler keeps it off DRA
nodes), each spec workload in its legacy or converted form (with its nodeSelector and tolerations;
converted, also the hand-off's), and one claim workload per claim template of every enabled tenant
(tolerating the DRA pools' taints, as the validation Job does).
"""

from __future__ import annotations

import copy

from gpuplatform.evidence.register import (
    gpu_count,
    own_placement,
    spec_workloads,
    visible_devices,
    workload_of,
)
from gpuplatform.gates.matchers import is_gpu_stack_pod, stack_namespaces
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.nodes import pool_taint
from gpuplatform.render.tenants import dra_pool_tolerations
from gpuplatform.render.workload_handoff import extended_resource_toleration, workload_template_name
from gpuplatform.simulate.controllers import replica_names
from gpuplatform.simulate.model import Toleration, Workload
from gpuplatform.snapshot.read import Snapshot

__all__ = ["LEGACY_NAMESPACE", "converted", "legacy", "snapshot_workloads", "workload_mix"]

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


def _spec_tolerations(plan: Plan, index: int) -> list[Toleration]:
    w = plan.platform.workloads[index]
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in w.tolerations]


def converted(plan: Plan, index: int) -> list[Workload]:
    """Spec workload `index` in its claim form, a pod per replica: the hand-off's template and
    tolerations added to its own."""
    w = plan.platform.workloads[index]
    p = plan.platform
    added = [extended_resource_toleration(w.resource), *dra_pool_tolerations(p)]
    own = _spec_tolerations(plan, index)
    return [
        Workload(
            pod,
            w.namespace,
            "claim",
            w.gpus,
            "spec",
            tolerations=own + [t for t in added if t not in own],
            node_selector=dict(w.node_selector),
            template=workload_template_name(w),
            device_class=p.class_name(w.tier),
            controller=w.kind,
            workload=w.name,
        )
        for pod in replica_names(w.kind, w.name, w.replicas)
    ]


def legacy(plan: Plan, index: int) -> list[Workload]:
    """Spec workload `index` as it runs before its wave, a pod per replica: an `nvidia.com/gpu`
    request, its own placement."""
    w = plan.platform.workloads[index]
    return [
        Workload(
            pod,
            w.namespace,
            "legacy",
            w.gpus,
            "spec",
            tolerations=_spec_tolerations(plan, index),
            node_selector=dict(w.node_selector),
            controller=w.kind,
            workload=w.name,
        )
        for pod in replica_names(w.kind, w.name, w.replicas)
    ]


def snapshot_workloads(plan: Plan, snapshot: Snapshot) -> tuple[list[Workload], list[str]]:
    """The unmigrated GPU pods of a cluster snapshot and what was left out.

    A pod of a spec workload (its controller, through a ReplicaSet or a Job, is the workload, in its
    namespace: `register.workload_of`) is the spec's workload, replayed as the spec declares it: it is
    counted once. The others keep their own placement (`nodeSelector`, tolerations), not the node
    they ran on: their controller recreates an evicted pod wherever the scheduler finds room. Pods
    with resource claims are left out (their claims' classes are not in the snapshot's register). A
    pod that reaches GPUs through NVIDIA_VISIBLE_DEVICES with no GPU request is kept as what it is, a
    third allocator (`unallocated`).
    """
    declared = spec_workloads(plan.platform)
    namespaces = stack_namespaces(plan.platform.gpu_operator, plan.platform.dra_driver)
    out, left = [], []
    for pod in snapshot.items("pods") or []:
        meta, spec = pod.get("metadata", {}), pod.get("spec", {})
        visible = visible_devices(pod, namespaces)
        if is_gpu_stack_pod(pod, namespaces) or not (gpu_count(pod) or visible):
            continue
        namespace = str(meta.get("namespace", ""))
        kind, owner = workload_of(pod, snapshot)
        if (namespace, kind, owner) in declared:
            continue
        key = f"{namespace}/{meta.get('name', '')}"
        if spec.get("resourceClaims"):
            left.append(f"pod {key} (resource claims are not taken from snapshots)")
            continue
        own = own_placement(pod, snapshot)  # not the flavor's labels Kueue merged in
        out.append(
            Workload(
                str(meta.get("name", "")),
                namespace,
                "unallocated" if visible else "legacy",
                gpu_count(pod),
                "snapshot",
                tolerations=[dict(t) for t in own.get("tolerations") or [] if isinstance(t, dict)],
                node_selector={str(k): str(v) for k, v in (own.get("nodeSelector") or {}).items()},
                controller=kind,
                workload=owner,
            )
        )
    return out, left


def workload_mix(plan: Plan, state: WaveState, observed: list[Workload] | None = None) -> list[Workload]:
    """The workloads that exist in `state` (their placement is the scheduler's).

    `observed`: the unmigrated pods of a snapshot, instead of the default legacy pods.
    """
    p = plan.platform
    if observed is not None:
        out = [copy.copy(w) for w in observed]
    else:
        out = [
            Workload(f"legacy-{pool}", LEGACY_NAMESPACE, "legacy", 1, "default", pools=(pool,))
            for pool in state.legacy_pools
        ]
    if state.legacy_pools and observed is None:
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
    for i in range(len(p.workloads)):
        out += converted(plan, i) if i in state.workloads else legacy(plan, i)
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
