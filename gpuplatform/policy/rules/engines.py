"""Preflight: can the cluster's Argo CD and Flux apply what the tree gives them (`check --snapshot`)?

A snapshot holds the engines' CRDs (`customresourcedefinitions.json`: the AppProject and
HelmRelease ones, and the PrometheusRule one the alerts need), their controllers' Deployments
(`deployments.json`, image tags), `argocd-cm` (`configmaps.json`) and the namespaces. The CRD decides where it is present (it is what the API server validates
against); the controller's image tag otherwise. An engine the snapshot does not show is not judged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpuplatform.errors import InputError
from gpuplatform.policy.registry import Finding, RuleContext, rule
from gpuplatform.render.operators import argocd_wrapped, helm_charts
from gpuplatform.versions import (
    ARGOCD_ENABLE_HELM,
    ARGOCD_MINIMUM,
    FLUX_HELM_CONTROLLER_MINIMUM,
    FLUX_HELM_CONTROLLER_RETRY_ON_FAILURE,
    FLUX_MINIMUM,
    FLUX_OCI_CHART_REF_SINCE,
    FLUX_RETRY_ON_FAILURE_SINCE,
    FLUX_SOURCE_CONTROLLER_OCI_V1,
    Release,
    parse_release,
)

__all__ = ["ARGOCD_SERVER", "FLUX_HELM_CONTROLLER", "FLUX_SOURCE_CONTROLLER", "controller_release"]

_APPPROJECT_CRD = "appprojects.argoproj.io"
_HELMRELEASE_CRD = "helmreleases.helm.toolkit.fluxcd.io"
_OCIREPOSITORY_CRD = "ocirepositories.source.toolkit.fluxcd.io"
_PROMETHEUSRULE_CRD = "prometheusrules.monitoring.coreos.com"


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _items(ctx: RuleContext, kind: str) -> list[dict[str, Any]]:
    """The snapshot's objects of `kind`, each with a `metadata.name` (bad input otherwise)."""
    items = (ctx.snapshot.items(kind) if ctx.snapshot is not None else None) or []
    for i, item in enumerate(items):
        if not isinstance(_map(item.get("metadata")).get("name"), str):
            folder = ctx.snapshot.folder if ctx.snapshot is not None else ""
            raise InputError.single(f"{folder}/{kind}.json", f"items[{i}].metadata.name", "missing")
    return items


