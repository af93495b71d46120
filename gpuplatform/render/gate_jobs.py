"""Layer 50-gates: one Job per gate of the wave, and the read-only identity they run as.

Pre-transition gates are Argo CD PreSync hooks and, for Flux, the first Kustomization that the
wave's layers depend on; post-transition gates are PostSync hooks and the last Kustomization.
Job names carry a digest of the wave and the script, so that Flux, which never re-runs a completed
Job, runs every gate again on every advance and every rollback.
"""

from __future__ import annotations

import hashlib

from gpuplatform.gates import GATES, Gate, gate_reads, gate_script, gates_for_wave
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, k8s_object, restricted_security_context

__all__ = ["GATE_IDENTITY", "GATE_LABEL", "gate_identity", "gate_job_name", "render_gate_jobs"]

GATE_IDENTITY = "gpuplatform-gates"
GATE_LABEL = "gpuplatform.dev/gate"
PHASE_LABEL = "gpuplatform.dev/gate-phase"
_HOOKS = {"pre": "PreSync", "post": "PostSync"}


def gate_job_name(plan: Plan, state: WaveState, gate: Gate) -> str:
    """`gate-<id>-<digest>`: changes whenever the wave or the script changes."""
    digest = hashlib.sha256(
        f"{plan.platform.name}/{state.dir_name}\n{gate_script(gate, plan, state)}".encode()
    )
    return f"gate-{gate.id}-{digest.hexdigest()[:10]}"


def _job(plan: Plan, state: WaveState, gate: Gate) -> Obj:
    d = plan.platform.delivery
    container = {
        "name": "gate",
        "image": d.kubectl_image,
        "command": ["sh", "-c", gate_script(gate, plan, state)],
        "securityContext": restricted_security_context(),
    }
    return k8s_object(
        "batch/v1",
        "Job",
        gate_job_name(plan, state, gate),
        wave=state.name,
        namespace=d.gates_namespace,
        labels={GATE_LABEL: gate.id, PHASE_LABEL: gate.phase},
        annotations={
            "argocd.argoproj.io/hook": _HOOKS[gate.phase],
            "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation",
            "gpuplatform.dev/gate-title": gate.title,
        },
        spec={
            "backoffLimit": 0,
            "activeDeadlineSeconds": d.timeout_minutes * 60 + 300,
            "template": {
                "metadata": {"labels": {GATE_LABEL: gate.id}},
                "spec": {
                    "serviceAccountName": GATE_IDENTITY,
                    "restartPolicy": "Never",
                    "containers": [container],
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                },
            },
        },
    )


def render_gate_jobs(plan: Plan, state: WaveState) -> list[Obj]:
    """The wave's gate Jobs (phase in the `gpuplatform.dev/gate-phase` label)."""
    return [_job(plan, state, gate) for gate in gates_for_wave(plan, state)]


def gate_identity(plan: Plan, wave: str) -> list[Obj]:
    """Namespace, ServiceAccount and read-only ClusterRole(+Binding) of the gate Jobs.

    They are delivered with the entry points, not with the waves: a PreSync hook runs before the
    wave's own objects exist. The ClusterRole grants get/list/watch on exactly what the gates read.
    """
    d = plan.platform.delivery
    by_group: dict[str, set[str]] = {}
    for gate in GATES:
        for group, resource in gate_reads(gate):
            by_group.setdefault(group, set()).add(resource)
    rules = [
        {"apiGroups": [group], "resources": sorted(resources), "verbs": ["get", "list", "watch"]}
        for group, resources in sorted(by_group.items())
    ]
    name = f"{GATE_IDENTITY}-{plan.platform.name}"
    return [
        k8s_object("v1", "Namespace", d.gates_namespace, wave=wave),
        k8s_object("v1", "ServiceAccount", GATE_IDENTITY, wave=wave, namespace=d.gates_namespace),
        k8s_object("rbac.authorization.k8s.io/v1", "ClusterRole", name, wave=wave, rules=rules),
        k8s_object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            name,
            wave=wave,
            subjects=[{"kind": "ServiceAccount", "name": GATE_IDENTITY, "namespace": d.gates_namespace}],
            roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        ),
    ]
