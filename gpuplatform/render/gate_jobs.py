"""Layer 50-gates: one Job per gate of the wave, the workloads they prove it with, and their access.

Pre-transition gates are Argo CD PreSync hooks and, for Flux, the first Kustomization that the
wave's layers depend on; post-transition gates are PostSync hooks and the last Kustomization.

Re-running (`gate_rerun.py` has the operator's text). A gate whose invariant does not hold within
one attempt exits 3; the Job's `podFailurePolicy` ignores that exit and starts a new attempt, so
the Job stays active until the gate holds and never ends `Failed` because the cluster was not yet
safe. That is what lets Flux move on by itself: kustomize-controller never re-runs a Job that
exists (an unchanged Job applies as a no-op; `force` recreates only on a changed immutable field,
kustomize-controller v1.9.4 `internal/controller/kustomization_controller.go`), and a failed Job
would fail every health check until someone deletes it. `ttlSecondsAfterFinished` is not used:
fluxcd/pkg ssa v0.76.1 `manager_wait.go` counts a TTL Job that is gone as healthy, so a failed gate
deleted by its TTL could let the wave pass. Job names carry a digest of the wave, the script, the
facts and the Job's whole spec (image, resources, timeout: a pod template is immutable, and a Job
that kept its name while it changed would fail kustomize-controller's apply), so every advance and
rollback runs new Jobs; Argo CD deletes and recreates hooks on
every sync (`BeforeHookCreation`), and the next wave's hook cleanup (`hook_cleanup.py`) deletes
them, as Flux prunes them.

Programs ship once per platform: every gate's script is a key of the ConfigMap
`gpuplatform-gate-programs` in `delivery/gates/` (`gate_programs`), delivered with the gate
identity before any wave's hooks run. A wave's gate Job carries only its data: the wave's facts
in a ConfigMap of its own (named as the Job, applied with it; a pod waits for a ConfigMap volume
until it exists) and `TIMEOUT`. A wave diff shows what the facts change; a program changes in one
file when the tool does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from gpuplatform.gates import GATES, Access, Gate, gate_facts, gate_script, gates_for_wave
from gpuplatform.labels import GATE_LABEL, GATE_PHASE_LABEL, GATE_TITLE_ANNOTATION, WAVE_LABEL
from gpuplatform.model.containers import pinned_image
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.gate_facts import wave_data
from gpuplatform.render.meta import (
    KEPT_UNTIL_NEXT_WAVE,
    Obj,
    cluster_identity,
    k8s_object,
    restricted_security_context,
)
from gpuplatform.render.validation import pod_failure_policy, validation_jobs

__all__ = [
    "GATE_IDENTITY",
    "GATE_PROGRAMS",
    "gate_identity",
    "gate_job_names",
    "gate_programs",
    "rbac_rules",
    "render_gate_jobs",
]

GATE_IDENTITY = "gpuplatform-gates"
_HOOKS = {"pre": "PreSync", "post": "PostSync"}
_WORK = "work"
_PROGRAMS = "programs"
_FACTS = "facts"
GATE_PROGRAMS = "gpuplatform-gate-programs"
#: Where the gate container finds its program and its facts.
PROGRAMS_PATH = "/gate/programs"
FACTS_FILE = "data.json"
FACTS_PATH = "/gate/facts"


def _name(plan: Plan, state: WaveState, gate: Gate, facts: str) -> str:
    """`gate-<id>-<digest>` of the wave, the script, the facts and the Job's whole spec (its pod
    template is immutable: a Job that kept its name while its image, resources or timeout changed
    could not be applied, and kustomize-controller would fail the layer)."""
    spec = json.dumps(_job(plan, state, gate, "")["spec"], sort_keys=True)
    text = f"{plan.platform.name}/{state.dir_name}\n{gate_script(gate)}\n{facts}\n{spec}"
    return f"gate-{gate.id}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def gate_job_names(plan: Plan, state: WaveState) -> dict[str, str]:
    """Gate id -> `gate-<id>-<digest>` of the wave's gates: changes whenever the wave, the script,
    the facts or anything else in the Job's spec change."""
    facts = wave_data(plan, state, validation_jobs(plan, state).data)
    return {g.id: _name(plan, state, g, gate_facts(g, facts)) for g in gates_for_wave(plan, state)}


def gate_programs(plan: Plan, wave: str) -> Obj:
    """The ConfigMap of every gate's script, `<gate>.sh`: the same for every wave of the platform."""
    return k8s_object(
        "v1",
        "ConfigMap",
        GATE_PROGRAMS,
        wave=wave,
        namespace=plan.platform.delivery.gates_namespace,
        data={f"{gate.id}.sh": gate_script(gate) for gate in GATES},
    )


def _hook(gate: Gate) -> dict[str, str]:
    return {
        "argocd.argoproj.io/hook": _HOOKS[gate.phase],
        "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation",
    }


def _facts(plan: Plan, state: WaveState, gate: Gate, name: str, facts: str) -> Obj:
    """The gate's facts in this wave, a ConfigMap named as its Job, created just before it."""
    return k8s_object(
        "v1",
        "ConfigMap",
        name,
        wave=state.name,
        namespace=plan.platform.delivery.gates_namespace,
        labels={GATE_LABEL: gate.id, GATE_PHASE_LABEL: gate.phase, **KEPT_UNTIL_NEXT_WAVE},
        annotations=_hook(gate) | {"argocd.argoproj.io/sync-wave": "-1"},
        data={FACTS_FILE: facts},
    )