def _named(ctx: RuleContext, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    for item in _items(ctx, kind):
        meta = item["metadata"]
        if meta["name"] == name and (namespace is None or meta.get("namespace") == namespace):
            return item
    return None


#: How each engine's install labels its controller: argo-cd v3.5.1 manifests/base/server/
#: argocd-server-deployment.yaml; flux2 v2.3.0 manifests/bases/helm-controller/labels.yaml.
ARGOCD_SERVER = ("app.kubernetes.io/name", "argocd-server")
FLUX_HELM_CONTROLLER = ("app.kubernetes.io/component", "helm-controller")
FLUX_SOURCE_CONTROLLER = ("app.kubernetes.io/component", "source-controller")


def controller_release(
    deployments: list[dict[str, Any]], label: tuple[str, str]
) -> tuple[Release, str] | None:
    """(release, image) of the first container image of a Deployment with `label` whose tag is a
    release number (`quay.io/argoproj/argocd:v3.2.6`)."""
    key, value = label
    for d in deployments:
        if _map(d["metadata"].get("labels")).get(key) != value:
            continue
        for container in _list(_map(_map(_map(d.get("spec")).get("template")).get("spec")).get("containers")):
            image = str(_map(container).get("image", ""))
            tag = image.rsplit("@", 1)[0].rpartition(":")[2]
            try:
                return parse_release(tag), image
            except ValueError:
                continue
    return None


def _whitelist_names(crd: dict[str, Any]) -> bool:
    """Whether a served version of the AppProject CRD has `clusterResourceWhitelist[].name`."""
    for version in map(_map, _list(_map(crd.get("spec")).get("versions"))):
        schema = _map(_map(version.get("schema")).get("openAPIV3Schema"))
        spec = _map(_map(_map(schema.get("properties")).get("spec")).get("properties"))
        item = _map(_map(spec.get("clusterResourceWhitelist")).get("items"))
        if version.get("served") is True and "name" in _map(item.get("properties")):
            return True
    return False


@rule(
    "GP291",
    "error",
    "the cluster's Argo CD cannot apply the platform's AppProject",
    """
The AppProject allows Nodes, Namespaces and CRDs by `clusterResourceWhitelist[].name`, which Argo
CD has from 3.3.0 (argoproj/argo-cd e77acec858). An older AppProject CRD has only `group` and
`kind` there: under strict field validation (kubectl's default) the API server refuses the whole
AppProject, and under `--validate=warn` it drops the names, so the project would allow every Node.
The rule reads the AppProject CRD of `check --snapshot` and, without it, the tag of the
`argocd-server` image. Upgrade Argo CD to 3.3.0 or newer before the first wave.
""",
)
def argocd_version(ctx: RuleContext) -> Iterator[Finding]:
    if "argocd" not in ctx.platform.delivery.engines or ctx.snapshot is None:
        return
    loc = "spec.delivery.engines"
    hint = f"upgrade Argo CD to {ARGOCD_MINIMUM} or newer (docs/delivery.md, Entry points)"
    crd = _named(ctx, "customresourcedefinitions", _APPPROJECT_CRD)
    if crd is not None:
        if not _whitelist_names(crd):
            yield Finding(
                loc, f"the cluster's {_APPPROJECT_CRD} CRD has no clusterResourceWhitelist[].name", hint
            )
        return
    found = controller_release(_items(ctx, "deployments"), ARGOCD_SERVER)
    if found is not None and found[0] < ARGOCD_MINIMUM:
        yield Finding(loc, f"the cluster runs Argo CD {found[1]}, older than {ARGOCD_MINIMUM}", hint)


@rule(
    "GP292",
    "error",
    "the cluster's Flux does not serve helm.toolkit.fluxcd.io/v2",
    """
The releases are `helm.toolkit.fluxcd.io/v2` HelmReleases, served from Flux 2.3.0 (helm-controller
v1.0.0). An older Flux refuses them (no such version), so the `00-operators-flux` Kustomization
fails and no later layer is applied. The rule reads the HelmRelease CRD of `check --snapshot` and,
without it, the tag of the `helm-controller` image. Upgrade Flux to 2.3.0 or newer first.
""",
)
def flux_version(ctx: RuleContext) -> Iterator[Finding]:
    if "flux" not in ctx.platform.delivery.engines or ctx.snapshot is None:
        return
    loc = "spec.delivery.engines"
    hint = f"upgrade Flux to {FLUX_MINIMUM} or newer (docs/delivery.md, Entry points)"
    crd = _named(ctx, "customresourcedefinitions", _HELMRELEASE_CRD)
    if crd is not None:
        versions = map(_map, _list(_map(crd.get("spec")).get("versions")))
        served = sorted(str(v.get("name", "")) for v in versions if v.get("served") is True)
        if "v2" not in served:
            yield Finding(
                loc, f"the cluster's {_HELMRELEASE_CRD} CRD serves {', '.join(served)}, not v2", hint
            )
        return
    found = controller_release(_items(ctx, "deployments"), FLUX_HELM_CONTROLLER)
    if found is not None and found[0] < FLUX_HELM_CONTROLLER_MINIMUM:
        yield Finding(
            loc,
            f"the cluster runs {found[1]}, older than helm-controller {FLUX_HELM_CONTROLLER_MINIMUM} (Flux {FLUX_MINIMUM})",
            hint,
        )


@rule(
    "GP293",
    "error",
    f"argocd-cm does not set kustomize.buildOptions {ARGOCD_ENABLE_HELM}",
    f"""
From chart 25.12.0 the DRA driver's Application renders the chart through a kustomization with
`helmCharts` (its DeviceClass needs a post-render patch), which Argo CD's repo-server builds only
with `kustomize.buildOptions: {ARGOCD_ENABLE_HELM}` in `argocd-cm` (argo-cd docs/user-guide/
kustomize.md); without it the Application fails to render and the driver is never installed. The
rule reads `argocd-cm` in `delivery.argocdNamespace` from `check --snapshot` (a snapshot of the
cluster where Argo CD runs).
""",
)
def argocd_enable_helm(ctx: RuleContext) -> Iterator[Finding]:
    p = ctx.platform
    if "argocd" not in p.delivery.engines or ctx.snapshot is None or not argocd_wrapped(ctx.plan):
        return
    if not any(s.driver_installed for s in ctx.plan.waves):
        return
    ns = p.delivery.argocd_namespace
    cm = _named(ctx, "configmaps", "argocd-cm", ns)
    if cm is None:
        return
    options = str(_map(cm.get("data")).get("kustomize.buildOptions", ""))
    if ARGOCD_ENABLE_HELM not in options.split():
        yield Finding(
            "spec.draDriver.chartVersion",
            f"argocd-cm in {ns} has kustomize.buildOptions {options!r}, without {ARGOCD_ENABLE_HELM}",
            f"set `kustomize.buildOptions: {ARGOCD_ENABLE_HELM}` in argocd-cm before the driver's wave",
        )


#: The `argocd-cm` key that turns sync impersonation on (argo-cd v3.5.1 util/settings/settings.go
#: `impersonationEnabledKey`).
IMPERSONATION_KEY = "application.sync.impersonation.enabled"


@rule(
    "GP294",
    "warning",
    "Argo CD syncs the platform with its own rights: sync impersonation is off",
    f"""
Without `{IMPERSONATION_KEY}: "true"` in `argocd-cm` (off by default) Argo CD's application
controller applies every object with its own credentials, cluster-wide on its own cluster (and the
cluster Secret's on a remote one), whatever the platform's AppProject says it needs; the
least-privilege identity rendered in `delivery/argocd-sync/` (`gpuplatform-sync`, kept current by
the root's `<platform>-sync` Application) is then never used. The rule reads `argocd-cm` in
`delivery.argocdNamespace` from `check --snapshot` (a snapshot of the cluster where Argo CD runs).
Turn impersonation on once `<platform>-sync` is Synced. The root's project (`default`) needs a
`destinationServiceAccounts` entry for Argo CD's namespace and each cluster it syncs the identity to,
or, from Argo CD 3.5.0, `application.sync.impersonation.enforced: "false"`, under which a project
without a match syncs with the controller's rights (argo-cd v3.5.1 `controller/sync.go`; enforced, the
default, such a project fails every sync).
""",
)
def argocd_impersonation(ctx: RuleContext) -> Iterator[Finding]:
    p = ctx.platform
    if "argocd" not in p.delivery.engines or ctx.snapshot is None:
        return
    ns = p.delivery.argocd_namespace
    cm = _named(ctx, "configmaps", "argocd-cm", ns)
    if cm is None:
        return
    value = str(_map(cm.get("data")).get(IMPERSONATION_KEY, "false"))
    if value != "true":  # argo-cd v3.5.1 util/settings/settings.go `IsImpersonationEnabled`: exactly "true"
        yield Finding(
            "spec.delivery.engines",
            f"argocd-cm in {ns} has {IMPERSONATION_KEY}: {value!r}: every sync runs with the controller's "
            "rights, not as gpuplatform-sync",
            f'set `{IMPERSONATION_KEY}: "true"` in argocd-cm once the `{p.name}-sync` Application is Synced '
            "(docs/delivery.md, Impersonation)",
        )


def _served(crd: dict[str, Any], version: str) -> dict[str, Any] | None:
    """The openAPIV3Schema of a served version of a CRD."""
    for v in map(_map, _list(_map(crd.get("spec")).get("versions"))):
        if v.get("name") == version and v.get("served") is True:
            return _map(_map(v.get("schema")).get("openAPIV3Schema"))
    return None


def _has_upgrade_strategy(crd: dict[str, Any]) -> bool:
    spec = _map(_map((_served(crd, "v2") or {}).get("properties")).get("spec"))
    upgrade = _map(_map(spec.get("properties")).get("upgrade"))
    return "strategy" in _map(upgrade.get("properties"))


def _flux_serves(ctx: RuleContext, crd_name: str, controller: tuple[str, str], since: Release) -> bool | None:
    """Whether the cluster's Flux has a feature: its CRD decides where present (HelmRelease: v2 has
    `spec.upgrade.strategy`; OCIRepository: v1 is served), else the controller's image; None when
    the snapshot shows neither."""
    crd = _named(ctx, "customresourcedefinitions", crd_name)
    if crd is not None:
        return _has_upgrade_strategy(crd) if crd_name == _HELMRELEASE_CRD else _served(crd, "v1") is not None
    found = controller_release(_items(ctx, "deployments"), controller)
    return None if found is None else found[0] >= since


@rule(
    "GP295",
    "error",
    "the cluster's Flux is older than the release the Flux output is rendered for",
    f"""
`delivery.fluxVersion` picks what the Flux output uses: from {FLUX_RETRY_ON_FAILURE_SINCE} every
HelmRelease sets `upgrade.strategy` (helm-controller {FLUX_HELM_CONTROLLER_RETRY_ON_FAILURE}), from
{FLUX_OCI_CHART_REF_SINCE} a chart from an OCI registry comes from a `source.toolkit.fluxcd.io/v1`
OCIRepository (source-controller {FLUX_SOURCE_CONTROLLER_OCI_V1}). An older Flux refuses them
(no such field under strict field validation, no such API version), and the releases' layer never
applies. The rule reads the HelmRelease and OCIRepository CRDs of `check --snapshot` (served
versions and fields) and, without them, the tags of the `helm-controller` and `source-controller`
images. Set `delivery.fluxVersion` to the cluster's Flux release, or upgrade Flux.
""",
)
def flux_features(ctx: RuleContext) -> Iterator[Finding]:
    p = ctx.platform
    if "flux" not in p.delivery.engines or ctx.snapshot is None:
        return
    rendered = parse_release(p.delivery.flux_version)
    oci = any(chart.oci for state in ctx.plan.waves for chart in helm_charts(ctx.plan, state))
    needs = [
        (
            FLUX_RETRY_ON_FAILURE_SINCE,
            "HelmRelease spec.upgrade.strategy",
            _flux_serves(ctx, _HELMRELEASE_CRD, FLUX_HELM_CONTROLLER, FLUX_HELM_CONTROLLER_RETRY_ON_FAILURE),
        ),
        (
            FLUX_OCI_CHART_REF_SINCE,
            "source.toolkit.fluxcd.io/v1 OCIRepository",
            _flux_serves(ctx, _OCIREPOSITORY_CRD, FLUX_SOURCE_CONTROLLER, FLUX_SOURCE_CONTROLLER_OCI_V1)
            if oci
            else True,
        ),
    ]
    missing = [(since, what) for since, what, served in needs if rendered >= since and served is False]
    if not missing:
        return
    fits = max(
        release
        for release in [FLUX_MINIMUM, *(since for since, _, _ in needs)]
        if all(served is not False for since, _, served in needs if since <= release)
    )
    for since, what in missing:
        yield Finding(
            "spec.delivery.fluxVersion",
            f"the output rendered for Flux {rendered} uses {what} (Flux {since}), which the cluster's Flux does not serve",
            f"set `delivery.fluxVersion: {fits}` (what the cluster's Flux serves), or upgrade Flux",
        )


@rule(
    "GP296",
    "error",
    "the cluster cannot take the alerts' PrometheusRule (monitoring.enabled, check --snapshot)",
    f"""
With `monitoring.enabled`, every wave's post gates carry a `monitoring.coreos.com/v1`
PrometheusRule in `monitoring.namespace`. Both are the Prometheus Operator's (its install creates
the namespace and the CRD); where either is missing the engine's apply of the post gates fails
(`namespaces "monitoring" not found`, `no matches for kind "PrometheusRule"`), and with it every
wave's sync. The rule reads the namespaces of `check --snapshot` and the {_PROMETHEUSRULE_CRD}
CRD, when the snapshot asked for it (its manifest's `selected`). Install the Prometheus Operator
first, point `monitoring.namespace` at where it runs, or set `monitoring.enabled: false`.
""",
)
def monitoring_prerequisites(ctx: RuleContext) -> Iterator[Finding]:
    monitoring = ctx.platform.monitoring
    if not monitoring.enabled or ctx.snapshot is None:
        return
    hint = "install the Prometheus Operator first, or set `monitoring.enabled: false`"
    if ctx.snapshot.items("namespaces") is not None:
        names = {item["metadata"]["name"] for item in _items(ctx, "namespaces")}
        if monitoring.namespace not in names:
            yield Finding(
                "spec.monitoring.namespace",
                f"the cluster has no namespace {monitoring.namespace!r} for the alerts' PrometheusRule",
                f"{hint}, or set `monitoring.namespace` to where it runs",
            )
    selected = _map(_map(ctx.snapshot.manifest).get("selected")).get("customresourcedefinitions")
    read = (
        _PROMETHEUSRULE_CRD in _list(selected) and ctx.snapshot.items("customresourcedefinitions") is not None
    )
    if read and _named(ctx, "customresourcedefinitions", _PROMETHEUSRULE_CRD) is None:
        yield Finding(
            "spec.monitoring.enabled",
            f"the cluster does not serve PrometheusRule ({_PROMETHEUSRULE_CRD} is absent)",
            hint,
        )
