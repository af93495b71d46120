"""Layer 30-policy, cluster-wide: claims outside the declared namespaces, and the admin-access label.

- `gpuplatform-claims-outside-tenants` refuses ResourceClaims and ResourceClaimTemplates in every
  namespace that is neither an enabled tenant's, the platform's (the DRA driver's and the GPU
  Operator's) nor listed in `tenantPolicy.allowNamespaces`. The scheduler's claims for bridged
  `nvidia.com/gpu` requests are let through in any namespace: a legacy workload may land on a DRA
  node wherever it runs.
- `gpuplatform-admin-access-label` lets only `tenantPolicy.adminGroups` set or change the
  `resource.kubernetes.io/admin-access` namespace label, through the namespace or its `status`
  and `finalize` subresources.
"""

from __future__ import annotations

from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, k8s_object
from gpuplatform.render.selectors import cel_string

__all__ = [
    "ADMIN_ACCESS_LABEL",
    "API",
    "CLAIM_RESOURCES",
    "OUTSIDE_TENANTS_POLICY",
    "SCHEDULER",
    "claim_policy_match",
    "core_policy_match",
    "declared_namespaces",
    "policy_binding",
    "render_cluster_policy",
    "scheduler_bridge_claim",
]

API = "admissionregistration.k8s.io/v1"
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
CLAIM_RESOURCES = ("resourceclaims", "resourceclaimtemplates")
OUTSIDE_TENANTS_POLICY = "gpuplatform-claims-outside-tenants"
#: The identity kube-scheduler authenticates as (its bootstrap RBAC role `system:kube-scheduler`),
#: which creates the claim of a pod's `nvidia.com/gpu` request served by a bridge class (KEP-5004).
SCHEDULER = "system:kube-scheduler"


def scheduler_bridge_claim() -> str:
    """CEL: the request is the scheduler creating a ResourceClaim (never a template)."""
    return (
        f"request.userInfo.username == {cel_string(SCHEDULER)} && request.operation == 'CREATE'"
        " && object.kind == 'ResourceClaim'"
    )


def core_policy_match(resources: list[str], operations: list[str]) -> Obj:
    """failurePolicy and matchConstraints of a policy on core (v1) `resources`."""
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": operations, "resources": resources}
            ]
        },
    }


def claim_policy_match(operations: list[str]) -> Obj:
    """failurePolicy, matchConstraints (claims and templates, every served version) and the
    scheduler-bridge-claim exemption shared by the claim policies."""
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "matchPolicy": "Equivalent",
            "resourceRules": [
                {
                    "apiGroups": ["resource.k8s.io"],
                    "apiVersions": ["v1"],
                    "operations": operations,
                    "resources": list(CLAIM_RESOURCES),
                }
            ],
        },
        "matchConditions": [
            {"name": "not-a-scheduler-bridge-claim", "expression": f"!({scheduler_bridge_claim()})"}
        ],
    }


def policy_binding(name: str, wave: str, namespaces: Obj | None = None) -> Obj:
    """The Deny binding of policy `name`, to the namespaces `namespaces` selects (default: all)."""
    spec: Obj = {"policyName": name, "validationActions": ["Deny"]}
    if namespaces is not None:
        spec["matchResources"] = {"namespaceSelector": namespaces}
    return k8s_object(API, "ValidatingAdmissionPolicyBinding", name, wave=wave, spec=spec)


def declared_namespaces(plan: Plan, state: WaveState) -> list[str]:
    """Namespaces where claims may exist in this wave: enabled tenants', the platform's, the allowlist."""
    p = plan.platform
    names = {t.ns for t in p.tenants if t.name in state.tenants}
    names |= {p.dra_driver.namespace, p.gpu_operator.namespace, *p.tenant_policy.allow_namespaces}
    return sorted(names)


def _outside_tenants(plan: Plan, state: WaveState) -> list[Obj]:
    policy = k8s_object(
        API,
        "ValidatingAdmissionPolicy",
        OUTSIDE_TENANTS_POLICY,
        wave=state.name,
        spec={
            **claim_policy_match(["CREATE"]),
            "validations": [
                {
                    "expression": "false",
                    "message": "ResourceClaims and ResourceClaimTemplates are allowed only in tenant and platform "
                    "namespaces: declare a tenant for this namespace or list it in spec.tenantPolicy.allowNamespaces",
                    "reason": "Forbidden",
                }
            ],
        },
    )
    selector = {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": declared_namespaces(plan, state),
            }
        ]
    }
    binding = policy_binding(OUTSIDE_TENANTS_POLICY, state.name, selector)
    return [policy, binding]


def _admin_access_guard(plan: Plan, wave: str) -> list[Obj]:
    name = "gpuplatform-admin-access-label"
    label = cel_string(ADMIN_ACCESS_LABEL)
    admins = ", ".join(cel_string(g) for g in plan.platform.tenant_policy.admin_groups)
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
            **core_policy_match(
                ["namespaces", "namespaces/finalize", "namespaces/status"], ["CREATE", "UPDATE"]
            ),
            "variables": [
                {"name": "admin", "expression": f"request.userInfo.groups.exists(g, g in [{admins}])"}
            ],
            "validations": [
                {
                    "expression": f"!has(object.metadata.labels) || !({label} in object.metadata.labels) || {unchanged}"
                    " || variables.admin",
                    "message": f"only cluster administrators may set the {ADMIN_ACCESS_LABEL} namespace label",
                    "reason": "Forbidden",
                }
            ],
        },
    )
    binding = policy_binding(name, wave)
    return [policy, binding]


def render_cluster_policy(plan: Plan, state: WaveState) -> list[Obj]:
    """Both cluster-wide policies, from the wave that installs the DRA driver (or enables a tenant)."""
    if not (state.driver_installed or state.tenants):
        return []
    return _admin_access_guard(plan, state.name) + _outside_tenants(plan, state)
