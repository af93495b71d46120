"""Tenant namespaces: the Namespace, its claim-operator RBAC, claim templates.

The validation Job runs in the validation tenant's namespace but is rendered with the gates
(`render/validation.py`): it is a post-transition hook, not part of the tenant layer.

The claim-operator Role grants only what a person in the tenant needs (each verb is justified in
docs/tenants.md): read, create and delete ResourceClaims and ResourceClaimTemplates. No update or
patch: both specs are immutable (kubernetes/kubernetes `pkg/apis/resource/validation/validation.go`,
`ValidateResourceClaimTemplateUpdate` and the claim equivalent), so those verbs could only edit
metadata, such as removing the delete-protection finalizer of an allocated claim.
"""

from __future__ import annotations

from gpuplatform.labels import COST_CENTER_LABEL, ENVIRONMENT_LABEL, OWNER_LABEL, TENANT_LABEL
from gpuplatform.model.platform import Platform
from gpuplatform.model.tenants import ClaimTemplate, Tenant
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import NEVER_DELETE_ANNOTATIONS, Obj, k8s_object
from gpuplatform.render.nodes import pool_taint
from gpuplatform.render.quota import tenant_quota

__all__ = [
    "CLAIM_OPERATOR_ROLE",
    "CLAIM_VERBS",
    "RECREATE_ANNOTATIONS",
    "claim_role",
    "claim_template_object",
    "dra_pool_tolerations",
    "render_tenants",
    "role_binding",
    "tenant_labels",
    "tenant_namespace",
    "tenant_of",
]

CLAIM_OPERATOR_ROLE = "gpu-claim-operator"
CLAIM_VERBS = ("get", "list", "watch", "create", "delete")
RBAC = "rbac.authorization.k8s.io"
#: A template's spec is immutable, so a changed template must be deleted and created again, and
#: only then: Argo CD's `ServerSideApply=false,Force=true` runs `kubectl apply --force` for it
#: (argoproj/gitops-engine `pkg/sync/sync_context.go`), which deletes and recreates only when the
#: patch is refused as invalid (kubectl `pkg/cmd/apply/patcher.go`); Flux's
#: `kustomize.toolkit.fluxcd.io/force: enabled` recreates on an immutable-field error
#: (fluxcd/kustomize-controller v1.9.4 `ForceSelector`, fluxcd/pkg `ssa/manager_apply.go`). Claims
#: already created from the template are separate objects and stay.
RECREATE_ANNOTATIONS = {
    "argocd.argoproj.io/sync-options": "ServerSideApply=false,Force=true",
    "kustomize.toolkit.fluxcd.io/force": "enabled",
}


def tenant_of(platform: Platform, namespace: str) -> Tenant | None:
    """The tenant that owns `namespace`, if any."""
    return next((t for t in platform.tenants if t.ns == namespace), None)


def tenant_labels(tenant: Tenant | None) -> dict[str, str]:
    """Tenant, owner and cost-center labels (empty values left out)."""
    if tenant is None:
        return {}
    labels = {TENANT_LABEL: tenant.name}
    if tenant.owner:
        labels[OWNER_LABEL] = tenant.owner
    if tenant.cost_center:
        labels[COST_CENTER_LABEL] = tenant.cost_center
    return labels


def tenant_namespace(tenant: Tenant, wave: str) -> Obj:
    """The tenant's Namespace, never pruned or deleted, with owner and cost-center labels."""
    labels = {**tenant_labels(tenant), ENVIRONMENT_LABEL: tenant.environment}
    return k8s_object(
        "v1", "Namespace", tenant.ns, wave=wave, labels=labels, annotations=NEVER_DELETE_ANNOTATIONS
    )


def claim_role(name: str, namespace: str, wave: str, verbs: tuple[str, ...]) -> Obj:
    """A Role granting `verbs` on ResourceClaims and ResourceClaimTemplates, nothing else."""
    return k8s_object(
        f"{RBAC}/v1",
        "Role",
        name,
        wave=wave,
        namespace=namespace,
        rules=[
            {
                "apiGroups": ["resource.k8s.io"],
                "resources": ["resourceclaims", "resourceclaimtemplates"],
                "verbs": list(verbs),
            }
        ],
    )


def _rbac(tenant: Tenant, wave: str) -> list[Obj]:
    role = claim_role(CLAIM_OPERATOR_ROLE, tenant.ns, wave, CLAIM_VERBS)
    if not tenant.groups:
        return [role]
    groups = [{"apiGroup": RBAC, "kind": "Group", "name": g} for g in sorted(tenant.groups)]
    return [role, role_binding(CLAIM_OPERATOR_ROLE, tenant.ns, wave, groups, "Role", CLAIM_OPERATOR_ROLE)]


def role_binding(name: str, namespace: str, wave: str, subjects: list[Obj], kind: str, role: str) -> Obj:
    """A RoleBinding in `namespace` of `subjects` to the Role or ClusterRole `role`."""
    return k8s_object(
        f"{RBAC}/v1",
        "RoleBinding",
        name,
        wave=wave,
        namespace=namespace,
        subjects=subjects,
        roleRef={"apiGroup": RBAC, "kind": kind, "name": role},
    )


def claim_template_object(
    platform: Platform, namespace: str, template: ClaimTemplate, wave: str, requests: list[Obj] | None = None
) -> Obj:
    """A ResourceClaimTemplate asking for `count` devices of the template's tier (or `requests`).

    The owning tenant's labels go on the template and in `spec.metadata.labels`, which the
    resourceclaim controller copies onto every claim it creates from the template
    (kubernetes/kubernetes `pkg/controller/resourceclaim/controller.go`, `handleClaim`).
    """
    if requests is None:
        exactly: Obj = {"deviceClassName": platform.class_name(template.tier), "count": template.count}
        if template.selectors:
            exactly["selectors"] = [{"cel": {"expression": s}} for s in template.selectors]
        requests = [{"name": "gpu", "exactly": exactly}]
    labels = tenant_labels(tenant_of(platform, namespace))
    inner: Obj = {"metadata": {"labels": dict(sorted(labels.items()))}} if labels else {}
    return k8s_object(
        "resource.k8s.io/v1",
        "ResourceClaimTemplate",
        template.name,
        wave=wave,
        namespace=namespace,
        labels=labels,
        annotations=RECREATE_ANNOTATIONS,
        spec={**inner, "spec": {"devices": {"requests": requests}}},
    )


def dra_pool_tolerations(platform: Platform) -> list[Obj]:
    """Tolerations for the taint of every pool (each is a DRA pool in some wave), sorted, unique."""
    taints = {tuple(pool_taint(platform, pool).items()) for pool in platform.node_pools}
    return [
        {
            "key": t["key"],
            "operator": "Equal",
            **({"value": t["value"]} if "value" in t else {}),
            "effect": t["effect"],
        }
        for t in sorted((dict(t) for t in taints), key=lambda t: (t["key"], t.get("value", "")))
    ]


def render_tenants(plan: Plan, state: WaveState) -> list[Obj]:
    """Every enabled tenant's namespace objects."""
    p = plan.platform
    objects: list[Obj] = []
    for tenant in p.tenants:
        if tenant.name not in state.tenants:
            continue
        objects.append(tenant_namespace(tenant, state.name))
        objects.append(tenant_quota(plan, state, tenant))
        objects += _rbac(tenant, state.name)
        objects += [claim_template_object(p, tenant.ns, t, state.name) for t in tenant.claim_templates]
    return objects
