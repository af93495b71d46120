"""Argo CD settings the platform needs in `argocd-cm`, handed off (Argo CD's own configuration).

The GPU Operator's ClusterPolicy has no built-in health check (argo-cd v3.5.1 has no
`resource_customizations/nvidia.com/`), so Argo CD calls it Healthy as soon as it exists, whatever
the operator reports. A Lua health check (`resource.customizations.health.nvidia.com_ClusterPolicy`,
argo-cd docs/operator-manual/health.md) reads what the operator writes (NVIDIA/gpu-operator v26.3.1
`controllers/clusterpolicy_controller.go` `Reconcile`, `internal/conditions/`): `status.state`
(`ready`, `notReady`, `ignored`: the CRD's enum) and the `Ready` and `Error` conditions, whose
reason says why. The state alone misleads: a failed reconcile after the state was `ready` (the
controller's `init` failing) leaves it `ready`, and `ready` is also what a cluster without GPU nodes
or without NFD labels reports.

Delivered three ways, for however Argo CD is installed: a merge patch of `argocd-cm` (plain
manifests), values of the argo-cd Helm chart (`configs.cm`; a patch would be reverted by the next
`helm upgrade`), and the ArgoCD custom resource's `spec.resourceHealthChecks` (argocd-operator, which
rewrites `argocd-cm` from it), plus the Lua itself.
"""

from __future__ import annotations

import json

from gpuplatform.plan.waves import Plan
from gpuplatform.render.meta import Obj, file_name, order_keys
from gpuplatform.render.runbook_actions import Action

__all__ = [
    "ARGOCD_SETTINGS",
    "CLUSTER_POLICY_HEALTH",
    "CONDITION_HEALTH",
    "HEALTH_CHECK",
    "HEALTH_KEY",
    "INSTALLED_FROM_MANIFESTS",
    "argocd_cm_patch",
    "argocd_cm_step",
    "argocd_settings_files",
    "cluster_policy_health_lua",
]

#: The hand-off folder of the settings Argo CD needs in its own `argocd-cm`.
ARGOCD_SETTINGS = "handoff/argocd"
HEALTH_GROUP, HEALTH_KIND = "nvidia.com", "ClusterPolicy"
HEALTH_KEY = f"resource.customizations.health.{HEALTH_GROUP}_{HEALTH_KIND}"
#: The files of the hand-off besides the `argocd-cm` patch.
HEALTH_CHECK = "clusterpolicy-health.lua"
HELM_VALUES = "argo-cd-values.json"
#: How the runbook names the alternative for an Argo CD from plain manifests (`gpuplatform rehearse`
#: runs that one: its Argo CD is a ConfigMap in a namespace).
INSTALLED_FROM_MANIFESTS = "If Argo CD is installed from plain manifests"
OPERATOR_CHECKS = "argocd-resourcehealthchecks.json"

#: `status.state` of a ClusterPolicy (nvidia.com_clusterpolicies.yaml enum) -> Argo CD health, message.
CLUSTER_POLICY_HEALTH: dict[str, tuple[str, str]] = {
    "ready": ("Healthy", "the GPU Operator reports every enabled operand ready"),
    "notReady": ("Progressing", "the GPU Operator is rolling out its operands or waiting for them"),
    "ignored": ("Degraded", "the GPU Operator ignores this ClusterPolicy: it reconciles only one"),
}
#: The reason of a true `Ready` or `Error` condition that overrides the state (gpu-operator v26.3.1
#: `internal/conditions/consts.go`) -> Argo CD health. `Reconciled` and `OperandNotReady` (a
#: rollout) leave the state's health.
CONDITION_HEALTH: dict[str, str] = {
    "ReconcileFailed": "Degraded",
    "NFDLabelsMissing": "Degraded",
    "NoGPUNodes": "Progressing",
}


def _lua_table(rows: dict[str, str]) -> str:
    return "\n".join(f"  {key} = {value}," for key, value in rows.items())


def cluster_policy_health_lua() -> str:
    """The Lua health check (Lua 5.1, as Argo CD's gopher-lua runs it): `ignored` is Degraded (the
    operator then writes no condition); otherwise the reason of a true `Ready` or `Error` condition
    in `CONDITION_HEALTH` decides, with the condition's message; otherwise the state; no state yet
    is Progressing."""
    states = _lua_table(
        {s: f'{{status = "{h}", message = "{m}"}}' for s, (h, m) in CLUSTER_POLICY_HEALTH.items()}
    )
    reasons = _lua_table({r: f'"{h}"' for r, h in CONDITION_HEALTH.items()})
    return (
        f"local states = {{\n{states}\n}}\n"
        f"local reasons = {{\n{reasons}\n}}\n"
        "local hs = {}\n"
        "local state = nil\n"
        "if obj.status ~= nil then state = obj.status.state end\n"
        'if state ~= "ignored" and obj.status ~= nil and obj.status.conditions ~= nil then\n'
        "  for _, c in ipairs(obj.status.conditions) do\n"
        '    if (c.type == "Ready" or c.type == "Error") and c.status == "True" and reasons[c.reason] ~= nil then\n'
        "      hs.status = reasons[c.reason]\n"
        '      hs.message = c.reason .. ": " .. (c.message or "")\n'
        "      return hs\n"
        "    end\n"
        "  end\n"
        "end\n"
        "if state ~= nil and states[state] ~= nil then\n"
        "  hs.status = states[state].status\n"
        "  hs.message = states[state].message\n"
        "  return hs\n"
        "end\n"
        'hs.status = "Progressing"\n'
        'hs.message = "waiting for the GPU Operator to report status.state"\n'
        "return hs\n"
    )


