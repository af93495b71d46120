"""The tenant allowlist and the admin-access guard, evaluated on sample claims and templates."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplatform.model import Platform
from gpuplatform.model.tenants import TenantAllowances
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.admission import render_policy
from tests.admission.admission_env import admit

TIER = "nvidia-hopper-large-memory.platform.example.com"


def _policies(reference: Platform) -> dict[str, dict[str, Any]]:
    plan = plan_platform(reference)
    return {
        o["metadata"]["name"]: o
        for o in render_policy(plan, plan.wave("native-claim-pilot"))
        if o["kind"] == "ValidatingAdmissionPolicy"
    }


def _claim(
    *requests: dict[str, Any], annotations: dict[str, str] | None = None, **devices: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "gpu-dra-pilot", "annotations": annotations or {}},
        "spec": {"devices": {"requests": list(requests), **devices}},
    }


def _exactly(cls: str = TIER, **fields: Any) -> dict[str, Any]:
    return {"name": "gpu", "exactly": {"deviceClassName": cls, **fields}}


@pytest.fixture
def tenant_policy(reference: Platform) -> dict[str, Any]:
    return _policies(reference)["gpuplatform-tenant-gpu-dra-pilot"]


def test_allowed_tier_passes(tenant_policy: dict[str, Any]) -> None:
    assert admit(tenant_policy, _claim(_exactly())) == []


def test_other_tier_is_denied(tenant_policy: dict[str, Any]) -> None:
    assert admit(tenant_policy, _claim(_exactly("gpu.nvidia.com"))) == [
        f"tenant gpu-dra-pilot may request only the device classes {TIER}"
    ]


def test_first_available_with_one_bad_alternative_is_denied(tenant_policy: dict[str, Any]) -> None:
    request = {
        "name": "gpu",
        "firstAvailable": [
            {"name": "a", "deviceClassName": TIER},
            {"name": "b", "deviceClassName": "mig.nvidia.com"},
        ],
    }
    assert len(admit(tenant_policy, _claim(request))) == 1
    good = {"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": TIER}]}
    assert admit(tenant_policy, _claim(good)) == []


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        (_claim(_exactly(adminAccess=True)), "adminAccess is not allowed in tenant claims"),
        (_claim(_exactly(allocationMode="All")), "allocationMode: All is not allowed"),
        (
            _claim(_exactly(tolerations=[{"key": "k", "operator": "Exists"}])),
            "device tolerations are not allowed",
        ),
        (_claim(_exactly(selectors=[{"cel": {"expression": "true"}}])), "raw CEL selectors are not allowed"),
        (
            _claim(_exactly(), config=[{"opaque": {"driver": "gpu.nvidia.com", "parameters": {}}}]),
            "opaque device config",
        ),
    ],
)
def test_escapes_are_denied(tenant_policy: dict[str, Any], claim: dict[str, Any], message: str) -> None:
    assert any(message in m for m in admit(tenant_policy, claim))


def test_the_schedulers_bridge_claim_is_allowed_by_identity(tenant_policy: dict[str, Any]) -> None:
    bridge = _claim(
        _exactly("nvidia-gpu-legacy-bridge.platform.example.com"),
        annotations={"resource.kubernetes.io/extended-resource-claim": "true"},
    )
    assert admit(tenant_policy, bridge, user="system:kube-scheduler") == []


def test_a_tenant_copying_the_schedulers_annotation_is_still_denied(tenant_policy: dict[str, Any]) -> None:
    copied = _claim(
        _exactly("gpu.nvidia.com"), annotations={"resource.kubernetes.io/extended-resource-claim": "true"}
    )
    assert admit(tenant_policy, copied, user="system:serviceaccount:gpu-dra-pilot:default") != []


def test_templates_are_checked_in_their_inner_spec(tenant_policy: dict[str, Any]) -> None:
    template = {
        "kind": "ResourceClaimTemplate",
        "spec": {"spec": {"devices": {"requests": [_exactly("mig.nvidia.com")]}}},
    }
    assert admit(tenant_policy, template) != []


def test_allowances_lift_the_matching_check(reference: Platform) -> None:
    tenant = reference.tenants[0].model_copy(
        update={"allow": TenantAllowances(selectors=True, admin_access=True)}
    )
    policy = _policies(reference.model_copy(update={"tenants": (tenant,)}))[
        "gpuplatform-tenant-gpu-dra-pilot"
    ]
    assert (
        admit(policy, _claim(_exactly(selectors=[{"cel": {"expression": "true"}}], adminAccess=True))) == []
    )


def test_admin_access_label_guard(reference: Platform) -> None:
    guard = _policies(reference)["gpuplatform-admin-access-label"]
    labelled = {"metadata": {"name": "ns", "labels": {"resource.kubernetes.io/admin-access": "true"}}}
    assert admit(guard, labelled) != []
    assert admit(guard, labelled, groups=("system:masters",)) == []
    assert admit(guard, {"metadata": {"name": "ns", "labels": {"team": "a"}}}) == []
    assert admit(guard, labelled, old=labelled) == []
