"""The workloads the gates prove a wave with: the claim pilot and the two sides of the bridge.

Each pod prints `nvidia-smi -L` and then holds what it was given (its claim, or its device-plugin
GPU) while the gate reads the allocation, the device's UUID and the container's log. The gate then
removes the pod: the pod's shell traps SIGTERM and exits 0, so the Job completes, and the
resourceclaim controller releases the claim of a pod that is done (kubernetes
pkg/controller/resourceclaim/controller.go, stored version 003e8629 — `podNeedsClaims` and `syncClaim`:
reservations of a terminated or removed pod are dropped, a claim with no reservation is
deallocated, and a generated claim whose pod is done is deleted; release-1.36 is not in the
stored index, this logic predates it). A pod the gate never reads exits 3 after holding for one
gate attempt; the Job's `podFailurePolicy` ignores that exit and starts a fresh pod, so an
unproven pilot is retried instead of failing the sync (kubernetes pkg/controller/job
job_controller.go `isPodFailed`/`onlyReplaceFailedPods`: with a pod failure policy only a pod in
phase Failed counts, a removed pod that exited 0 is Succeeded).

They are hooks of the post-transition phase (Argo CD PostSync, the Flux `gates-post`
Kustomization): were they part of the tenant layer, both engines would wait for them to finish
before running the gates, and the gate would find the claim already gone.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from gpuplatform.gates.nodes import pool_selector
from gpuplatform.labels import GATE_PHASE_LABEL, GPU_RESOURCE, VALIDATION_LABEL, WAVE_LABEL
from gpuplatform.model.containers import pinned_image
from gpuplatform.model.workloads import GpuProbe
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import KEPT_UNTIL_NEXT_WAVE, Obj, k8s_object, restricted_security_context
from gpuplatform.render.tenants import dra_pool_tolerations
from gpuplatform.render.workload_handoff import extended_resource_toleration

__all__ = [
    "RETRY_EXIT_CODE",
    "ValidationJobs",
    "pod_failure_policy",
    "validation_jobs",
]

RETRY_EXIT_CODE = 3
_CLAIM = "gpu"
_HOOK = {"argocd.argoproj.io/hook": "PostSync", "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation"}


def pod_failure_policy(container: str) -> Obj:
    """Exit 3 (`not yet`) and disruptions (eviction, preemption, drain) start a new pod; nothing else does."""
    return {
        "rules": [
            {
                "action": "Ignore",
                "onExitCodes": {"containerName": container, "operator": "In", "values": [RETRY_EXIT_CODE]},
            },
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        ]
    }


@dataclass
class ValidationJobs:
    """The wave's validation Jobs and the names the gates look for."""

    objects: list[Obj] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=lambda: {"validation": None, "bridge": None})


def _hold(command: tuple[str, ...], seconds: int) -> str:
    query = " ".join(shlex.quote(c) for c in command)
    return (
        "trap 'exit 0' TERM\n"
        f'{query} || echo "gpuplatform: {query} failed with status $?"\n'
        f"sleep {seconds} &\n"
        "wait $!\n"
        f"exit {RETRY_EXIT_CODE}\n"
    )


def _resources(probe: GpuProbe, gpu: Obj) -> Obj:
    """The probe's requests and limits, plus what it asks of the GPU allocators."""
    base = probe.resources.as_k8s()
    out: Obj = {"claims": gpu["claims"]} if "claims" in gpu else {}
    out["limits"] = {**base["limits"], **gpu.get("limits", {})}
    out["requests"] = {**base["requests"], **gpu.get("requests", {})}
    return out