def _wanted(plan: Plan) -> bool:
    p = plan.platform
    return "argocd" in p.delivery.engines and p.gpu_operator.managed


def argocd_cm_patch(plan: Plan) -> list[Obj]:
    """The merge patch of `argocd-cm` (`kubectl patch configmap argocd-cm --type merge --patch-file F`):
    the ClusterPolicy health check, where Argo CD manages the GPU Operator. No labels: a merge patch
    would add them to Argo CD's own ConfigMap."""
    if not _wanted(plan):
        return []
    return [
        order_keys(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "argocd-cm", "namespace": plan.platform.delivery.argocd_namespace},
                "data": {HEALTH_KEY: cluster_policy_health_lua()},
            }
        )
    ]


def _json(value: object) -> str:
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


def argocd_settings_files(plan: Plan) -> dict[str, str]:
    """The hand-off's text files: the Lua, the argo-cd chart's values (`configs.cm`, argoproj/argo-helm
    argo-cd-10.1.1 `templates/argocd-configs/argocd-cm.yaml` writes each key into `argocd-cm`) and
    the ArgoCD resource's `spec.resourceHealthChecks` entry (argoproj-labs/argocd-operator v0.18.0
    `controllers/argocd/configmap.go` `getResourceHealthChecks` writes it as
    `resource.customizations.health.<group>_<kind>`)."""
    if not _wanted(plan):
        return {}
    lua = cluster_policy_health_lua()
    check = {"group": HEALTH_GROUP, "kind": HEALTH_KIND, "check": lua}
    return {
        f"{ARGOCD_SETTINGS}/{HEALTH_CHECK}": lua,
        f"{ARGOCD_SETTINGS}/{HELM_VALUES}": _json({"configs": {"cm": {HEALTH_KEY: lua}}}),
        f"{ARGOCD_SETTINGS}/{OPERATOR_CHECKS}": _json([check]),
    }


def argocd_cm_step(plan: Plan) -> list[Action]:
    """The runbook's step that adds the check to `argocd-cm` as Argo CD is installed: merged into the
    ConfigMap (never `kubectl apply`: a partial ConfigMap applied would drop the keys its
    last-applied configuration holds and this one lacks), into the Helm release's values, or into
    the ArgoCD resource's list (other checks kept, ours replaced)."""
    d = plan.platform.delivery
    ns = d.argocd_namespace
    merge = (
        f'.spec.resourceHealthChecks = [(.spec.resourceHealthChecks // [])[] | select([.group, .kind] != ["{HEALTH_GROUP}", '
        f'"{HEALTH_KIND}"])] + $checks[0]'
    )
    return [
        Action(
            f"Argo CD: add the GPU Operator ClusterPolicy health check (`{HEALTH_KEY}`) to `argocd-cm`, so the "
            "operator's Application is Healthy only once the operator reports its operands ready, Progressing "
            "during a rollout and Degraded when a reconcile fails or NFD labels are missing (on the cluster "
            "where Argo CD runs), the one way that matches how Argo CD is installed:",
            (),
            (
                Action(
                    f"{INSTALLED_FROM_MANIFESTS} (merged into the ConfigMap):",
                    (
                        f"kubectl -n {ns} patch configmap argocd-cm --type merge --patch-file {ARGOCD_SETTINGS}/{file_name(patch)}",
                    ),
                ),
                Action(
                    "If Argo CD is installed with the argo-cd Helm chart (`<release>`: yours; a patch of the "
                    "ConfigMap would be reverted by the next upgrade):",
                    (
                        f"helm -n {ns} upgrade <release> argo/argo-cd --reuse-values -f {ARGOCD_SETTINGS}/{HELM_VALUES}",
                    ),
                ),
                Action(
                    "If Argo CD is installed by the argocd-operator (its `ArgoCD` resource `<name>`):",
                    (
                        f"kubectl -n {ns} get argocd <name> -o json | jq --slurpfile checks "
                        f"{ARGOCD_SETTINGS}/{OPERATOR_CHECKS} '{merge}' | kubectl replace -f -",
                    ),
                ),
            ),
        )
        for patch in argocd_cm_patch(plan)
    ]
