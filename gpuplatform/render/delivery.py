"""Entry points (`delivery/`): what Argo CD or Flux is pointed at, naming the active wave.

Changing `activeWave` changes only these files (and the lock file). Argo CD's objects live where
Argo CD runs: the AppProject and the entry Applications (`entry_apps`) — the wave and the gate
identity, each deployed to the platform's cluster, and for a remote cluster (`delivery.clusterServer`
is not Argo CD's in-cluster address) the wave's child Applications, kept on Argo CD's own cluster.
A local cluster's wave holds its child Applications itself. Flux's entry is `flux_entry.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

from gpuplatform.charts.facts import RBAC_KINDS
from gpuplatform.model.platform import IN_CLUSTER, SYNC_FAILED_SUBSCRIPTION
from gpuplatform.plan.waves import Plan
from gpuplatform.render.meta import Obj, k8s_object
from gpuplatform.render.nodes import NODES_ROOT
from gpuplatform.render.operators import SYNC_RETRY, HelmChart, argocd_application, helm_charts

__all__ = [
    "APPS_FOLDER",
    "ENTRY_SYNC_OPTIONS",
    "ROOT_PROJECT",
    "SYNC_ACCOUNT",
    "SYNC_FOLDER",
    "ArgoInstalls",
    "EntryApp",
    "TreeFiles",
    "argocd_installs",
    "automated_policy",
    "entry_apps",
    "entry_sync_policy",
    "is_remote",
    "notification_annotations",
    "platform_root",
    "render_app_project",
    "render_argocd_entry",
    "sync_account",
    "wave_installs",
]


#: A remote cluster's wave folder of child Applications (`<platform>-apps` syncs it on Argo CD's cluster).
APPS_FOLDER = "argocd-apps"
TreeFiles = Mapping[str, list[Obj] | str]


def platform_root(plan: Plan) -> str:
    """The platform's folder in the repository (`<delivery.path>/<platform>`)."""
    return f"{plan.platform.delivery.path}/{plan.platform.name}"


def is_remote(plan: Plan) -> bool:
    """Whether Argo CD deploys the platform to another cluster than its own."""
    return plan.platform.delivery.remote


def _group(obj: Obj) -> str:
    api: str = obj["apiVersion"]
    return api.rsplit("/", 1)[0] if "/" in api else ""


@dataclass
class ArgoInstalls:
    """What the platform's Applications install, over every wave: kinds, names, namespaces."""

    cluster: dict[tuple[str, str], set[str] | None] = field(default_factory=dict)
    """Cluster-scoped kinds -> the names installed, or None when a chart installs unnamed ones."""
    namespaced: set[tuple[str, str]] = field(default_factory=set)
    destinations: set[tuple[str, str]] = field(default_factory=set)
    """(server, namespace) pairs objects are applied to."""
    repositories: set[str] = field(default_factory=set)
    objects: set[tuple[str, str, str, bool, str]] = field(default_factory=set)
    """(server, group, kind, namespaced, name or "" for any) of every object, for the sync identity."""
    kept: set[tuple[str, str, str]] = field(default_factory=set)
    """(group, kind, name) of objects Argo CD must never delete (`Delete=false`)."""
    granted: list[Obj] = field(default_factory=list)
    """The rules of every Role and ClusterRole installed, each once."""
    roles: set[tuple[str, str]] = field(default_factory=set)
    """(kind, name) of the roles installed; the name "" when a chart's are unknown."""
    bound: set[tuple[str, str]] = field(default_factory=set)
    """(kind, name) of the roles the installed bindings bind."""

    def grant(self, kind: str, name: str, rules: Iterable[Mapping[str, Any]]) -> None:
        """Record a role the platform installs and the rules it grants."""
        self.roles.add((kind, name))
        for rule in rules:
            if rule not in self.granted:
                self.granted.append(dict(rule))

    def add(self, server: str, group: str, kind: str, namespace: str | None, name: str | None) -> None:
        """Record one object; `name` None: any object of the kind (a chart's)."""
        self.objects.add((server, group, kind, namespace is not None, name or ""))
        if namespace is not None:
            self.namespaced.add((group, kind))
            self.destinations.add((server, namespace))
            return
        key = (group, kind)
        if name is None:
            self.cluster[key] = None
        elif key not in self.cluster:
            self.cluster[key] = {name}
        elif (known := self.cluster[key]) is not None:
            known.add(name)


def wave_installs(plan: Plan, files: TreeFiles) -> ArgoInstalls:
    """What the tree's `waves/` install: the same for every `activeWave`, so a tree rendered for
    several active waves reads it once (`argocd_installs(..., waves=)`)."""
    installs = ArgoInstalls(repositories={plan.platform.delivery.repo_url})
    for prefix in ("waves/", f"{NODES_ROOT}/"):
        _read_objects(installs, plan, files, prefix)
    return installs


