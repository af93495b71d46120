"""Layer 30-policy: each tenant's allowlist ValidatingAdmissionPolicy, and the admin-access guard.

Tenants may create ResourceClaims and ResourceClaimTemplates only for their own tiers, in both
request shapes, and without adminAccess, `allocationMode: All`, device tolerations, opaque config or
raw selectors unless the spec allows them. Claims the scheduler creates for extended-resource
(bridge) requests, and what the GitOps controllers apply from reviewed Git, are exempt by the
requester's identity: never by an annotation, which any tenant can set.
"""

from __future__ import annotations

from gpuplatform.model.tenants import Tenant
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, k8s_object
from gpuplatform.render.selectors import cel_string

__all__ = ["ADMIN_ACCESS_LABEL", "EXEMPT_USERS", "render_policy", "tenant_policy"]

API = "admissionregistration.k8s.io/v1"
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
#: Requesters whose claims are not tenant input: the scheduler (bridge claims) and the GitOps
#: controllers (objects reviewed in Git). Identities, not annotations.
EXEMPT_USERS = (
    "system:kube-scheduler",
    "system:serviceaccount:argocd:argocd-application-controller",
    "system:serviceaccount:flux-system:kustomize-controller",
)

_EXACT = "has(r.exactly)"
_SUBS = "(has(r.firstAvailable) ? r.firstAvailable : [])"


def _rule(expression: str, message: str) -> Obj:
    return {"expression": expression, "message": message, "reason": "Forbidden"}


def _validations(tenant: Tenant, classes: list[str]) -> list[Obj]:
    allow = tenant.allow
    checks = [
        _rule(
            f"variables.requests.all(r, !{_EXACT} || r.exactly.deviceClassName in variables.allowed)"
            f" && variables.requests.all(r, {_SUBS}.all(s, s.deviceClassName in variables.allowed))",
            f"tenant {tenant.name} may request only the device classes {', '.join(classes) or '(none)'}",
        )
    ]
    if not allow.admin_access:
        checks.append(
            _rule(
                f"variables.requests.all(r, !{_EXACT} || !has(r.exactly.adminAccess) || r.exactly.adminAccess == false)",
                "adminAccess is not allowed in tenant claims",
            )
        )
    if not allow.allocation_mode_all:
        checks.append(
            _rule(
                f"variables.requests.all(r, (!{_EXACT} || !has(r.exactly.allocationMode) || r.exactly.allocationMode != 'All')"
                f" && {_SUBS}.all(s, !has(s.allocationMode) || s.allocationMode != 'All'))",
                "allocationMode: All is not allowed in tenant claims (it is charged as the maximum device count)",
            )
        )
    if not allow.tolerations:
        checks.append(
            _rule(
                f"variables.requests.all(r, (!{_EXACT} || !has(r.exactly.tolerations) || size(r.exactly.tolerations) == 0)"
                f" && {_SUBS}.all(s, !has(s.tolerations) || size(s.tolerations) == 0))",
                "device tolerations are not allowed in tenant claims",
            )
        )
    if not allow.config:
        checks.append(
            _rule(
                "!has(variables.spec.devices) || !has(variables.spec.devices.config) || size(variables.spec.devices.config) == 0",
                "opaque device config (sharing modes) is not allowed in tenant claims",
            )
        )
    if not allow.selectors:
        checks.append(
            _rule(
                f"variables.requests.all(r, (!{_EXACT} || !has(r.exactly.selectors) || size(r.exactly.selectors) == 0)"
                f" && {_SUBS}.all(s, !has(s.selectors) || size(s.selectors) == 0))",
                "raw CEL selectors are not allowed in tenant claims: request a tier",
            )
        )
    return checks


def tenant_policy(plan: Plan, state: WaveState, tenant: Tenant) -> list[Obj]:
    """The tenant's ValidatingAdmissionPolicy and its Binding to the tenant's namespace."""
    p = plan.platform
    classes = [p.class_name(t) for t in tenant.tiers if t in state.tiers]
    name = f"gpuplatform-tenant-{tenant.name}"
    exempt = ", ".join(cel_string(u) for u in EXEMPT_USERS)
    policy = k8s_object(
        API,
        "ValidatingAdmissionPolicy",
        name,
        wave=state.name,
        spec={
            "failurePolicy": "Fail",
            "matchConstraints": {
                "matchPolicy": "Equivalent",
                "resourceRules": [
                    {
                        "apiGroups": ["resource.k8s.io"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["resourceclaims", "resourceclaimtemplates"],
                    }
                ],
            },
            "matchConditions": [
                {"name": "tenant-requests-only", "expression": f"!(request.userInfo.username in [{exempt}])"}
            ],
            "variables": [
                {
                    "name": "spec",
                    "expression": "object.kind == 'ResourceClaimTemplate' ? object.spec.spec : object.spec",
                },
                {
                    "name": "requests",
                    "expression": "has(variables.spec.devices) && has(variables.spec.devices.requests) ? variables.spec.devices.requests : []",
                },
                {"name": "allowed", "expression": "[" + ", ".join(cel_string(c) for c in classes) + "]"},
            ],
            "validations": _validations(tenant, classes),
        },
    )
    binding = k8s_object(
        API,
        "ValidatingAdmissionPolicyBinding",
        name,
        wave=state.name,
        spec={
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tenant.ns}}
            },
        },
    )
    return [policy, binding]


def _admin_access_guard(wave: str) -> list[Obj]:
    name = "gpuplatform-admin-access-label"
    label = cel_string(ADMIN_ACCESS_LABEL)
    unchanged = (
        f"(request.operation == 'UPDATE' && has(oldObject.metadata.labels) && {label} in oldObject.metadata.labels"
        f" && oldObject.metadata.labels[{label}] == object.metadata.labels[{label}])"
    )
    policy = k8s_object(
        API,
        "ValidatingAdmissionPolicy",
        name,
        wave=wave,
        spec={
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["namespaces"],
                    }
                ]
            },
            "validations": [
                {
                    "expression": f"!has(object.metadata.labels) || !({label} in object.metadata.labels) || {unchanged}"
                    " || 'system:masters' in request.userInfo.groups",
                    "message": f"only cluster administrators may set the {ADMIN_ACCESS_LABEL} namespace label",
                    "reason": "Forbidden",
                }
            ],
        },
    )
    binding = k8s_object(
        API,
        "ValidatingAdmissionPolicyBinding",
        name,
        wave=wave,
        spec={"policyName": name, "validationActions": ["Deny"]},
    )
    return [policy, binding]


def render_policy(plan: Plan, state: WaveState) -> list[Obj]:
    """The admin-access guard (once the driver is installed) and one allowlist per enabled tenant."""
    objects = _admin_access_guard(state.name) if state.driver_installed or state.tenants else []
    for tenant in plan.platform.tenants:
        if tenant.name in state.tenants:
            objects += tenant_policy(plan, state, tenant)
    return objects