def _job(plan: Plan, state: WaveState, gate: Gate, name: str) -> Obj:
    d = plan.platform.delivery
    container = {
        "name": "gate",
        "image": pinned_image(d.kubectl_image, d.kubectl_image_digest),
        "command": ["sh", f"{PROGRAMS_PATH}/{gate.id}.sh"],
        "env": [
            {"name": "DATA_FILE", "value": f"{FACTS_PATH}/{FACTS_FILE}"},
            {"name": "TIMEOUT", "value": str(d.timeout_minutes * 60)},
        ],
        "resources": d.gate_resources.as_k8s(),
        "securityContext": restricted_security_context(),
        "volumeMounts": [
            {"name": _WORK, "mountPath": "/tmp"},
            {"name": _PROGRAMS, "mountPath": PROGRAMS_PATH, "readOnly": True},
            {"name": _FACTS, "mountPath": FACTS_PATH, "readOnly": True},
        ],
    }
    return k8s_object(
        "batch/v1",
        "Job",
        name,
        wave=state.name,
        namespace=d.gates_namespace,
        labels={GATE_LABEL: gate.id, GATE_PHASE_LABEL: gate.phase, **KEPT_UNTIL_NEXT_WAVE},
        annotations=_hook(gate) | {GATE_TITLE_ANNOTATION: gate.title},
        spec={
            "backoffLimit": 0,
            "podFailurePolicy": pod_failure_policy("gate"),
            "template": {
                "metadata": {"labels": {GATE_LABEL: gate.id, WAVE_LABEL: state.name}},
                "spec": {
                    "serviceAccountName": GATE_IDENTITY,
                    "automountServiceAccountToken": True,
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": [
                        {"name": _WORK, "emptyDir": {"sizeLimit": "256Mi"}},
                        {"name": _PROGRAMS, "configMap": {"name": GATE_PROGRAMS}},
                        {"name": _FACTS, "configMap": {"name": name}},
                    ],
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                },
            },
        },
    )


def rbac_rules(accesses: Iterable[Access]) -> list[Obj]:
    """RBAC rules granting exactly `accesses`: one rule per API group and verb set."""
    grouped: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for a in accesses:
        grouped.setdefault((a.group, a.verbs), set()).add(a.resource)
    return [
        {"apiGroups": [group], "resources": sorted(resources), "verbs": list(verbs)}
        for (group, verbs), resources in sorted(grouped.items())
    ]


def _namespace_access(
    plan: Plan, state: WaveState, gates: list[Gate], workloads: dict[str, Any]
) -> list[Obj]:
    """A Role (+Binding) in each namespace where the wave's gates read logs and remove their pods."""
    namespaces = {
        "validation": (workloads["validation"] or {}).get("namespace"),
        "gates": plan.platform.delivery.gates_namespace,
    }
    objects: list[Obj] = []
    for scope, namespace in namespaces.items():
        accesses = [a for g in gates for a in g.accesses() if a.scope == scope]
        if not accesses or namespace is None:
            continue
        objects += [
            k8s_object(
                "rbac.authorization.k8s.io/v1",
                "Role",
                GATE_IDENTITY,
                wave=state.name,
                namespace=namespace,
                rules=rbac_rules(accesses),
            ),
            k8s_object(
                "rbac.authorization.k8s.io/v1",
                "RoleBinding",
                GATE_IDENTITY,
                wave=state.name,
                namespace=namespace,
                subjects=[
                    {
                        "kind": "ServiceAccount",
                        "name": GATE_IDENTITY,
                        "namespace": plan.platform.delivery.gates_namespace,
                    }
                ],
                roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": GATE_IDENTITY},
            ),
        ]
    return objects


def render_gate_jobs(plan: Plan, state: WaveState) -> list[Obj]:
    """The wave's gate Jobs, validation Jobs and namespaced gate access (phase in `gate-phase`)."""
    workloads = validation_jobs(plan, state)
    gates = gates_for_wave(plan, state)
    facts = wave_data(plan, state, workloads.data)
    jobs: list[Obj] = []
    for gate in gates:
        text = gate_facts(gate, facts)
        name = _name(plan, state, gate, text)
        jobs += [_facts(plan, state, gate, name, text), _job(plan, state, gate, name)]
    return _namespace_access(plan, state, gates, workloads.data) + workloads.objects + jobs


def gate_identity(plan: Plan, wave: str) -> list[Obj]:
    """Namespace, ServiceAccount, read-only ClusterRole(+Binding) and programs of the gate Jobs.

    They are delivered with the entry points, not with the waves: a PreSync hook runs before the
    wave's own objects exist. The ClusterRole lists exactly what the gates read, cluster-wide;
    logs and pod removal are granted per namespace, per wave (`render_gate_jobs`). The
    ServiceAccount mounts no token by default; only the gate pods ask for one.
    """
    d = plan.platform.delivery
    rules = rbac_rules(a for gate in GATES for a in gate.accesses() if a.scope == "cluster")
    name = f"{GATE_IDENTITY}-{plan.platform.name}"
    return [
        k8s_object("v1", "Namespace", d.gates_namespace, wave=wave),
        *cluster_identity(
            GATE_IDENTITY, d.gates_namespace, name, rules, wave=wave, automountServiceAccountToken=False
        ),
        gate_programs(plan, wave),
    ]