def argocd_installs(plan: Plan, files: TreeFiles, waves: ArgoInstalls | None = None) -> ArgoInstalls:
    """Every object the platform's Applications install in any wave: the wave's own objects (child
    Applications on Argo CD's cluster), what each child's chart renders with its values (chart
    facts; CRDs by name), and the gate identity. `waves`: `wave_installs` of the same tree."""
    installs = deepcopy(waves) if waves is not None else wave_installs(plan, files)
    _read_objects(installs, plan, files, "delivery/gates/")
    target = plan.platform.delivery.cluster_server
    for state in plan.waves:
        for chart in helm_charts(plan, state):
            installs.repositories.add(chart.repository.removeprefix("oci://"))
            for kind in chart.facts.installs(chart.values):
                if (kind.group, kind.kind) not in RBAC_KINDS:
                    namespace = chart.namespace if kind.namespaced else None
                    name = kind.name if kind.kind == "CustomResourceDefinition" else None
                    installs.add(target, kind.group, kind.kind, namespace, name)
            grants = chart.facts.rbac(chart.values, chart.release, chart.namespace)
            for role_kind, name, rules in grants.roles:
                installs.add(target, _RBAC, role_kind, _in(chart, role_kind), name or None)
                installs.grant(role_kind, name, rules)
            for binding_kind, name in grants.bindings:
                installs.add(target, _RBAC, binding_kind, _in(chart, binding_kind), name or None)
            installs.bound |= grants.bound
    return installs


def _read_objects(installs: ArgoInstalls, plan: Plan, files: TreeFiles, prefix: str) -> None:
    """Record the objects Argo CD applies from the files under `prefix` (not Flux's, not kustomize's)."""
    target = plan.platform.delivery.cluster_server
    for path, content in files.items():
        if not isinstance(content, list) or not path.startswith(prefix) or "/flux/" in path:
            continue
        for obj in content:
            if obj.get("kind") != "Kustomization":
                server = IN_CLUSTER if _group(obj) == "argoproj.io" else target
                meta = obj["metadata"]
                installs.add(server, _group(obj), obj["kind"], meta.get("namespace"), meta["name"])
                if (_group(obj), obj["kind"]) in RBAC_KINDS and server == target:
                    if "roleRef" in obj:
                        installs.bound.add((obj["roleRef"]["kind"], obj["roleRef"]["name"]))
                    else:
                        installs.grant(obj["kind"], meta["name"], obj.get("rules") or [])
                options = (meta.get("annotations") or {}).get("argocd.argoproj.io/sync-options", "")
                if "Delete=false" in options:
                    installs.kept.add((_group(obj), obj["kind"], meta["name"]))


_RBAC = "rbac.authorization.k8s.io"


def _in(chart: HelmChart, kind: str) -> str | None:
    """The namespace of a chart's RBAC object of `kind`: the release's for Roles and RoleBindings."""
    return chart.namespace if kind in ("Role", "RoleBinding") else None


#: The platform's sync identity on its cluster (`delivery/argocd-sync/cluster/`).
SYNC_ACCOUNT = "gpuplatform-sync"


def sync_account(plan: Plan, server: str) -> str:
    """`namespace:name` of the ServiceAccount Argo CD impersonates on `server`: `gpuplatform-sync`
    on the platform's cluster, `<platform>-sync` in Argo CD's namespace on Argo CD's own cluster."""
    d = plan.platform.delivery
    if server == d.cluster_server:
        return f"{SYNC_ACCOUNT}:{SYNC_ACCOUNT}"
    return f"{d.argocd_namespace}:{plan.platform.name}-sync"


def notification_annotations(plan: Plan) -> dict[str, str]:
    """`delivery.syncFailedNotifications` as AppProject annotations: Argo CD's notifications
    controller merges a project's subscriptions into each of its Applications' (argo-cd v3.5.1
    `notification_controller/controller/controller.go`)."""
    notify = plan.platform.delivery.sync_failed_notifications
    return {SYNC_FAILED_SUBSCRIPTION + service: recipients for service, recipients in sorted(notify.items())}


def render_app_project(plan: Plan, installs: ArgoInstalls) -> Obj:
    """The AppProject: exactly what the Applications install, cluster-scoped objects by name where
    every one is known (Nodes, Namespaces, the tool's own, the charts' CRDs), by kind otherwise.

    `clusterResourceWhitelist[].name` needs Argo CD 3.3+ (versions.ARGOCD_MINIMUM).
    """
    p = plan.platform
    destinations = installs.destinations | {
        (a.server, a.namespace) for a in entry_apps(plan) if not a.project
    }
    whitelist: list[Obj] = []
    for (group, kind), names in sorted(installs.cluster.items()):
        if names is None:
            whitelist.append({"group": group, "kind": kind})
        else:
            whitelist += [{"group": group, "kind": kind, "name": n} for n in sorted(names)]
    return k8s_object(
        "argoproj.io/v1alpha1",
        "AppProject",
        p.name,
        wave=plan.active.name,
        namespace=p.delivery.argocd_namespace,
        annotations=notification_annotations(plan),
        spec={
            "description": f"GPU platform {p.name}: DRA migration waves rendered by gpuplatform",
            "sourceRepos": sorted(installs.repositories),
            "destinations": [{"server": s, "namespace": n} for s, n in sorted(destinations)],
            "destinationServiceAccounts": [
                {"server": server, "namespace": "*", "defaultServiceAccount": sync_account(plan, server)}
                for server in sorted({s for s, _ in destinations})
            ],
            "clusterResourceWhitelist": whitelist,
            "namespaceResourceWhitelist": [{"group": g, "kind": k} for g, k in sorted(installs.namespaced)],
        },
    )


