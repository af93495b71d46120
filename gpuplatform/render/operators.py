"""Layer 00-operators: the GPU Operator and NVIDIA DRA driver Helm releases, for Flux and Argo CD.

The values are the same data for both engines (`helm_values.py`); Flux gets a chart source (an
OCIRepository from Flux 2.6 for OCI charts, else a HelmRepository) and
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

from gpuplatform.charts.facts import ChartFacts
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.dcgm_exporter import render_exporter_rbac
from gpuplatform.render.flux_entry import HELM_ACCOUNT
from gpuplatform.render.helm_values import (
    dra_driver_chart,
    dra_driver_values,
    gpu_operator_chart,
    gpu_operator_values,
)
from gpuplatform.render.meta import IGNORE_EXTRANEOUS, NEVER_DELETE_ANNOTATIONS, Obj, k8s_object, order_keys
from gpuplatform.render.rollout import driver_timeout_minutes
from gpuplatform.versions import (
    CHART_BRIDGE_SINCE,
    FLUX_OCI_CHART_REF_SINCE,
    FLUX_RETRY_ON_FAILURE_SINCE,
    dra_driver_at_least,
    parse_release,
)

__all__ = [
    "ARGOCD_FINALIZER",
    "CHART_BRIDGE_PATCH",
    "SYNC_RETRY",
    "HelmChart",
    "argocd_application",
    "argocd_wrappers",
    "chart_class_patches",
    "child_application_name",
    "helm_charts",
    "release_namespace",
    "render_operators",
]

#: Deleting an Application with this finalizer deletes what it installed (argoproj/argo-cd v3.3.0
#: pkg/apis/application/v1alpha1/application_defaults.go `ResourcesFinalizerName`).
ARGOCD_FINALIZER = "resources-finalizer.argocd.argoproj.io"
#: Argo CD retries a failed automated sync only `retry.limit` times (5 when unset) and then never
#: again for the same commit (argo-cd v3.5.1 controller/appcontroller.go `autoSync`,
#: `alreadyAttemptedSync`). A blocking gate that fails because the operator has not yet released
#: the claims must be retried until it holds: unlimited, backing off to 5 minutes.
SYNC_RETRY = {"limit": -1, "backoff": {"duration": "30s", "factor": 2, "maxDuration": "5m"}}
#: The chart's own `gpu.nvidia.com` class serves `nvidia.com/gpu` from chart 25.12.0 (templates/
#: deviceclass-gpu.yaml, whenever the resource API is v1, which the values pin); no value turns it off.
#: Until the wave that names it as the bridge (`source: chart`), this post-render patch removes it,
#: so no unmigrated `nvidia.com/gpu` pod can land on a DRA node before the bridge wave.
CHART_BRIDGE_PATCH: Obj = {
    "target": {"kind": "DeviceClass", "name": "gpu.nvidia.com"},
    "patch": "- op: remove\n  path: /spec/extendedResourceName\n",
}
#: The media type of a Helm chart's layer in an OCI artifact (helm v3 `registry.ChartLayerMediaType`).
HELM_CHART_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
#: What another controller legitimately writes in the DRA driver's rendered objects: with
#: `webhook.tls.mode: cert-manager`, cert-manager's cainjector fills the webhook's `caBundle`
#: (templates/validatingwebhookconfiguration.yaml `cert-manager.io/inject-ca-from`). Drift
#: detection would otherwise blank it on every correction (helm-controller v1.6.3 atomic_release.go
#: `ReleaseStatusDrifted` -> `CorrectClusterDrift`).
DRIVER_DRIFT_IGNORE: tuple[Obj, ...] = (
    {"paths": ["/webhooks/0/clientConfig/caBundle"], "target": {"kind": "ValidatingWebhookConfiguration"}},
)
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


def child_application_name(plan: Plan, chart: HelmChart) -> str:
    """The child Application of a release (`<platform>-<release>`)."""
    return f"{plan.platform.name}-{chart.release}"


def _dra_chart_name(plan: Plan) -> str:
    return dra_driver_chart(plan.platform).chart


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


def wrapper_folder(plan: Plan, state: WaveState) -> str:
    """The folder (in the tree) of the DRA driver's kustomize wrapper for Argo CD."""
    return f"waves/{state.dir_name}/00-operators/argocd/{_dra_chart_name(plan)}"


def argocd_wrappers(plan: Plan, state: WaveState) -> dict[str, Obj]:
    """Folder -> kustomization that renders the DRA driver chart with its post-render patches.

    Argo CD has no post-renderer for a Helm source; a kustomize source with `helmCharts` and
    `patches` is its equivalent (argo-cd v3.5.1 docs/user-guide/kustomize.md: needs
    `kustomize.buildOptions: --enable-helm` in argocd-cm).
    """
    p = plan.platform
    if not state.driver_installed or "argocd" not in p.delivery.engines or not argocd_wrapped(plan):
        return {}
    chart = next(c for c in helm_charts(plan, state) if c.chart == _dra_chart_name(plan))
    body: Obj = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "helmCharts": [
            {
                "name": chart.chart,
                "repo": chart.repository,
                "version": chart.version,
                "releaseName": chart.release,
                "namespace": chart.namespace,
                "includeCRDs": True,
                "valuesInline": chart.values,
            }
        ],
    }
    patches = chart_class_patches(plan, state)
    if patches:
        body["patches"] = patches
    return {wrapper_folder(plan, state): body}


