"""Tenant namespaces: the Namespace, its claim-operator RBAC, claim templates.

The validation Job runs in the validation tenant's namespace but is rendered with the gates
(`render/validation.py`): it is a post-transition hook, not part of the tenant layer.
"""

from __future__ import annotations

from gpuplatform.model.platform import Platform
from gpuplatform.model.tenants import ClaimTemplate, Tenant
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import NEVER_DELETE_ANNOTATIONS, Obj, k8s_object
from gpuplatform.render.quota import tenant_quota

__all__ = [
    "CLAIM_OPERATOR_ROLE",
    "claim_template_object",
    "render_tenants",
    "tenant_namespace",
]

CLAIM_OPERATOR_ROLE = "gpu-claim-operator"
_CLAIM_VERBS = ["get", "list", "watch", "create", "update", "patch", "delete"]


def tenant_namespace(tenant: Tenant, wave: str) -> Obj:
    """The tenant's Namespace, never pruned or deleted, with owner and cost-center labels."""
    labels = {"gpuplatform.dev/tenant": tenant.name, "gpuplatform.dev/environment": tenant.environment}
    if tenant.owner:
        labels["gpuplatform.dev/owner"] = tenant.owner
    if tenant.cost_center:
        labels["gpuplatform.dev/cost-center"] = tenant.cost_center
    return k8s_object(
        "v1", "Namespace", tenant.ns, wave=wave, labels=labels, annotations=NEVER_DELETE_ANNOTATIONS
    )


def _rbac(tenant: Tenant, wave: str) -> list[Obj]:
    role = k8s_object(
        "rbac.authorization.k8s.io/v1",
        "Role",
        CLAIM_OPERATOR_ROLE,
        wave=wave,
        namespace=tenant.ns,
        rules=[
            {
                "apiGroups": ["resource.k8s.io"],
                "resources": ["resourceclaims", "resourceclaimtemplates"],
                "verbs": list(_CLAIM_VERBS),
            }
        ],
    )
    if not tenant.groups:
        return [role]
    binding = k8s_object(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        CLAIM_OPERATOR_ROLE,
        wave=wave,
        namespace=tenant.ns,
        subjects=[
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}
            for g in sorted(tenant.groups)
        ],
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": CLAIM_OPERATOR_ROLE},
    )
    return [role, binding]


def claim_template_object(platform: Platform, namespace: str, template: ClaimTemplate, wave: str) -> Obj:
    """A ResourceClaimTemplate asking for `count` devices of the template's tier."""
    exactly: Obj = {"deviceClassName": platform.class_name(template.tier), "count": template.count}
    if template.selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in template.selectors]
    return k8s_object(
        "resource.k8s.io/v1",
        "ResourceClaimTemplate",
        template.name,
        wave=wave,
        namespace=namespace,
        spec={"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
    )


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
