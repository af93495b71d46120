"""Argo CD: the previous wave's hooks are deleted when the next wave is applied, as Flux prunes them.

Argo CD never prunes a hook: the live objects of hooks are skipped when sync tasks are built
(argo-cd v3.5.1 `gitops-engine/pkg/sync/sync_context.go` `getSyncTasks`, "Skipping hook"), are
left out of the sync status (`controller/state.go`), and `BeforeHookCreation` deletes only a live
hook of the same name as one the sync creates (`gitops-engine/pkg/sync/sync_task.go`
`deleteBeforeCreation`). Every digest-named hook of an earlier wave would stay. `HookSucceeded`
would delete a gate's Job, and the log `gpuplatform evidence` reads, the moment the sync succeeds.

So every hook object carries `KEPT_UNTIL_NEXT_WAVE`, and each wave's Argo CD folder runs one more
PreSync hook before its gates (`gpuplatform-hook-cleanup`, sync-wave -2): it deletes, in each
namespace that holds the platform's hooks, the Jobs (and facts ConfigMaps) with that label and
another wave's label. A cluster holds the active wave's hooks only, kept until the next wave is
applied — the rule Flux's pruning gives. The identity may list and delete Jobs and ConfigMaps in
those namespaces only, and a ValidatingAdmissionPolicy lets it delete nothing without the label.
"""

from __future__ import annotations

from gpuplatform.gates import Access
from gpuplatform.labels import WAVE_LABEL
from gpuplatform.model.containers import pinned_image
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.cluster_admission import API, policy_binding
from gpuplatform.render.gate_jobs import rbac_rules
from gpuplatform.render.meta import (
    KEPT_UNTIL_NEXT_WAVE,
    MANAGED_BY,
    Obj,
    k8s_object,
    restricted_security_context,
)
from gpuplatform.render.selectors import cel_string
from gpuplatform.render.validation import validation_jobs

__all__ = ["CLEANUP_IDENTITY", "cleanup_identity", "cleanup_job", "cleanup_namespace_access"]

CLEANUP_IDENTITY = "gpuplatform-hook-cleanup"
#: Before the facts ConfigMaps (-1) and the gate Jobs (0) of the PreSync phase.
_SYNC_WAVE = "-2"
#: What the cleanup may do where the hooks live: Jobs everywhere, the facts ConfigMaps in the gates' namespace.
_JOBS = ("batch", "jobs")
_CONFIGMAPS = ("", "configmaps")


def _kinds(plan: Plan, namespace: str) -> tuple[tuple[str, str], ...]:
    return (_JOBS, _CONFIGMAPS) if namespace == plan.platform.delivery.gates_namespace else (_JOBS,)


def _role(plan: Plan, wave: str, namespace: str) -> list[Obj]:
    """Role and RoleBinding: list and delete the hook kinds of `namespace`, nothing else."""
    d = plan.platform.delivery
    accesses = [
        Access("gates", group, resource, ("delete", "list")) for group, resource in _kinds(plan, namespace)
    ]
    return [
        k8s_object(
            "rbac.authorization.k8s.io/v1",
            "Role",
            CLEANUP_IDENTITY,
            wave=wave,
            namespace=namespace,
            rules=rbac_rules(accesses),
        ),
        k8s_object(
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            CLEANUP_IDENTITY,
            wave=wave,
            namespace=namespace,
            subjects=[{"kind": "ServiceAccount", "name": CLEANUP_IDENTITY, "namespace": d.gates_namespace}],
            roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": CLEANUP_IDENTITY},
        ),
    ]


def _policy(plan: Plan, wave: str) -> list[Obj]:
    """Whatever its RBAC, the cleanup identity deletes only objects labelled `KEPT_UNTIL_NEXT_WAVE`."""
    d = plan.platform.delivery
    user = f"system:serviceaccount:{d.gates_namespace}:{CLEANUP_IDENTITY}"
    name = f"{CLEANUP_IDENTITY}-{plan.platform.name}"
    ((key, value),) = KEPT_UNTIL_NEXT_WAVE.items()
    policy = k8s_object(
        API,
        "ValidatingAdmissionPolicy",
        name,
        wave=wave,
        spec={
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["DELETE"], "resources": ["*"]}
                ]
            },
            "matchConditions": [
                {"name": "cleanup-identity", "expression": f"request.userInfo.username == {cel_string(user)}"}
            ],
            "validations": [
                {
                    "expression": f"has(oldObject.metadata.labels) && {cel_string(key)} in oldObject.metadata.labels"
                    f" && oldObject.metadata.labels[{cel_string(key)}] == {cel_string(value)}",
                    "message": f"{CLEANUP_IDENTITY} may delete only objects labelled {key}={value}",
                }
            ],
        },
    )
    return [policy, policy_binding(name, wave)]


