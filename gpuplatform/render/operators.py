"""Layer 00-operators: the GPU Operator and NVIDIA DRA driver Helm releases, for Flux and Argo CD.

The values are the same data for both engines (`helm_values.py`); Flux gets a HelmRepository and
a HelmRelease, Argo CD an Application with a Helm source. Both live in engine folders that only
that engine's entry point includes; the driver's Namespace is engine-neutral.
"""

from __future__ import annotations

from typing import Any

from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.helm_values import dra_driver_values, gpu_operator_values
from gpuplatform.render.meta import Obj, k8s_object, order_keys
from gpuplatform.versions import CHART_BRIDGE_SINCE, dra_driver_at_least, parse_release

__all__ = [
    "CHART_BRIDGE_PATCH",
    "DRA_CHART",
    "GPU_OPERATOR_CHART",
    "HelmChart",
    "argocd_application",
    "argocd_wrappers",
    "chart_class_patches",
    "render_operators",
]

DRA_CHART = "dra-driver-nvidia-gpu"
GPU_OPERATOR_CHART = "gpu-operator"
IN_CLUSTER = "https://kubernetes.default.svc"
#: Argo CD retries a failed automated sync only `retry.limit` times (5 when unset) and then never
#: again for the same commit (argo-cd v3.5.1 controller/appcontroller.go `autoSync`,
#: `alreadyAttemptedSync`). A blocking gate that fails because the operator has not yet released
#: the claims must be retried until it holds: unlimited, backing off to 5 minutes.
#: Deleting a child Application deletes what it installed only with this finalizer; without it the
#: release is orphaned (argo-cd v3.5.1 docs/user-guide/app_deletion.md, controller `finalizeApplicationDeletion`).
RESOURCES_FINALIZER = "resources-finalizer.argocd.argoproj.io"
SYNC_RETRY = {"limit": -1, "backoff": {"duration": "30s", "factor": 2, "maxDuration": "5m"}}


class HelmChart:
    """One chart release: where the chart comes from, where it goes, with which values."""

    def __init__(
        self, release: str, chart: str, version: str, repository: str, namespace: str, values: Obj
    ) -> None:
        self.release, self.chart, self.version = release, chart, version
        self.repository, self.namespace, self.values = repository, namespace, values

    @property
    def oci(self) -> bool:
        return self.repository.startswith("oci://")


#: The chart's own `gpu.nvidia.com` class serves `nvidia.com/gpu` from chart 25.12.0 (templates/
#: deviceclass-gpu.yaml, whenever the resource API is v1, which the values pin); no value turns it off.
#: Until the wave that names it as the bridge (`source: chart`), this post-render patch removes it,
#: so no unmigrated `nvidia.com/gpu` pod can land on a DRA node before the bridge wave.
CHART_BRIDGE_PATCH: Obj = {
    "target": {"kind": "DeviceClass", "name": "gpu.nvidia.com"},
    "patch": "- op: remove\n  path: /spec/extendedResourceName\n",
}


def chart_class_patches(plan: Plan, state: WaveState) -> list[Obj]:
    """The post-render patches of the DRA driver release in this wave."""
    p = plan.platform
    if not dra_driver_at_least(parse_release(p.dra_driver.chart_version), CHART_BRIDGE_SINCE):
        return []
    if any(b.source == "chart" for b in p.bridges if b.name in state.bridges):
        return []
    return [dict(CHART_BRIDGE_PATCH)]


def argocd_wrapped(plan: Plan) -> bool:
    """Argo CD renders the DRA driver chart through a kustomization (its class needs a patch)."""
    return dra_driver_at_least(parse_release(plan.platform.dra_driver.chart_version), CHART_BRIDGE_SINCE)


def _charts(plan: Plan, state: WaveState) -> list[HelmChart]:
    p = plan.platform
    charts = []
    if p.gpu_operator.chart_repository:
        charts.append(
            HelmChart(
                "gpu-operator",
                GPU_OPERATOR_CHART,
                f"v{p.gpu_operator.version}",
                p.gpu_operator.chart_repository,
                p.gpu_operator.namespace,
                gpu_operator_values(plan, state),
            )
        )
    if state.driver_installed:
        d = p.dra_driver
        charts.append(
            HelmChart(
                DRA_CHART,
                DRA_CHART,
                d.chart_version,
                d.chart_repository,
                d.namespace,
                dra_driver_values(plan),
            )
        )
    return charts


