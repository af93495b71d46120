"""Argo CD settings the platform needs in `argocd-cm`, handed off as a merge patch (Argo CD's own object).

The GPU Operator's ClusterPolicy has no built-in health check (argo-cd v3.5.1 has no
`resource_customizations/nvidia.com/`), so Argo CD calls it Healthy as soon as it exists, whatever
the operator reports. A Lua health check (`resource.customizations.health.nvidia.com_ClusterPolicy`,
argo-cd docs/operator-manual/health.md) reads `status.state`, whose values are the CRD's enum.
"""

from __future__ import annotations

from gpuplatform.plan.waves import Plan
from gpuplatform.render.meta import Obj, file_name, order_keys
from gpuplatform.render.runbook_actions import Action

__all__ = [
    "ARGOCD_SETTINGS",
    "CLUSTER_POLICY_HEALTH",
    "HEALTH_KEY",
    "argocd_cm_patch",
    "argocd_cm_step",
    "cluster_policy_health_lua",
]

#: The hand-off folder of the settings Argo CD needs in its own `argocd-cm`.
ARGOCD_SETTINGS = "handoff/argocd"

HEALTH_KEY = "resource.customizations.health.nvidia.com_ClusterPolicy"
#: `status.state` of a ClusterPolicy (nvidia.com_clusterpolicies.yaml enum) -> Argo CD health, message.
CLUSTER_POLICY_HEALTH: dict[str, tuple[str, str]] = {
    "ready": ("Healthy", "the GPU Operator reports every enabled operand ready"),
    "notReady": ("Progressing", "the GPU Operator is rolling out its operands or waiting for them"),
    "ignored": ("Degraded", "the GPU Operator ignores this ClusterPolicy: it reconciles only one"),
}


def cluster_policy_health_lua() -> str:
    """The Lua health check: each `status.state` to its health; no state yet is Progressing."""
    rows = "\n".join(
        f'  {state} = {{status = "{health}", message = "{message}"}},'
        for state, (health, message) in CLUSTER_POLICY_HEALTH.items()
    )
    return (
        "local states = {\n"
        f"{rows}\n"
        "}\n"
        "hs = {}\n"
        "if obj.status ~= nil and obj.status.state ~= nil and states[obj.status.state] ~= nil then\n"
        "  hs.status = states[obj.status.state].status\n"
        "  hs.message = states[obj.status.state].message\n"
        "  return hs\n"
        "end\n"
        'hs.status = "Progressing"\n'
        'hs.message = "waiting for the GPU Operator to report status.state"\n'
        "return hs\n"
    )


def argocd_cm_patch(plan: Plan) -> list[Obj]:
    """The merge patch of `argocd-cm` (`kubectl patch configmap argocd-cm --type merge --patch-file F`):
    the ClusterPolicy health check, where Argo CD manages the GPU Operator. No labels: a merge patch
    would add them to Argo CD's own ConfigMap."""
    p = plan.platform
    if "argocd" not in p.delivery.engines or not p.gpu_operator.managed:
        return []
    return [
        order_keys(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "argocd-cm", "namespace": p.delivery.argocd_namespace},
                "data": {HEALTH_KEY: cluster_policy_health_lua()},
            }
        )
    ]


def argocd_cm_step(plan: Plan) -> list[Action]:
    """The runbook's step that merges the patch into `argocd-cm` (never `kubectl apply`: a partial
    ConfigMap applied would drop the keys its last-applied configuration holds and this one lacks)."""
    d = plan.platform.delivery
    return [
        Action(
            f"Argo CD: add the GPU Operator ClusterPolicy health check (`{HEALTH_KEY}`) to `argocd-cm`, so the "
            "operator's Application is Healthy only once the operator reports `status.state: ready` (on the cluster "
            "where Argo CD runs):",
            (
                f"kubectl -n {d.argocd_namespace} patch configmap argocd-cm --type merge "
                f"--patch-file {ARGOCD_SETTINGS}/{file_name(patch)}",
            ),
        )
        for patch in argocd_cm_patch(plan)
    ]