def release_namespace(name: str, wave: str, *, keep: bool) -> Obj:
    """A release's Namespace, labelled for privileged pods; `keep`: never pruned or deleted."""
    annotations = dict(NEVER_DELETE_ANNOTATIONS) if keep else None
    return k8s_object("v1", "Namespace", name, wave=wave, labels=PRIVILEGED, annotations=annotations)


def _flux_source(plan: Plan, state: WaveState, chart: HelmChart) -> tuple[Obj, Obj]:
    """The chart's source and how the HelmRelease names it: from Flux 2.6 an OCI chart is an
    OCIRepository (its Helm chart layer) named by `chartRef`, else a HelmRepository and `chart.spec`."""
    ns = plan.platform.delivery.flux_namespace
    flux = parse_release(plan.platform.delivery.flux_version)
    if chart.oci and flux >= FLUX_OCI_CHART_REF_SINCE:
        spec: Obj = {
            "interval": "1h",
            "url": f"{chart.repository}/{chart.chart}",
            "ref": {"tag": chart.version},
            "layerSelector": {"mediaType": HELM_CHART_LAYER, "operation": "copy"},
        }
        source = k8s_object(
            "source.toolkit.fluxcd.io/v1",
            "OCIRepository",
            chart.release,
            wave=state.name,
            namespace=ns,
            spec=spec,
        )
        return source, {"chartRef": {"kind": "OCIRepository", "name": chart.release, "namespace": ns}}
    source_spec: Obj = {"interval": "1h", "url": chart.repository}
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
    ref = {"kind": "HelmRepository", "name": chart.release, "namespace": ns}
    return source, {"chart": {"spec": {"chart": chart.chart, "version": chart.version, "sourceRef": ref}}}


def _upgrade_policy(plan: Plan) -> Obj:
    """A failed upgrade is never rolled back: it is retried (Flux 2.7+, `RetryOnFailure`), or left
    failed for the operator (`remediateLastFailure: false`). A rollback of the DRA driver restarts
    the kubelet plugin on every node already upgraded, one batch at a time again, and hides that
    the new version did not come up; a kubelet plugin that fails stops the rollout at its first node."""
    if parse_release(plan.platform.delivery.flux_version) >= FLUX_RETRY_ON_FAILURE_SINCE:
        return {"crds": "CreateReplace", "strategy": {"name": "RetryOnFailure", "retryInterval": "5m"}}
    return {"crds": "CreateReplace", "remediation": {"retries": 0, "remediateLastFailure": False}}


def _flux(plan: Plan, state: WaveState, chart: HelmChart) -> list[Obj]:
    ns = plan.platform.delivery.flux_namespace
    source, chart_ref = _flux_source(plan, state, chart)
    driver = chart.chart == _dra_chart_name(plan)
    minutes = driver_timeout_minutes(plan, state) if driver else plan.platform.delivery.timeout_minutes
    drift: Obj = {"mode": "enabled"}
    if driver:
        drift["ignore"] = [dict(rule) for rule in DRIVER_DRIFT_IGNORE]
    release = k8s_object(
        "helm.toolkit.fluxcd.io/v2",
        "HelmRelease",
        chart.release,
        wave=state.name,
        namespace=ns,
        annotations={"kustomize.toolkit.fluxcd.io/prune": "disabled"} if chart.keep else None,
        spec={
            "interval": "10m",
            "timeout": f"{minutes}m",
            "releaseName": chart.release,
            "targetNamespace": chart.namespace,
            "storageNamespace": chart.namespace,
            "serviceAccountName": HELM_ACCOUNT,
            **chart_ref,
            "install": {"crds": "CreateReplace", "remediation": {"retries": 3}},
            "upgrade": _upgrade_policy(plan),
            "driftDetection": drift,
            "values": chart.values,
        },
    )
    patches = chart_class_patches(plan, state) if driver else []
    if patches:
        release["spec"]["postRenderers"] = [{"kustomize": {"patches": patches}}]
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
        d = p.delivery
        sync = {"automated": {"prune": d.argocd_prune, "selfHeal": d.argocd_self_heal}, **sync}
        sync["retry"] = dict(SYNC_RETRY)
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
    if chart.chart == _dra_chart_name(plan) and argocd_wrapped(plan):
        d = plan.platform.delivery
        source = {
            "repoURL": d.repo_url,
            "targetRevision": d.revision,
            "path": f"{d.path}/{plan.platform.name}/{wrapper_folder(plan, state)}",
        }
    destination = {"server": plan.platform.delivery.cluster_server, "namespace": chart.namespace}
    return argocd_application(
        plan,
        state.name,
        child_application_name(plan, chart),
        source,
        destination,
        annotations={"argocd.argoproj.io/sync-options": "Prune=false,Delete=false", **IGNORE_EXTRANEOUS}
        if chart.keep
        else None,
        finalizer=True,
    )


def render_operators(plan: Plan, state: WaveState) -> list[Obj]:
    """The releases' Namespaces, DCGM exporter's ResourceSlice read (`dcgm_exporter`) and each
    engine's releases.

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
    objects += render_exporter_rbac(plan, state)
    for chart in helm_charts(plan, state):
        if "flux" in p.delivery.engines:
            objects += _flux(plan, state, chart)
        if "argocd" in p.delivery.engines:
            objects.append(_argocd(plan, state, chart))
    return objects
