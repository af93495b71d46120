"""Layer 30-policy: each tenant's allowlist ValidatingAdmissionPolicy.

Tenants may create ResourceClaims and ResourceClaimTemplates only for their own tiers, in both
request shapes, and without adminAccess, `allocationMode: All`, device tolerations, opaque config or
raw selectors unless the spec allows them. No GitOps controller is exempt: what the platform itself
applies in a tenant namespace passes by construction (the tenant's tiers; the selectors the spec
reviewed, including those the NIM Operator writes), and tenants' Applications and Kustomizations
are checked whoever runs them. The one exempt identity is the scheduler creating the claim of a
bridged `nvidia.com/gpu` request (by identity, never by annotation, which any tenant can set).

Both specs are immutable, so content is checked on CREATE; on UPDATE the policy only refuses
dropping the delete-protection finalizer of an allocated claim (the resourceclaim controller
removes it after deallocation, kubernetes/kubernetes `pkg/controller/resourceclaim/controller.go`;
`tenantPolicy.adminGroups` may force it).
"""

from __future__ import annotations

from gpuplatform.model.tenants import Tenant
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.cluster_admission import (
    ADMIN_ACCESS_LABEL,
    API,
    claim_policy_match,
    policy_binding,
    render_cluster_policy,
)
from gpuplatform.render.meta import Obj, k8s_object
from gpuplatform.render.nim_cel import operator_selectors
from gpuplatform.render.selectors import cel_string

__all__ = [
    "ADMIN_ACCESS_LABEL",
    "DELETE_PROTECTION",
    "render_policy",
    "reviewed_selectors",
    "tenant_policy",
]

DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
_EXACT = "has(r.exactly)"
_SUBS = "(has(r.firstAvailable) ? r.firstAvailable : [])"
_CREATED = "!variables.created || "


def _rule(expression: str, message: str) -> Obj:
    return {"expression": expression, "message": message, "reason": "Forbidden"}


def _requests_all(exact: str, sub: str | None) -> str:
    """Every request satisfies `exact` (on `r.exactly`) and each `firstAvailable` item `sub` (on `s`)."""
    subs = f" && {_SUBS}.all(s, {sub})" if sub is not None else ""
    return f"variables.requests.all(r, (!{_EXACT} || {exact}){subs})"


def _unset_or(field: str, owner: str, check: str) -> str:
    return f"!has({owner}.{field}) || {check.format(f'{owner}.{field}')}"


def _content_checks(tenant: Tenant, classes: list[str]) -> list[Obj]:
    allow = tenant.allow
    checks = [
        _rule(
            _requests_all(
                "r.exactly.deviceClassName in variables.allowed", "s.deviceClassName in variables.allowed"
            ),
            f"tenant {tenant.name} may request only the device classes {', '.join(classes) or '(none)'}",
        )
    ]
    if not allow.admin_access:
        checks.append(
            _rule(
                _requests_all(_unset_or("adminAccess", "r.exactly", "{} == false"), None),
                "adminAccess is not allowed in tenant claims",
            )
        )
    if not allow.allocation_mode_all:
        checks.append(
            _rule(
                _requests_all(
                    _unset_or("allocationMode", "r.exactly", "{} != 'All'"),
                    _unset_or("allocationMode", "s", "{} != 'All'"),
                ),
                "allocationMode: All is not allowed in tenant claims (it is charged as the maximum device count)",
            )
        )
    if not allow.tolerations:
        checks.append(
            _rule(
                _requests_all(
                    _unset_or("tolerations", "r.exactly", "size({}) == 0"),
                    _unset_or("tolerations", "s", "size({}) == 0"),
                ),
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
        reviewed = "{}.all(x, has(x.cel) && x.cel.expression in variables.reviewed)"
        checks.append(
            _rule(
                _requests_all(
                    _unset_or("selectors", "r.exactly", reviewed), _unset_or("selectors", "s", reviewed)
                ),
                "raw CEL selectors are not allowed in tenant claims: request a tier "
                "(selectors the spec reviewed for this namespace are the exception)",
            )
        )
    return [{**c, "expression": _CREATED + c["expression"]} for c in checks]


def _finalizer_guard(admin_groups: tuple[str, ...]) -> Obj:
    key = cel_string(DELETE_PROTECTION)
    admins = ", ".join(cel_string(g) for g in admin_groups)
    kept = f"(has(object.metadata.finalizers) && {key} in object.metadata.finalizers)"
    held = (
        f"has(oldObject.status) && has(oldObject.status.allocation) && has(oldObject.metadata.finalizers)"
        f" && {key} in oldObject.metadata.finalizers"
    )
    return _rule(
        f"variables.created || object.kind != 'ResourceClaim' || !({held}) || {kept}"
        f" || request.userInfo.groups.exists(g, g in [{admins}])",
        f"the {DELETE_PROTECTION} finalizer stays on an allocated claim (the resourceclaim controller "
        "removes it; only spec.tenantPolicy.adminGroups may force it)",
    )


def reviewed_selectors(plan: Plan, state: WaveState, tenant: Tenant) -> list[str]:
    """Selector expressions the spec reviewed for the tenant's namespace: its claim templates' and
    those the NIM Operator writes for the namespace's NIM services moved by this wave."""
    p = plan.platform
    found = [s for t in tenant.claim_templates for s in t.selectors]
    for nim in p.nim_services:
        if nim.namespace == tenant.ns and nim.name in state.nim_services and nim.mode == "claimCreationSpec":
            found += operator_selectors(nim)
    return sorted(set(found))


def tenant_policy(plan: Plan, state: WaveState, tenant: Tenant) -> list[Obj]:
    """The tenant's ValidatingAdmissionPolicy and its Binding to the tenant's namespace."""
    p = plan.platform
    classes = [p.class_name(t) for t in tenant.tiers if t in state.tiers]
    name = f"gpuplatform-tenant-{tenant.name}"
    policy = k8s_object(
        API,
        "ValidatingAdmissionPolicy",
        name,
        wave=state.name,
        spec={
            **claim_policy_match(["CREATE", "UPDATE"]),
            "variables": [
                {"name": "created", "expression": "request.operation == 'CREATE'"},
                {
                    "name": "spec",
                    "expression": "object.kind == 'ResourceClaimTemplate' ? object.spec.spec : object.spec",
                },
                {
                    "name": "requests",
                    "expression": "has(variables.spec.devices) && has(variables.spec.devices.requests) ? variables.spec.devices.requests : []",
                },
                {"name": "allowed", "expression": "[" + ", ".join(cel_string(c) for c in classes) + "]"},
                {
                    "name": "reviewed",
                    "expression": "["
                    + ", ".join(cel_string(s) for s in reviewed_selectors(plan, state, tenant))
                    + "]",
                },
            ],
            "validations": [
                *_content_checks(tenant, classes),
                _finalizer_guard(p.tenant_policy.admin_groups),
            ],
        },
    )
    binding = policy_binding(name, state.name, {"matchLabels": {"kubernetes.io/metadata.name": tenant.ns}})
    return [policy, binding]


def render_policy(plan: Plan, state: WaveState) -> list[Obj]:
    """The cluster-wide policies (once the driver is installed) and one allowlist per enabled tenant."""
    objects = render_cluster_policy(plan, state)
    for tenant in plan.platform.tenants:
        if tenant.name in state.tenants:
            objects += tenant_policy(plan, state, tenant)
    return objects