def cleanup_identity(plan: Plan, wave: str) -> list[Obj]:
    """ServiceAccount, its Role in the gates' namespace and the delete-only-hooks policy (Argo CD only).

    Delivered with the gate identity: the cleanup is a PreSync hook, which runs before the wave's own
    objects exist."""
    d = plan.platform.delivery
    if "argocd" not in d.engines:
        return []
    account = k8s_object(
        "v1",
        "ServiceAccount",
        CLEANUP_IDENTITY,
        wave=wave,
        namespace=d.gates_namespace,
        automountServiceAccountToken=False,
    )
    return [account, *_role(plan, wave, d.gates_namespace), *_policy(plan, wave)]


def _namespaces(plan: Plan, state: WaveState) -> list[str]:
    """The namespaces of the wave's hooks other than the gates' (the claim pilot's tenant)."""
    gates = plan.platform.delivery.gates_namespace
    return sorted({o["metadata"]["namespace"] for o in validation_jobs(plan, state).objects} - {gates})


def cleanup_namespace_access(plan: Plan, state: WaveState) -> list[Obj]:
    """The cleanup's Role in each other namespace of the wave's hooks, applied with the post gates
    (Argo CD only): it exists while the wave's hooks do, so the next wave's cleanup may delete them."""
    if "argocd" not in plan.platform.delivery.engines:
        return []
    return [o for ns in _namespaces(plan, state) for o in _role(plan, state.name, ns)]


def _script(plan: Plan) -> str:
    """Delete, per namespace the cleanup may delete in, the labelled hooks of every wave but `$WAVE`
    (the pod's own wave label): the same script in every wave, so a wave diff does not show it."""
    ((key, value),) = KEPT_UNTIL_NEXT_WAVE.items()
    selector = f'"{MANAGED_BY}=gpuplatform,{key}={value},{WAVE_LABEL}!=$WAVE"'
    namespaces = {plan.platform.delivery.gates_namespace}
    for other in plan.waves:
        namespaces |= set(_namespaces(plan, other))
    lines = ["set -eu"]
    for ns in sorted(namespaces):
        kinds = ",".join(resource for _, resource in _kinds(plan, ns))
        lines.append(
            f"if kubectl auth can-i delete jobs.batch -n {ns} --quiet; then\n"
            f"  kubectl delete {kinds} -n {ns} -l {selector} --ignore-not-found --wait=false\n"
            "fi"
        )
    return "\n".join(lines) + "\n"


def cleanup_job(plan: Plan, state: WaveState) -> Obj:
    """The PreSync hook that deletes the other waves' hooks (same name in every wave, so Argo CD's
    `BeforeHookCreation` replaces it and it does not pile up itself)."""
    d = plan.platform.delivery
    container = {
        "name": "cleanup",
        "image": pinned_image(d.kubectl_image, d.kubectl_image_digest),
        "command": ["sh", "-c", _script(plan)],
        "env": [
            {"name": "WAVE", "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{WAVE_LABEL}']"}}}
        ],
        "resources": d.gate_resources.as_k8s(),
        "securityContext": restricted_security_context(),
        "volumeMounts": [{"name": "work", "mountPath": "/tmp"}],
    }
    return k8s_object(
        "batch/v1",
        "Job",
        CLEANUP_IDENTITY,
        wave=state.name,
        namespace=d.gates_namespace,
        annotations={
            "argocd.argoproj.io/hook": "PreSync",
            "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation",
            "argocd.argoproj.io/sync-wave": _SYNC_WAVE,
        },
        spec={
            "backoffLimit": 2,
            "template": {
                "metadata": {"labels": {WAVE_LABEL: state.name}},
                "spec": {
                    "serviceAccountName": CLEANUP_IDENTITY,
                    "automountServiceAccountToken": True,
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": [{"name": "work", "emptyDir": {"sizeLimit": "16Mi"}}],
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                },
            },
        },
    )