#: The project of the root Application and of what must be applied with more than the platform's
#: own rights (its sync identity): Argo CD's built-in `default` (argo-cd v3.5.1
#: docs/operator-manual/cluster-bootstrapping.md creates the parent app there).
ROOT_PROJECT = "default"
#: The platform's sync identity folder (`render/sync_identity.py`).
SYNC_FOLDER = "delivery/argocd-sync"


@dataclass(frozen=True)
class EntryApp:
    """One Application of the Argo CD entry (also generated by the stack's ApplicationSets)."""

    name: str
    path: str
    """Folder inside the platform's root."""
    server: str
    namespace: str
    automated: bool = True
    project: str = ""
    """Its AppProject; empty: the platform's."""


#: The entry Applications' sync options: server-side apply, prune only after everything applied.
ENTRY_SYNC_OPTIONS = ["ServerSideApply=true", "PruneLast=true"]


def automated_policy(plan: Plan | None) -> Obj:
    """`syncPolicy.automated` of the platform's automated Applications: prune and selfHeal as
    `delivery.argocdPrune` and `delivery.argocdSelfHeal` say (both on by default; None: both on)."""
    if plan is None:
        return {"prune": True, "selfHeal": True}
    d = plan.platform.delivery
    return {"prune": d.argocd_prune, "selfHeal": d.argocd_self_heal}


def entry_sync_policy(automated: Obj | None) -> Obj:
    """An entry Application's `syncPolicy`, the same whether the entry or an ApplicationSet renders it:
    automated ones (`automated`, from `automated_policy`) retry without limit (`operators.SYNC_RETRY`)."""
    sync: Obj = {"syncOptions": list(ENTRY_SYNC_OPTIONS)}
    if automated is not None:
        sync = {"automated": dict(automated), **sync, "retry": dict(SYNC_RETRY)}
    return sync


def entry_apps(plan: Plan) -> list[EntryApp]:
    """The platform's wave (on its cluster, its default namespace the gates': every wave has it, the
    DRA driver's does not exist before the driver), its gate identity (on its cluster: the PreSync
    gates run as it; the Job controller retries the pod until it exists), its sync identity
    (`delivery/argocd-sync/`, in the root's project: an identity cannot grant itself rights, so it
    is applied with more than its own, and re-applied whenever the spec changes what it may touch)
    and, for a remote cluster, the wave's child Applications (on Argo CD's cluster) and the sync
    identity there. Argo CD orders no two Applications, so remote child Applications sync by hand,
    after the wave's pre-transition gates passed."""
    p = plan.platform
    d = p.delivery
    wave = f"waves/{plan.active.dir_name}"
    sync_namespace = sync_account(plan, d.cluster_server).split(":")[0]
    apps = [
        EntryApp(p.name, f"{wave}/argocd", d.cluster_server, d.gates_namespace),
        EntryApp(f"{p.name}-gates", "delivery/gates", d.cluster_server, d.gates_namespace),
        EntryApp(
            f"{p.name}-sync", f"{SYNC_FOLDER}/cluster", d.cluster_server, sync_namespace, project=ROOT_PROJECT
        ),
    ]
    if is_remote(plan):
        apps += [
            EntryApp(f"{p.name}-apps", f"{wave}/{APPS_FOLDER}", IN_CLUSTER, d.argocd_namespace, False),
            EntryApp(
                f"{p.name}-sync-argocd",
                f"{SYNC_FOLDER}/argocd",
                IN_CLUSTER,
                d.argocd_namespace,
                project=ROOT_PROJECT,
            ),
        ]
    return apps


def render_argocd_entry(plan: Plan, installs: ArgoInstalls) -> list[Obj]:
    """The AppProject and the entry Applications of the active wave (`entry_apps`)."""
    d = plan.platform.delivery
    objects = [render_app_project(plan, installs)]
    for entry in entry_apps(plan):
        source = {
            "repoURL": d.repo_url,
            "targetRevision": d.revision,
            "path": f"{platform_root(plan)}/{entry.path}",
        }
        app = argocd_application(
            plan,
            plan.active.name,
            entry.name,
            source,
            {"server": entry.server, "namespace": entry.namespace},
            automated=entry.automated,
        )
        app["spec"]["project"] = entry.project or plan.platform.name
        app["spec"]["syncPolicy"] = entry_sync_policy(automated_policy(plan) if entry.automated else None)
        objects.append(app)
    return objects
