"""The `argocd-cm` hand-off: a merge patch carrying the ClusterPolicy health check, named in the runbook."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import lupa.lua51
import lupa.lua54
import pytest
import yaml

from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.argocd_settings import (
    ARGOCD_SETTINGS,
    CLUSTER_POLICY_HEALTH,
    CONDITION_HEALTH,
    HEALTH_KEY,
    INSTALLED_FROM_MANIFESTS,
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


#: Lua runtimes: Argo CD runs health checks with gopher-lua, a Lua 5.1; 5.4 guards against 5.1-only idioms.
RUNTIMES = {"lua5.1": lupa.lua51, "lua5.4": lupa.lua54}


def _condition(kind: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    """A `metav1.Condition` as the operator sets it (`meta.SetStatusCondition`)."""
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-07-01T10:00:00Z",
    }


def _ready(reason: str, message: str) -> list[dict[str, Any]]:
    """gpu-operator v26.3.1 internal/conditions/clusterpolicy.go `updateConditions`, case Ready."""
    return [_condition("Ready", "True", reason, message), _condition("Error", "False", "Ready")]


def _error(reason: str, message: str) -> list[dict[str, Any]]:
    """The same function, case Error."""
    return [_condition("Ready", "False", "Error"), _condition("Error", "True", reason, message)]


#: What gpu-operator v26.3.1 `controllers/clusterpolicy_controller.go` `Reconcile` writes in each
#: situation (state by `updateCRState`/`SetStatus`, conditions by the conditions updater), with the
#: health the check must give.
STATUSES: dict[str, tuple[dict[str, Any] | None, str]] = {
    "reconciled": (
        {
            "state": "ready",
            "conditions": _ready(
                "Reconciled", "ClusterPolicy is ready as all resources have been successfully reconciled"
            ),
        },
        "Healthy",
    ),
    "no GPU nodes": (
        {
            "state": "ready",
            "conditions": _ready(
                "NoGPUNodes", "No GPU node found, watching for new nodes to join the cluster."
            ),
        },
        "Progressing",
    ),
    "NFD labels missing": (
        {"state": "ready", "conditions": _ready("NFDLabelsMissing", "No NFD labels found")},
        "Degraded",
    ),
    "rollout in progress": (
        {
            "state": "notReady",
            "conditions": _error(
                "OperandNotReady", "ClusterPolicy is not ready, states not ready: [state-driver]"
            ),
        },
        "Progressing",
    ),
    "a state failed to reconcile": (
        {
            "state": "notReady",
            "conditions": _error("ReconcileFailed", "Failed to reconcile state-driver: daemonset not found"),
        },
        "Degraded",
    ),
    "init failed after ready": (
        {
            "state": "ready",
            "conditions": _error("ReconcileFailed", "failed to get ClusterPolicy object: timeout"),
        },
        "Degraded",
    ),
    "a second ClusterPolicy": ({"state": "ignored", "namespace": "gpu-operator"}, "Degraded"),
    "just created": (None, "Progressing"),
}


def _health(runtime: Any, lua: str, policy: dict[str, Any]) -> tuple[str, str]:
    """The check run as Argo CD runs it: the object as the global `obj`, the script's returned table."""
    lua_runtime = runtime.LuaRuntime(unpack_returned_tuples=True)
    lua_runtime.globals().obj = lua_runtime.table_from(policy, recursive=True)
    result = lua_runtime.execute(lua)
    return str(result["status"]), str(result["message"])


def test_the_statuses_are_the_crd_s() -> None:
    crd = yaml.safe_load(CRD.read_text())
    [version] = [v for v in crd["spec"]["versions"] if v["storage"]]
    schema = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    for status, _ in STATUSES.values():
        if status is not None:
            jsonschema.validate(status, schema)


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
@pytest.mark.parametrize("situation", list(STATUSES))
def test_the_lua_check_gives_each_operator_status_its_health(runtime: str, situation: str) -> None:
    status, expected = STATUSES[situation]
    policy: dict[str, Any] = {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
    }
    if status is not None:
        policy["status"] = status
    health, message = _health(RUNTIMES[runtime], cluster_policy_health_lua(), policy)
    assert health == expected
    assert health in ARGO_HEALTH and message
    for condition in (status or {}).get("conditions", []):
        if condition["status"] == "True" and condition["reason"] in CONDITION_HEALTH:
            assert condition["message"] in message, "a failure names its reason and the operator's message"


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
    # one alternative per way Argo CD is installed, each its own block: an operator runs one
    assert [len(part.commands) for part in step.parts] == [1, 1, 1]
    assert step.parts[0].text.startswith(INSTALLED_FROM_MANIFESTS)
    patch_command, helm_command, operator_command = (part.commands[0] for part in step.parts)
    assert re.fullmatch(
        rf"kubectl -n argocd patch configmap argocd-cm --type merge --patch-file {path}", patch_command
    )
    # the Helm values and the ArgoCD resource's list are run with helm and jq in tests/realtools
    assert f"-f {ARGOCD_SETTINGS}/argo-cd-values.json" in helm_command
    assert f"{ARGOCD_SETTINGS}/argocd-resourcehealthchecks.json" in operator_command
    assert tree.files[f"{ARGOCD_SETTINGS}/clusterpolicy-health.lua"] == cluster_policy_health_lua()


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
