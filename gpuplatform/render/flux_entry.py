"""Flux's entry points: the layer chain in `delivery/flux/` and the one Kustomization a cluster's
`flux bootstrap` folder holds to reach it.

`flux bootstrap --path clusters/<name>` writes `clusters/<name>/flux-system/` (gotk-components.yaml,
gotk-sync.yaml, kustomization.yaml: fluxcd/flux2 v2.9.4 pkg/manifestgen/install/install.go,
pkg/manifestgen/sync/sync.go, pkg/manifestgen/kustomization/kustomization.go): a GitRepository and
a Kustomization, both named as its namespace (cmd/flux/bootstrap_git.go `Name: Namespace`), that
apply `./clusters/<name>`. The platform's entry (`render_cluster_entry`) is one more file there;
`synth` writes only under `<delivery.path>/<platform>/`, so neither ever writes the other's files.
A platform with its own GitRepository (`delivery.fluxGitRepository`, e.g. a staging branch) has it
in that file too: the entry reads it, so it must exist before the entry, not come from the folder
the entry applies.
"""

from __future__ import annotations

from gpuplatform.plan.sync_order import SYNC_UNITS, unit_of_folder
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, k8s_object
from gpuplatform.render.rollout import driver_timeout_minutes

__all__ = [
    "HELM_ACCOUNT",
    "KUSTOMIZE_ACCOUNT",
    "RETRY_INTERVAL",
    "flux_source",
    "layer_kustomizations",
    "render_cluster_entry",
    "render_cluster_source",
    "render_flux_entry",
]

#: How soon a Kustomization that failed (a gate still waiting, a health check timed out) is
#: reconciled again; unset, kustomize-controller waits a whole `interval` (10m: kustomization_types.go
#: `GetRetryInterval`, fluxcd/kustomize-controller v1.9.4).
RETRY_INTERVAL = "1m"


def flux_source(plan: Plan) -> str:
    """The GitRepository the Kustomizations read: `delivery.fluxGitRepository` when the tool renders
    one, else bootstrap's, which is named as Flux's namespace."""
    d = plan.platform.delivery
    return d.flux_git_repository or d.flux_namespace


def layer_kustomizations(plan: Plan, state: WaveState, folders: list[str]) -> list[tuple[str, str]]:
    """(Flux Kustomization name suffix, folder inside the wave) in the order of `SYNC_UNITS`.

    A unit's engine subfolder (`00-operators/flux`) follows the unit; the gates keep their names.
    """
    rank = {u.id: i for i, u in enumerate(SYNC_UNITS)}
    found = [f for f in folders if not f.startswith("50-gates")] + ["50-gates/pre", "50-gates/post"]
    ordered = sorted(found, key=lambda f: (rank[unit_of_folder(f).id], f))
    names = {"50-gates/pre": "gates-pre", "50-gates/post": "gates-post"}
    return [(names.get(f, f.replace("/", "-")), f) for f in ordered]


def _source_ref(plan: Plan) -> Obj:
    return {"kind": "GitRepository", "name": flux_source(plan)}


#: The accounts the platform's Kustomizations and HelmReleases reconcile as, named in
#: `spec.serviceAccountName` so they keep working under Flux's multi-tenancy lockdown
#: (`--default-service-account`: an object naming none impersonates that account of its own
#: namespace; fluxcd/kustomize-controller v1.7.0 docs/spec/v1/kustomizations.md "Enforcing
#: impersonation"): the controllers' own, which Flux's install binds to cluster-admin
#: (fluxcd/flux2 v2.9.4 manifests/rbac/reconciler.yaml `cluster-reconciler`), as a platform admin's
#: objects in Flux's namespace are.
KUSTOMIZE_ACCOUNT = "kustomize-controller"
HELM_ACCOUNT = "helm-controller"


def _timeout(plan: Plan, folder: str) -> int:
    """Minutes a layer may take: the releases' folder waits for the DRA driver's whole rollout."""
    minutes = plan.platform.delivery.timeout_minutes
    if folder == "00-operators/flux" and plan.active.driver_installed:
        return max(minutes, driver_timeout_minutes(plan, plan.active))
    return minutes


def render_flux_entry(plan: Plan, folders: list[str]) -> list[Obj]:
    """One Kustomization per layer of the active wave, chained by `dependsOn`, each reading
    `flux_source` (the platform's own GitRepository is in the cluster entry, not here)."""
    p, state = plan.platform, plan.active
    ns = p.delivery.flux_namespace
    objects: list[Obj] = []
    previous: str | None = None
    for suffix, folder in layer_kustomizations(plan, state, folders):
        name = f"{p.name}-{suffix}"
        spec: Obj = {
            "interval": "10m",
            "retryInterval": RETRY_INTERVAL,
            "path": f"./{p.delivery.path}/{p.name}/waves/{state.dir_name}/{folder}",
            "prune": p.delivery.flux_prune,
            "wait": True,
            "timeout": f"{_timeout(plan, folder)}m",
            "serviceAccountName": KUSTOMIZE_ACCOUNT,
            "sourceRef": _source_ref(plan),
        }
        if previous is not None:
            spec["dependsOn"] = [{"name": previous}]
        objects.append(
            k8s_object(
                "kustomize.toolkit.fluxcd.io/v1",
                "Kustomization",
                name,
                wave=state.name,
                namespace=ns,
                spec=spec,
            )
        )
        previous = name
    return objects


def render_cluster_source(plan: Plan) -> Obj | None:
    """The GitRepository `delivery.fluxGitRepository` names, following `delivery.revision`
    (`ref.branch`), for `clusters/<name>/` beside the entry; None when the platform reads bootstrap's."""
    d = plan.platform.delivery
    if d.flux_git_repository is None:
        return None
    spec = {"interval": "1m", "url": d.repo_url, "ref": {"branch": d.revision}}
    return k8s_object(
        "source.toolkit.fluxcd.io/v1",
        "GitRepository",
        d.flux_git_repository,
        wave=None,
        namespace=d.flux_namespace,
        spec=spec,
    )


def render_cluster_entry(plan: Plan) -> Obj:
    """The Kustomization `<platform>` for `clusters/<name>/`: applies `delivery/flux/` (the chain
    and the gate identity) from `flux_source`. It names no wave, so it never changes when
    `activeWave` does; it does not wait, the chain it applies does."""
    p = plan.platform
    return k8s_object(
        "kustomize.toolkit.fluxcd.io/v1",
        "Kustomization",
        p.name,
        wave=None,
        namespace=p.delivery.flux_namespace,
        spec={
            "interval": "10m",
            "retryInterval": RETRY_INTERVAL,
            "path": f"./{p.delivery.path}/{p.name}/delivery/flux",
            "prune": True,
            "serviceAccountName": KUSTOMIZE_ACCOUNT,
            "sourceRef": _source_ref(plan),
        },
    )
