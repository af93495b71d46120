"""The identities Argo CD syncs the platform as, once impersonation is on (`delivery/argocd-sync/`).

With `application.sync.impersonation.enabled`, the controller syncs each Application as the
ServiceAccount its AppProject's `destinationServiceAccounts` names for the destination, on the
destination cluster, impersonated with the cluster Secret's credentials (argo-cd v3.5.1
`controller/sync.go`, `util/settings/impersonation.go` `DeriveServiceAccountToImpersonate`). So
each destination cluster needs that ServiceAccount, allowed exactly what the platform's
Applications sync there, before the first sync. An identity cannot grant itself what it lacks, so
these folders are synced by the entry's `<platform>-sync` Applications in the root's project
(`delivery.entry_apps`): `cluster/` to the platform's cluster, `argocd/` to Argo CD's when the
platform is remote, re-applied whenever the spec changes what they may touch.

RBAC is derived from what the AppProject permits (`delivery.argocd_installs`): a known object is
granted by name, Nodes are patched only (never created or deleted), and nothing marked
`Delete=false` may be deleted. The identity has no `escalate` and no `bind` but on named roles: the
API server lets it write a role only when it holds every rule of it, and bind a role only when it
holds the role's rules or may `bind` that role by name (Kubernetes RBAC, "Privilege escalation
prevention and bootstrapping"; k8s.io/kubernetes v1.36.3 pkg/registry/rbac/escalation_check.go). So
it holds the rules of every role the platform installs (the tree's, and the charts' from their facts,
`charts.facts.ChartFacts.rbac`) and may bind only the roles the tree binds without installing them.
Like every namespaced kind it may write, a Role's rules are held cluster-wide: the AppProject's
destinations keep Argo CD to the platform's namespaces.
"""

from __future__ import annotations

from gpuplatform.model.platform import IN_CLUSTER
from gpuplatform.plan.waves import Plan
from gpuplatform.render.delivery import (
    SYNC_ACCOUNT,
    SYNC_FOLDER,
    ArgoInstalls,
    is_remote,
    sync_account,
)
from gpuplatform.render.meta import NEVER_DELETE_ANNOTATIONS, Obj, k8s_object

__all__ = ["SYNC_FOLDER", "held_rules", "plural", "render_sync_identity"]

_RBAC = "rbac.authorization.k8s.io"
_READ = ["get", "list", "watch"]
_WRITE = ["create", "update", "patch", "delete"]
#: The identity of a cluster Secret made by `argocd cluster add` (argo-cd v3.5.1
#: util/clusterauth/clusterauth.go `ArgoCDManagerServiceAccount`, in kube-system).
CLUSTER_ADD_ACCOUNT = ("kube-system", "argocd-manager")


def plural(kind: str) -> str:
    """The resource of a kind, as the API server names it by default (k8s.io/apimachinery
    pkg/api/meta/restmapper.go `UnsafeGuessKindToResource`)."""
    lower = kind.lower()
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + "s"


def _rules(installs: ArgoInstalls, server: str) -> list[Obj]:
    """One rule per (kind, verbs): by name where every object of the kind is known."""
    kinds: dict[tuple[str, str], set[str]] = {}
    for srv, group, kind, _namespaced, name in installs.objects:
        if srv == server:
            kinds.setdefault((group, kind), set()).add(name)
    rules: list[Obj] = []
    for (group, kind), names in sorted(kinds.items()):
        resource = {"apiGroups": [group], "resources": [plural(kind)]}
        if "" in names:
            rules.append({**resource, "verbs": _READ + _WRITE})
            continue
        deletable = sorted(n for n in names if (group, kind, n) not in installs.kept)
        if kind == "Node":
            rules.append({**resource, "verbs": ["list", "watch"]})
            rules.append({**resource, "resourceNames": sorted(names), "verbs": ["get", "patch"]})
            continue
        rules.append({**resource, "verbs": ["list", "watch", "create"]})
        every = deletable == sorted(names)
        by_name = ["get", "update", "patch", *(["delete"] if every else [])]
        rules.append({**resource, "resourceNames": sorted(names), "verbs": by_name})
        if deletable and not every:
            rules.append({**resource, "resourceNames": deletable, "verbs": ["delete"]})
    return rules