def _job(plan: Plan, state: WaveState, prefix: str, namespace: str, kind: str, gpu: Obj, pod: Obj) -> Obj:
    probe = plan.platform.validation or GpuProbe()
    container = {
        "name": "validation",
        "image": pinned_image(probe.image, probe.image_digest),
        "command": ["sh", "-c", _hold(probe.command, plan.platform.delivery.timeout_minutes * 60)],
        "resources": _resources(probe, gpu),
        "securityContext": restricted_security_context(),
    }
    template = {
        "metadata": {"labels": {VALIDATION_LABEL: kind, WAVE_LABEL: state.name}},
        "spec": {
            "automountServiceAccountToken": False,
            "restartPolicy": "Never",
            **pod,
            "containers": [container],
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        },
    }
    spec = {"backoffLimit": 0, "podFailurePolicy": pod_failure_policy("validation"), "template": template}
    digest = hashlib.sha256(
        f"{plan.platform.name}/{state.dir_name}\n{json.dumps(spec, sort_keys=True)}".encode()
    ).hexdigest()[:10]
    return k8s_object(
        "batch/v1",
        "Job",
        f"{prefix}-{digest}",
        wave=state.name,
        namespace=namespace,
        labels={VALIDATION_LABEL: kind, GATE_PHASE_LABEL: "post", **KEPT_UNTIL_NEXT_WAVE},
        annotations=_HOOK,
        spec=spec,
    )


def _claim_pilot(plan: Plan, state: WaveState, out: ValidationJobs) -> None:
    p = plan.platform
    v = p.validation
    if not state.validation or v is None or v.tenant not in state.tenants:
        return
    tenant = next(t for t in p.tenants if t.name == v.tenant)
    job = _job(
        plan,
        state,
        v.name,
        tenant.ns,
        "claim-pilot",
        {"claims": [{"name": _CLAIM}]},
        {
            "resourceClaims": [{"name": _CLAIM, "resourceClaimTemplateName": v.claim_template}],
            "tolerations": probe_tolerations(plan),
        },
    )
    out.objects.append(job)
    out.data["validation"] = {"namespace": tenant.ns, "job": job["metadata"]["name"], "claim": _CLAIM}


def probe_tolerations(plan: Plan) -> list[Obj]:
    """A probe on DRA nodes tolerates the DRA pools' taints and the GPU nodes' own `nvidia.com/gpu`
    taint: a new node group is created as a copy of the old one, taints included (`aws eks
    create-nodegroup`, `render/cloud_commands.py`), and GPU groups carry it as the ExtendedResourceToleration
    convention has it (a pod with claims gets no such toleration added; `workload_handoff` adds the
    same to converted workloads)."""
    gpu = extended_resource_toleration(GPU_RESOURCE)
    return [*dra_pool_tolerations(plan.platform), gpu]


def _terms(plan: Plan, mode: str, state: WaveState) -> list[Obj]:
    """Node selector terms (ORed) for the nodes of every pool in `mode`."""
    selectors = [
        pool_selector(p)
        for p in plan.platform.node_pools
        if state.pool_modes[p.name] == mode and state.present(p.name)
    ]
    return [s.node_selector_term() for s in selectors if s.resolvable]


def _bridge(plan: Plan, state: WaveState, out: ValidationJobs) -> None:
    if not state.bridges:
        return
    namespace = plan.platform.delivery.gates_namespace
    sides = []
    for side in ("legacy", "dra"):
        terms = _terms(plan, side, state)
        if not terms:
            continue
        pod: Obj = {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
                }
            }
        }
        if side == "dra":
            pod["tolerations"] = probe_tolerations(plan)
        job = _job(
            plan,
            state,
            f"bridge-{side}",
            namespace,
            f"bridge-{side}",
            {"limits": {GPU_RESOURCE: "1"}, "requests": {GPU_RESOURCE: "1"}},
            pod,
        )
        out.objects.append(job)
        sides.append({"side": side, "job": job["metadata"]["name"]})
    out.data["bridge"] = {"namespace": namespace, "sides": sides}


def validation_jobs(plan: Plan, state: WaveState) -> ValidationJobs:
    """The wave's claim-pilot and bridge Jobs, with the names the gate data refers to."""
    out = ValidationJobs()
    _claim_pilot(plan, state, out)
    _bridge(plan, state, out)
    return out
