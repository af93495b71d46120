"""Tenant GitOps identities: what a tenant's Argo CD Applications and Flux Kustomizations run as.

The shared controller identities (`argocd-application-controller`, Flux's `kustomize-controller`)
apply for every team; the tenant admission policies exempt neither of them, so a tenant that ships
through GitOps is checked like one that uses kubectl. Per tenant (`tenants[].gitops`):

- a ServiceAccount in the tenant namespace, bound to the `gpu-claim-deployer` Role and to the
  ClusterRoles the spec lists (inside the namespace only);
- Argo CD: an AppProject `<platform>-<tenant>` (filed under the tenant's folder) whose only destination is the tenant namespace and
  whose `destinationServiceAccounts` maps it to that ServiceAccount. The controller then syncs the
  project's Applications impersonating it (argoproj/argo-cd `controller/sync.go`, from
  `versions.ARGOCD_IMPERSONATION_SINCE`, when `argocd-cm` sets `versions.ARGOCD_IMPERSONATION_FLAG`);
  no cluster-scoped kind is allowed, nor the namespace's ResourceQuota and LimitRange;
- Flux: the tenant's Kustomizations name the ServiceAccount in `spec.serviceAccountName`; the
  controller impersonates `system:serviceaccount:<kustomization namespace>:<name>`, or the
  `--default-service-account` when none is named (fluxcd/kustomize-controller v1.9.4
  `internal/controller/kustomization_controller.go`, fluxcd/pkg `runtime/client/impersonator.go`).
"""

from __future__ import annotations

from gpuplatform.labels import TENANT_NAMESPACE_LABEL
from gpuplatform.model.tenants import Tenant
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, k8s_object
from gpuplatform.render.tenants import CLAIM_VERBS, claim_role, role_binding, tenant_labels
from gpuplatform.versions import ARGOCD_IMPERSONATION_FLAG, ARGOCD_IMPERSONATION_SINCE

__all__ = [
    "CLAIM_DEPLOYER_ROLE",
    "DEPLOYER_VERBS",
    "render_tenant_delivery",
    "tenant_project_name",
]

CLAIM_DEPLOYER_ROLE = "gpu-claim-deployer"
#: `patch`: Argo CD and Flux apply by PATCH (server-side apply; Flux dry-runs one on every
#: reconcile), and a dry run needs the verb too. The spec cannot change (immutable); the
#: tenant policy refuses a patch that drops the delete-protection finalizer of an allocated claim.
DEPLOYER_VERBS = (*CLAIM_VERBS, "patch")
#: Namespaced kinds a tenant's Applications may never manage: the platform's own guardrails.
PLATFORM_OWNED_KINDS = (("", "LimitRange"), ("", "ResourceQuota"))


def tenant_project_name(platform: str, tenant: Tenant) -> str:
    """The tenant's Argo CD AppProject (`<platform>-<tenant>`)."""
    return f"{platform}-{tenant.name}"


def _identity(tenant: Tenant, wave: str) -> list[Obj]:
    g = tenant.gitops
    account = {"kind": "ServiceAccount", "name": g.service_account, "namespace": tenant.ns}
    objects = [
        k8s_object("v1", "ServiceAccount", g.service_account, wave=wave, namespace=tenant.ns),
        claim_role(CLAIM_DEPLOYER_ROLE, tenant.ns, wave, DEPLOYER_VERBS),
        role_binding(CLAIM_DEPLOYER_ROLE, tenant.ns, wave, [account], "Role", CLAIM_DEPLOYER_ROLE),
    ]
    objects += [
        role_binding(f"{g.service_account}-{role}", tenant.ns, wave, [account], "ClusterRole", role)
        for role in sorted(set(g.cluster_roles))
    ]
    return objects


def _project(plan: Plan, tenant: Tenant, wave: str) -> Obj:
    p = plan.platform
    server = p.delivery.cluster_server
    return k8s_object(
        "argoproj.io/v1alpha1",
        "AppProject",
        tenant_project_name(p.name, tenant),
        wave=wave,
        namespace=p.delivery.argocd_namespace,
        labels={**tenant_labels(tenant), TENANT_NAMESPACE_LABEL: tenant.ns},
        spec={
            "description": (
                f"Tenant {tenant.name}: Applications sync as {tenant.ns}:{tenant.gitops.service_account} "
                f"(Argo CD >= {ARGOCD_IMPERSONATION_SINCE} with {ARGOCD_IMPERSONATION_FLAG}: 'true')"
            ),
            "sourceRepos": list(tenant.gitops.source_repos),
            "destinations": [{"server": server, "namespace": tenant.ns}],
            "destinationServiceAccounts": [
                {
                    "server": server,
                    "namespace": tenant.ns,
                    "defaultServiceAccount": f"{tenant.ns}:{tenant.gitops.service_account}",
                }
            ],
            "clusterResourceWhitelist": [],
            "namespaceResourceBlacklist": [{"group": g, "kind": k} for g, k in PLATFORM_OWNED_KINDS],
        },
    )


def render_tenant_delivery(plan: Plan, state: WaveState) -> list[Obj]:
    """Every enabled tenant's GitOps identity, and its AppProject when Argo CD delivers."""
    p = plan.platform
    objects: list[Obj] = []
    for tenant in p.tenants:
        if tenant.name not in state.tenants or not tenant.gitops.enabled:
            continue
        objects += _identity(tenant, state.name)
        if "argocd" in p.delivery.engines:
            objects.append(_project(plan, tenant, state.name))
    return objects
