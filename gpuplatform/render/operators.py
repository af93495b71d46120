"""Layer 00-operators: the GPU Operator and NVIDIA DRA driver Helm releases, for Flux and Argo CD.

The values are the same data for both engines (`helm_values.py`); Flux gets a HelmRepository and
a HelmRelease, Argo CD an Application with a Helm source. Both live in engine folders that only
that engine's entry point includes; the releases' Namespaces are engine-neutral.

A managed GPU Operator release upgrades the running one in place. Flux finds a release by name in
its storage namespace and, when its own history is empty, upgrades it ("found existing release
in storage", ReleaseStatusUnmanaged -> Upgrade: fluxcd/helm-controller v1.6.3
internal/reconcile/state.go, atomic_release.go); without `storageNamespace` it would look in
flux-system, find nothing and install a second operator. Flux upgrades with `ResetValues`
(internal/action/upgrade.go), so only the rendered values survive: hence the imported values.
Argo CD keeps no Helm storage; `releaseName` keeps `.Release.Name`, and so every object name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuplatform.charts.facts import ChartFacts
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.helm_values import (
    dra_driver_chart,
    dra_driver_values,
    gpu_operator_chart,
    gpu_operator_values,
)
from gpuplatform.render.meta import Obj, k8s_object, order_keys

__all__ = [
    "ARGOCD_FINALIZER",
    "IN_CLUSTER",
    "HelmChart",
    "argocd_application",
    "helm_charts",
    "release_namespace",
    "render_operators",
]

IN_CLUSTER = "https://kubernetes.default.svc"
#: Deleting an Application with this finalizer deletes what it installed (argoproj/argo-cd v3.3.0
#: pkg/apis/application/v1alpha1/application_defaults.go `ResourcesFinalizerName`).
ARGOCD_FINALIZER = "resources-finalizer.argocd.argoproj.io"
#: The operator and DRA driver run privileged pods (NVIDIA/gpu-operator v26.3.1
#: config/manager/manager.yaml labels its Namespace so).
PRIVILEGED = {"pod-security.kubernetes.io/enforce": "privileged"}


@dataclass(frozen=True)
class HelmChart:
    """One chart release: where the chart comes from, where it goes, with which values."""

    release: str
    chart: str
    version: str
    repository: str
    namespace: str
    values: Obj
    facts: ChartFacts
    keep: bool = False
    """Never removed by GitOps (a release it adopted rather than installed): Argo CD neither prunes
    nor deletes the Application (gitops-engine `Prune=false`, `Delete=false`), Flux never prunes
    the HelmRelease (`kustomize.toolkit.fluxcd.io/prune: disabled`)."""

    @property
    def oci(self) -> bool:
        return self.repository.startswith("oci://")


def helm_charts(plan: Plan, state: WaveState) -> list[HelmChart]:
    """The wave's releases: the GPU Operator when managed, the DRA driver once installed."""
    p = plan.platform
    charts = []
    if p.gpu_operator.managed:
        op = p.gpu_operator
        facts = gpu_operator_chart(p)
        version = f"v{op.version}" if facts.version.startswith("v") else op.version
        charts.append(
            HelmChart(
                op.release_name,
                facts.chart,
                version,
                op.chart_repository or facts.repository,
                op.namespace,
                gpu_operator_values(plan, state),
                facts,
                keep=True,
            )
        )
    if state.driver_installed:
        d = p.dra_driver
        facts = dra_driver_chart(p)
        charts.append(
            HelmChart(
                d.release_name or facts.chart,
                facts.chart,
                d.chart_version,
                d.chart_repository or facts.repository,
                d.namespace,
                dra_driver_values(plan),
                facts,
            )
        )
    return charts


def release_namespace(name: str, wave: str, *, keep: bool) -> Obj:
    """A release's Namespace, labelled for privileged pods; `keep`: never pruned or deleted."""
    annotations = None
    if keep:
        annotations = {
            "argocd.argoproj.io/sync-options": "ServerSideApply=true,Prune=false,Delete=false",
            "kustomize.toolkit.fluxcd.io/prune": "disabled",
            "kustomize.toolkit.fluxcd.io/ssa": "Merge",
        }
    return k8s_object("v1", "Namespace", name, wave=wave, labels=PRIVILEGED, annotations=annotations)


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
        annotations={"kustomize.toolkit.fluxcd.io/prune": "disabled"} if chart.keep else None,
        spec={
            "interval": "10m",
            "releaseName": chart.release,
            "targetNamespace": chart.namespace,
            "storageNamespace": chart.namespace,
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
    return [source, release]


def argocd_application(
    plan: Plan,
    wave: str,
    name: str,
    source: Obj,
    destination: Obj,
    *,
    automated: bool = True,
    annotations: dict[str, str] | None = None,
    finalizer: bool = False,
) -> Obj:
    """An Argo CD Application of the platform's project, on the cluster where Argo CD runs."""
    p = plan.platform
    sync: Obj = {"syncOptions": ["CreateNamespace=false", "ServerSideApply=true"]}
    if automated:
        sync = {"automated": {"prune": True, "selfHeal": True}, **sync}
    app = k8s_object(
        "argoproj.io/v1alpha1",
        "Application",
        name,
        wave=wave,
        namespace=p.delivery.argocd_namespace,
        annotations=annotations,
        spec={"project": p.name, "source": source, "destination": destination, "syncPolicy": sync},
    )
    if finalizer:
        app["metadata"]["finalizers"] = [ARGOCD_FINALIZER]
    return order_keys(app)


def _argocd(plan: Plan, state: WaveState, chart: HelmChart) -> Obj:
    """A child Application: created where Argo CD runs, deploying to the platform's cluster.

    It carries the resources finalizer, so deleting it (a rollback pruning the DRA driver's)
    uninstalls its release instead of orphaning it; an adopted release is never pruned or deleted.
    """
    repo = chart.repository.removeprefix("oci://") if chart.oci else chart.repository
    source = {
        "repoURL": repo,
        "chart": chart.chart,
        "targetRevision": chart.version,
        "helm": {"releaseName": chart.release, "valuesObject": chart.values},
    }
    destination = {"server": plan.platform.delivery.cluster_server, "namespace": chart.namespace}
    return argocd_application(
        plan,
        state.name,
        f"{plan.platform.name}-{chart.release}",
        source,
        destination,
        annotations={"argocd.argoproj.io/sync-options": "Prune=false,Delete=false"} if chart.keep else None,
        finalizer=True,
    )


def render_operators(plan: Plan, state: WaveState) -> list[Obj]:
    """The releases' Namespaces and each engine's releases.

    The operator's Namespace (managed release) exists in every wave and is never removed: it
    holds the running operator and its Helm storage. The driver's exists from the wave that
    installs it.
    """
    p = plan.platform
    objects: list[Obj] = []
    if p.gpu_operator.managed:
        objects.append(release_namespace(p.gpu_operator.namespace, state.name, keep=True))
    if state.driver_installed and p.dra_driver.namespace != p.gpu_operator.namespace:
        objects.append(release_namespace(p.dra_driver.namespace, state.name, keep=False))
    for chart in helm_charts(plan, state):
        if "flux" in p.delivery.engines:
            objects += _flux(plan, state, chart)
        if "argocd" in p.delivery.engines:
            objects.append(_argocd(plan, state, chart))
    return objects
