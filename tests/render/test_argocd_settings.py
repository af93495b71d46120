"""The `argocd-cm` hand-off: a merge patch carrying the ClusterPolicy health check, named in the runbook."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.argocd_settings import (
    ARGOCD_SETTINGS,
    CLUSTER_POLICY_HEALTH,
    HEALTH_KEY,
    argocd_cm_patch,
    argocd_cm_step,
    cluster_policy_health_lua,
)
from gpuplatform.render.tree import render_tree

CRD = Path("/work/shared/reference/crds/nvidia.com_clusterpolicies.yaml")
#: Argo CD's health statuses (argo-cd v3.5.1 gitops-engine/pkg/health/health.go).
ARGO_HEALTH = {"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}


def test_every_clusterpolicy_state_of_the_crd_has_a_health() -> None:
    crd = yaml.safe_load(CRD.read_text())
    [version] = [v for v in crd["spec"]["versions"] if v["storage"]]
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert set(CLUSTER_POLICY_HEALTH) == set(status["state"]["enum"])
    assert {health for health, _ in CLUSTER_POLICY_HEALTH.values()} <= ARGO_HEALTH
    assert CLUSTER_POLICY_HEALTH["ready"][0] == "Healthy"


def test_the_lua_maps_each_state_and_waits_for_one() -> None:
    lua = cluster_policy_health_lua()
    for state, (health, message) in CLUSTER_POLICY_HEALTH.items():
        assert f'  {state} = {{status = "{health}", message = "{message}"}},' in lua
    assert 'hs.status = "Progressing"' in lua.split("end\n")[-1]
    assert lua.count("return hs") == 2


def test_the_argocd_cm_patch_is_a_merge_patch_of_the_health_key_only(reference: Platform) -> None:
    plan = plan_platform(reference)
    [patch] = argocd_cm_patch(plan)
    # no labels or annotations: merged into Argo CD's own ConfigMap, they would stay there
    assert patch["metadata"] == {"name": "argocd-cm", "namespace": reference.delivery.argocd_namespace}
    assert list(patch["data"]) == [HEALTH_KEY]
    assert HEALTH_KEY == "resource.customizations.health.nvidia.com_ClusterPolicy"
    tree = render_tree(plan)
    path = f"{ARGOCD_SETTINGS}/configmap_argocd_argocd-cm.yaml"
    assert tree.files[path] == [patch]
    [step] = argocd_cm_step(plan)
    [command] = step.commands
    assert re.fullmatch(
        rf"kubectl -n argocd patch configmap argocd-cm --type merge --patch-file {path}", command
    )


def test_no_patch_without_argocd_or_without_a_managed_operator(reference: Platform) -> None:
    flux = reference.model_copy(
        update={"delivery": reference.delivery.model_copy(update={"engines": ("flux",)})}
    )
    assert argocd_cm_patch(plan_platform(flux)) == []
    unmanaged = reference.model_copy(
        update={"gpu_operator": reference.gpu_operator.model_copy(update={"managed": False})}
    )
    assert argocd_cm_patch(plan_platform(unmanaged)) == []
    assert argocd_cm_step(plan_platform(unmanaged)) == []