def _flux(plan: Plan, state: WaveState, chart: HelmChart) -> list[Obj]:
    ns = plan.platform.delivery.flux_namespace
    source_spec: dict[str, Any] = {"interval": "1h", "url": chart.repository}
    if chart.oci:
        source_spec["type"] = "oci"
    source = k8s_object(
        "source.toolkit.fluxcd.io/v1",
        "HelmRepository",
        chart.release,
        wave=state.name,
        namespace=ns,
        spec=source_spec,
    )
    release = k8s_object(
        "helm.toolkit.fluxcd.io/v2",
        "HelmRelease",
        chart.release,
        wave=state.name,
        namespace=ns,
        spec={
            "interval": "10m",
            "releaseName": chart.release,
            "targetNamespace": chart.namespace,
            "chart": {
                "spec": {
                    "chart": chart.chart,
                    "version": chart.version,
                    "sourceRef": {"kind": "HelmRepository", "name": chart.release, "namespace": ns},
                }
            },
            "install": {"crds": "CreateReplace", "remediation": {"retries": 3}},
            "upgrade": {"crds": "CreateReplace", "remediation": {"retries": 3}},
            "values": chart.values,
        },
    )
    patches = chart_class_patches(plan, state) if chart.chart == DRA_CHART else []
    if patches:
        release["spec"]["postRenderers"] = [{"kustomize": {"patches": patches}}]
    return [source, release]


def argocd_application(plan: Plan, wave: str, name: str, source: Obj, namespace: str, sync_wave: int) -> Obj:
    """An Argo CD Application of the platform's project, automated with prune and self-heal."""
    p = plan.platform
    app = k8s_object(
        "argoproj.io/v1alpha1",
        "Application",
        name,
        wave=wave,
        namespace=p.delivery.argocd_namespace,
        annotations={"argocd.argoproj.io/sync-wave": str(sync_wave)},
        spec={
            "project": p.name,
            "source": source,
            "destination": {"server": p.delivery.cluster_server, "namespace": namespace},
            "syncPolicy": {
                "automated": {"prune": True, "selfHeal": True},
                "syncOptions": ["CreateNamespace=false", "ServerSideApply=true"],
                "retry": dict(SYNC_RETRY),
            },
        },
    )
    app["metadata"]["finalizers"] = [RESOURCES_FINALIZER]
    return order_keys(app)


def wrapper_folder(plan: Plan, state: WaveState) -> str:
    """The folder (in the tree) of the DRA driver's kustomize wrapper for Argo CD."""
    return f"waves/{state.dir_name}/00-operators/argocd/{DRA_CHART}"


def argocd_wrappers(plan: Plan, state: WaveState) -> dict[str, Obj]:
    """Folder -> kustomization that renders the DRA driver chart with its post-render patches.

    Argo CD has no post-renderer for a Helm source; a kustomize source with `helmCharts` and
    `patches` is its equivalent (argo-cd v3.5.1 docs/user-guide/kustomize.md: needs
    `kustomize.buildOptions: --enable-helm` in argocd-cm).
    """
    p = plan.platform
    if not state.driver_installed or "argocd" not in p.delivery.engines or not argocd_wrapped(plan):
        return {}
    d = p.dra_driver
    chart = {
        "name": DRA_CHART,
        "repo": d.chart_repository,
        "version": d.chart_version,
        "releaseName": DRA_CHART,
        "namespace": d.namespace,
        "includeCRDs": True,
        "valuesInline": dra_driver_values(plan),
    }
    body: Obj = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "helmCharts": [chart],
    }
    patches = chart_class_patches(plan, state)
    if patches:
        body["patches"] = patches
    return {wrapper_folder(plan, state): body}


def _argocd(plan: Plan, state: WaveState, chart: HelmChart) -> Obj:
    repo = chart.repository.removeprefix("oci://") if chart.oci else chart.repository
    source: Obj = {
        "repoURL": repo,
        "chart": chart.chart,
        "targetRevision": chart.version,
        "helm": {"releaseName": chart.release, "valuesObject": chart.values},
    }
    if chart.chart == DRA_CHART and argocd_wrapped(plan):
        d = plan.platform.delivery
        source = {
            "repoURL": d.repo_url,
            "targetRevision": d.revision,
            "path": f"{d.path}/{plan.platform.name}/{wrapper_folder(plan, state)}",
        }
    return argocd_application(
        plan, state.name, f"{plan.platform.name}-{chart.release}", source, chart.namespace, 0
    )


def render_operators(plan: Plan, state: WaveState) -> list[Obj]:
    """The driver Namespace (from the wave that installs it) and each engine's releases."""
    p = plan.platform
    objects: list[Obj] = []
    if state.driver_installed:
        objects.append(k8s_object("v1", "Namespace", p.dra_driver.namespace, wave=state.name))
    for chart in _charts(plan, state):
        if "flux" in p.delivery.engines:
            objects += _flux(plan, state, chart)
        if "argocd" in p.delivery.engines:
            objects.append(_argocd(plan, state, chart))
    return objects
