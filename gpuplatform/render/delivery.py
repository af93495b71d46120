"""Entry points (`delivery/`): what Argo CD or Flux is pointed at, naming the active wave.

Changing `activeWave` changes only these files (and the lock file). Both entry kustomizations
include `delivery/gates/`, the gate Jobs' identity, so it exists before the first PreSync hook.
"""

from __future__ import annotations

from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.meta import Obj, k8s_object
from gpuplatform.render.operators import argocd_application
from gpuplatform.render.tenant_delivery import platform_sync_account

__all__ = ["ARGO_CLUSTER_KINDS", "layer_kustomizations", "render_argocd_entry", "render_flux_entry"]

#: Cluster-scoped kinds the AppProject allows (Nodes only by name, added per pool node).
ARGO_CLUSTER_KINDS = (
    ("", "Namespace"),
    ("resource.k8s.io", "DeviceClass"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
)


def _root(plan: Plan) -> str:
    return f"{plan.platform.delivery.path}/{plan.platform.name}"


def _chart_repos(plan: Plan) -> list[str]:
    p = plan.platform
    repos = [p.dra_driver.chart_repository, p.gpu_operator.chart_repository]
    return sorted({r.removeprefix("oci://") for r in repos if r})


def render_argocd_entry(plan: Plan) -> list[Obj]:
    """AppProject (least privilege) and the Application that syncs `waves/<active>/argocd`."""
    p, state = plan.platform, plan.active
    whitelist = [{"group": "", "kind": "Node", "name": n} for pool in p.node_pools for n in pool.nodes]
    whitelist += [{"group": g, "kind": k} for g, k in ARGO_CLUSTER_KINDS]
    project = k8s_object(
        "argoproj.io/v1alpha1",
        "AppProject",
        p.name,
        wave=state.name,
        namespace=p.delivery.argocd_namespace,
        spec={
            "description": f"GPU platform {p.name}: DRA migration waves rendered by gpuplatform",
            "sourceRepos": [p.delivery.repo_url, *_chart_repos(plan)],
            "destinations": [{"server": p.delivery.cluster_server, "namespace": "*"}],
            "destinationServiceAccounts": [platform_sync_account(p)],
            "clusterResourceWhitelist": whitelist,
        },
    )
    source = {
        "repoURL": p.delivery.repo_url,
        "targetRevision": p.delivery.revision,
        "path": f"{_root(plan)}/waves/{state.dir_name}/argocd",
    }
    app = argocd_application(plan, state.name, p.name, source, p.dra_driver.namespace, 0)
    app["spec"]["syncPolicy"]["syncOptions"] = ["ServerSideApply=true", "PruneLast=true"]
    app["metadata"].pop("annotations")
    return [project, app]


def layer_kustomizations(plan: Plan, state: WaveState, folders: list[str]) -> list[tuple[str, str]]:
    """(Flux Kustomization name suffix, folder inside the wave) in apply order, gates around them."""
    order: list[tuple[str, str]] = [("gates-pre", "50-gates/pre")]
    for folder in folders:
        if not folder.startswith("50-gates"):
            order.append((folder.replace("/", "-"), folder))
    order.append(("gates-post", "50-gates/post"))
    return order


def render_flux_entry(plan: Plan, folders: list[str]) -> list[Obj]:
    """GitRepository and one Kustomization per layer of the active wave, chained by `dependsOn`."""
    p, state = plan.platform, plan.active
    ns = p.delivery.flux_namespace
    source = k8s_object(
        "source.toolkit.fluxcd.io/v1",
        "GitRepository",
        p.name,
        wave=state.name,
        namespace=ns,
        spec={"interval": "1m", "url": p.delivery.repo_url, "ref": {"branch": p.delivery.revision}},
    )
    objects = [source]
    previous: str | None = None
    for suffix, folder in layer_kustomizations(plan, state, folders):
        name = f"{p.name}-{suffix}"
        spec: Obj = {
            "interval": "10m",
            "path": f"./{_root(plan)}/waves/{state.dir_name}/{folder}",
            "prune": True,
            "wait": True,
            "timeout": f"{p.delivery.timeout_minutes}m",
            "sourceRef": {"kind": "GitRepository", "name": p.name},
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
