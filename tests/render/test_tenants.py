"""Tenant namespace objects: protected Namespace, least-privilege Role, claim templates, validation Job."""

from __future__ import annotations

from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.tenants import render_tenants


def _objects(reference: Platform, wave: str) -> dict[str, dict]:  # type: ignore[type-arg]
    plan = plan_platform(reference)
    return {o["kind"]: o for o in render_tenants(plan, plan.wave(wave))}


def test_no_tenant_before_its_wave(reference: Platform) -> None:
    plan = plan_platform(reference)
    assert render_tenants(plan, plan.wave("driver-validation")) == []


def test_namespace_is_never_pruned_and_carries_owner_labels(reference: Platform) -> None:
    ns = _objects(reference, "native-claim-pilot")["Namespace"]
    assert ns["metadata"]["name"] == "gpu-dra-pilot"
    assert ns["metadata"]["labels"]["gpuplatform.dev/owner"] == "ml-platform"
    assert ns["metadata"]["labels"]["gpuplatform.dev/cost-center"] == "cc-4711"
    assert "Delete=false" in ns["metadata"]["annotations"]["argocd.argoproj.io/sync-options"]
    assert ns["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"] == "disabled"


def test_role_grants_only_claims_and_templates_without_update_or_patch(reference: Platform) -> None:
    # Both specs are immutable: update/patch could only edit metadata, e.g. drop a finalizer.
    objects = _objects(reference, "native-claim-pilot")
    assert objects["Role"]["rules"] == [
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceclaims", "resourceclaimtemplates"],
            "verbs": ["get", "list", "watch", "create", "delete"],
        }
    ]
    assert objects["RoleBinding"]["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "gpu-dra-pilot-operators"}
    ]


def test_claim_template_requests_the_tier_class_and_labels_its_claims(reference: Platform) -> None:
    template = _objects(reference, "native-claim-pilot")["ResourceClaimTemplate"]
    tenant = {
        "gpuplatform.dev/cost-center": "cc-4711",
        "gpuplatform.dev/owner": "ml-platform",
        "gpuplatform.dev/tenant": "gpu-dra-pilot",
    }
    assert template["metadata"] == {
        "name": "hopper-large-gpu",
        "namespace": "gpu-dra-pilot",
        "labels": {
            "app.kubernetes.io/managed-by": "gpuplatform",
            **tenant,
            "gpuplatform.dev/wave": "native-claim-pilot",
        },
        "annotations": {
            "argocd.argoproj.io/sync-options": "ServerSideApply=false,Force=true",
            "kustomize.toolkit.fluxcd.io/force": "enabled",
        },
    }
    # the resourceclaim controller copies spec.metadata.labels onto every claim it creates
    assert template["spec"]["metadata"] == {"labels": tenant}
    assert template["spec"]["spec"]["devices"]["requests"] == [
        {
            "name": "gpu",
            "exactly": {"deviceClassName": "nvidia-hopper-large-memory.platform.example.com", "count": 1},
        }
    ]