def held_rules(installs: ArgoInstalls) -> list[Obj]:
    """What the identity must hold to write and bind the platform's roles: their rules, and `bind` on
    each role a binding names that the platform does not install (a role's `bind` is checked on the
    role a binding names; Kubernetes RBAC, "Restrictions on role binding creation or update")."""
    rules = list(installs.granted)
    for kind in ("ClusterRole", "Role"):
        names = sorted(n for k, n in installs.bound - installs.roles if k == kind and n)
        if names:
            resource = plural(kind)
            rules.append(
                {"apiGroups": [_RBAC], "resources": [resource], "resourceNames": names, "verbs": ["bind"]}
            )
    return rules


def _account(wave: str, namespace: str, name: str) -> Obj:
    return k8s_object("v1", "ServiceAccount", name, wave=wave, namespace=namespace)


def _binding(
    kind: str, name: str, wave: str, namespace: str | None, subject: tuple[str, str], role: str
) -> Obj:
    role_kind = "ClusterRole" if kind == "ClusterRoleBinding" else "Role"
    obj = k8s_object("rbac.authorization.k8s.io/v1", kind, name, wave=wave, namespace=namespace)
    obj["subjects"] = [{"kind": "ServiceAccount", "namespace": subject[0], "name": subject[1]}]
    obj["roleRef"] = {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role}
    return obj


def _role(kind: str, name: str, wave: str, namespace: str | None, rules: list[Obj]) -> Obj:
    obj = k8s_object("rbac.authorization.k8s.io/v1", kind, name, wave=wave, namespace=namespace)
    obj["rules"] = rules
    return obj


def _impersonator(wave: str, namespace: str, account: str, controller: tuple[str, str]) -> list[Obj]:
    """Who may sync as `account`: the controller's identity on that cluster, by name."""
    name = f"{account}-impersonator"
    rule = {
        "apiGroups": [""],
        "resources": ["serviceaccounts"],
        "resourceNames": [account],
        "verbs": ["impersonate"],
    }
    return [
        _role("Role", name, wave, namespace, [rule]),
        _binding("RoleBinding", name, wave, namespace, controller, name),
    ]


def render_sync_identity(plan: Plan, installs: ArgoInstalls) -> dict[str, list[Obj]]:
    """Folder -> objects: the sync identity of each destination cluster of the platform's AppProject."""
    p = plan.platform
    d = p.delivery
    wave = plan.active.name
    controller = CLUSTER_ADD_ACCOUNT if is_remote(plan) else (d.argocd_namespace, d.argocd_service_account)
    ns_name, account = sync_account(plan, d.cluster_server).split(":")
    cluster = [
        k8s_object("v1", "Namespace", ns_name, wave=wave, annotations=dict(NEVER_DELETE_ANNOTATIONS)),
        _account(wave, ns_name, account),
        _role(
            "ClusterRole", SYNC_ACCOUNT, wave, None, _rules(installs, d.cluster_server) + held_rules(installs)
        ),
        _binding("ClusterRoleBinding", SYNC_ACCOUNT, wave, None, (ns_name, account), SYNC_ACCOUNT),
        *_impersonator(wave, ns_name, account, controller),
    ]
    folders = {f"{SYNC_FOLDER}/cluster": cluster}
    if is_remote(plan):
        ns, name = sync_account(plan, IN_CLUSTER).split(":")
        own = (d.argocd_namespace, d.argocd_service_account)
        folders[f"{SYNC_FOLDER}/argocd"] = [
            _account(wave, ns, name),
            _role("Role", name, wave, ns, _rules(installs, IN_CLUSTER)),
            _binding("RoleBinding", name, wave, ns, (ns, name), name),
            *_impersonator(wave, ns, name, own),
        ]
    return folders
