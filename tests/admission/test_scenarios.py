"""Issue 13's admission scenarios, each evaluated on the RENDERED 30-policy of a wave (CEL on
cel-python, bindings by namespace), each with the fixture that breaks it."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplatform.plan.waves import Plan
from tests.admission.admission_env import admission
from tests.admission.lab import (
    ARGOCD,
    CLAIM_CONTROLLER,
    FLUX,
    FULL,
    HOPPER,
    NIM_OPERATOR,
    TENANT_SA,
    lab_plan,
    lab_platform,
    layer_objects,
    nim_operator_template,
)

OUTSIDE = "ResourceClaims and ResourceClaimTemplates are allowed only in tenant and platform namespaces"


@pytest.fixture(scope="module")
def plan() -> Plan:
    return lab_plan()


@pytest.fixture(scope="module")
def policies(plan: Plan) -> list[dict[str, Any]]:
    return layer_objects(plan, "nim", "30-policy")


def _claim(cls: str, namespace: str = "team-a", **exactly: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": cls, **exactly}}]}},
    }


def _template(cls: str, namespace: str = "team-a", **exactly: Any) -> dict[str, Any]:
    claim = _claim(cls, namespace, **exactly)
    return {**claim, "kind": "ResourceClaimTemplate", "spec": {"spec": claim["spec"]}}


# --- tenant claims ----------------------------------------------------------------------------


def test_a_tenant_claims_its_tiers_and_nothing_else(policies: list[dict[str, Any]]) -> None:
    assert admission(policies, _claim(HOPPER), namespace="team-a") == []
    assert admission(policies, _template(FULL), namespace="team-a") == []
    refused = admission(policies, _claim("gpu.nvidia.com"), namespace="team-a")
    assert refused == [f"tenant team-a may request only the device classes {FULL}, {HOPPER}"]


def test_selectors_the_spec_reviewed_pass_and_others_do_not(policies: list[dict[str, Any]]) -> None:
    reviewed = "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')"
    assert (
        admission(policies, _claim(HOPPER, selectors=[{"cel": {"expression": reviewed}}]), namespace="team-a")
        == []
    )
    other = _claim(
        HOPPER, selectors=[{"cel": {"expression": "device.attributes['gpu.nvidia.com'].index == 0"}}]
    )
    assert any("raw CEL selectors" in m for m in admission(policies, other, namespace="team-a"))


# --- GitOps-applied claims ----------------------------------------------------------------------


@pytest.mark.parametrize("user", [TENANT_SA, ARGOCD, FLUX])
def test_gitops_applied_claims_are_checked_whoever_applies_them(
    policies: list[dict[str, Any]], user: str
) -> None:
    assert admission(policies, _claim(HOPPER), namespace="team-a", user=user) == []
    escape = _claim(HOPPER, adminAccess=True, allocationMode="All")
    assert len(admission(policies, escape, namespace="team-a", user=user)) == 2
    assert admission(policies, _claim("mig.nvidia.com"), namespace="team-a", user=user) != []


def test_the_tenant_gitops_identity_is_rendered_for_both_engines(plan: Plan) -> None:
    objects = {(o["kind"], o["metadata"]["name"]): o for o in layer_objects(plan, "claims", "40-tenants")}
    project = objects[("AppProject", "lab-team-a")]["spec"]
    assert project["destinations"] == [{"server": "https://kubernetes.default.svc", "namespace": "team-a"}]
    assert project["destinationServiceAccounts"] == [
        {
            "server": "https://kubernetes.default.svc",
            "namespace": "team-a",
            "defaultServiceAccount": "team-a:gitops-deployer",
        }
    ]
    assert project["clusterResourceWhitelist"] == []
    assert {"group": "", "kind": "ResourceQuota"} in project["namespaceResourceBlacklist"]
    assert ("ServiceAccount", "gitops-deployer") in objects
    binding = objects[("RoleBinding", "gpu-claim-deployer")]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "gitops-deployer", "namespace": "team-a"}
    ]
    assert objects[("Role", "gpu-claim-deployer")]["rules"][0]["verbs"] == [
        "get",
        "list",
        "watch",
        "create",
        "delete",
        "patch",
    ]


# --- NIM Operator claims ------------------------------------------------------------------------


def test_the_nim_operators_template_passes_as_it_writes_it(policies: list[dict[str, Any]]) -> None:
    template = nim_operator_template()
    assert admission(policies, template, namespace="team-a", user=NIM_OPERATOR) == []
    claim = {**template, "kind": "ResourceClaim", "spec": template["spec"]["spec"]}
    assert admission(policies, claim, namespace="team-a", user=CLAIM_CONTROLLER) == []


@pytest.mark.parametrize(
    "replacement",
    [
        ('quantity("1Gi")', 'quantity("1024Mi")'),
        ('"Hopper"', '"Ampere"'),
        ("hopper.lab.example.com", "gpu.nvidia.com"),
        ("ExactCount", "All"),
    ],
    ids=["uncanonical-quantity", "undeclared-selector", "chart-class", "all-devices"],
)
def test_nim_templates_the_spec_did_not_declare_are_refused(
    policies: list[dict[str, Any]], replacement: tuple[str, str]
) -> None:
    assert (
        admission(policies, nim_operator_template(replacement), namespace="team-a", user=NIM_OPERATOR) != []
    )


def test_nim_selectors_are_allowed_only_from_the_wave_the_service_moves(plan: Plan) -> None:
    before = layer_objects(plan, "claims", "30-policy")
    assert admission(before, nim_operator_template(), namespace="team-a", user=NIM_OPERATOR) != []


# --- kube-controller-manager creating claims from templates -----------------------------------


def _from_template(cls: str) -> dict[str, Any]:
    claim = _claim(cls)
    claim["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": "gpu"}
    return claim


def test_claims_copied_from_allowed_templates_pass_and_others_do_not(policies: list[dict[str, Any]]) -> None:
    assert admission(policies, _from_template(FULL), namespace="team-a", user=CLAIM_CONTROLLER) == []
    assert (
        admission(policies, _from_template("vfio.gpu.nvidia.com"), namespace="team-a", user=CLAIM_CONTROLLER)
        != []
    )


def _allocated(finalizers: list[str], allocation: bool = True) -> dict[str, Any]:
    claim = _claim(FULL)
    claim["metadata"]["finalizers"] = finalizers
    if allocation:
        claim["status"] = {"allocation": {"devices": {"results": []}}}
    return claim


def test_the_delete_protection_finalizer_stays_while_allocated(policies: list[dict[str, Any]]) -> None:
    held = _allocated(["resource.kubernetes.io/delete-protection"])
    stripped = _allocated([])
    assert any(
        "delete-protection" in m
        for m in admission(policies, stripped, namespace="team-a", user=TENANT_SA, old=held)
    )
    # break glass: the admin groups may force it
    assert admission(policies, stripped, namespace="team-a", groups=("platform-admins",), old=held) == []
    released = _allocated(["resource.kubernetes.io/delete-protection"], allocation=False)
    assert (
        admission(policies, _allocated([], False), namespace="team-a", user=CLAIM_CONTROLLER, old=released)
        == []
    )


def test_metadata_updates_of_claims_admitted_before_the_policy_pass(policies: list[dict[str, Any]]) -> None:
    old = _claim("gpu.nvidia.com")
    new = {**old, "metadata": {**old["metadata"], "labels": {"x": "y"}}}
    assert admission(policies, new, namespace="team-a", user=CLAIM_CONTROLLER, old=old) == []


# --- the scheduler's bridge claims --------------------------------------------------------------

BRIDGE = "legacy-bridge.lab.example.com"


@pytest.mark.parametrize("namespace", ["team-a", "legacy-apps"])
def test_the_scheduler_creates_bridge_claims_in_any_namespace(
    policies: list[dict[str, Any]], namespace: str
) -> None:
    claim = _claim(BRIDGE, namespace)
    claim["metadata"]["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert admission(policies, claim, namespace=namespace, user="system:kube-scheduler") == []
    assert admission(policies, claim, namespace=namespace, user=TENANT_SA) != []
    template = _template(BRIDGE, namespace)
    assert admission(policies, template, namespace=namespace, user="system:kube-scheduler") != []


# --- undeclared namespaces ----------------------------------------------------------------------


def test_claims_outside_declared_namespaces_are_refused(plan: Plan, policies: list[dict[str, Any]]) -> None:
    assert admission(policies, _claim(FULL, "team-x"), namespace="team-x", user=ARGOCD) == [OUTSIDE + _REST]
    assert admission(policies, _claim(FULL, "research"), namespace="research") == []
    assert admission(policies, _claim(FULL, "nvidia-dra-driver-gpu"), namespace="nvidia-dra-driver-gpu") == []
    # team-b is declared only from the wave that enables it
    assert admission(policies, _claim(FULL, "team-b"), namespace="team-b") != []
    later = layer_objects(plan, "app", "30-policy")
    assert admission(later, _claim(FULL, "team-b"), namespace="team-b") == []
    assert admission(later, _claim(HOPPER, "team-b"), namespace="team-b") != []


_REST = ": declare a tenant for this namespace or list it in spec.tenantPolicy.allowNamespaces"


# --- the admin-access label ---------------------------------------------------------------------


@pytest.mark.parametrize("subresource", ["", "status", "finalize"])
def test_only_admin_groups_set_the_admin_access_label(
    policies: list[dict[str, Any]], subresource: str
) -> None:
    plain = {"kind": "Namespace", "metadata": {"name": "team-a", "labels": {"team": "a"}}}
    labelled = {
        "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"resource.kubernetes.io/admin-access": "true"}},
    }
    assert admission(policies, labelled, old=plain, subresource=subresource, user=ARGOCD) != []
    assert admission(policies, labelled, old=plain, subresource=subresource, groups=("system:masters",)) != []
    assert (
        admission(policies, labelled, old=plain, subresource=subresource, groups=("platform-admins",)) == []
    )
    assert admission(policies, labelled, old=labelled, subresource=subresource, user=ARGOCD) == []


def test_a_tenant_without_gitops_gets_no_identity_and_is_checked_all_the_same() -> None:
    tenants = lab_platform().model_dump(by_alias=True, exclude_none=True)["tenants"]
    tenants[0]["gitops"] = {"enabled": False}
    plan = lab_plan(tenants=tenants)
    kinds = {o["kind"] for o in layer_objects(plan, "claims", "40-tenants")}
    assert not kinds & {"ServiceAccount", "AppProject"}
    policies = layer_objects(plan, "claims", "30-policy")
    assert admission(policies, _claim("gpu.nvidia.com"), namespace="team-a", user=ARGOCD) != []
