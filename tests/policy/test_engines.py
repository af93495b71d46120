"""Preflight (GP291-GP293): `check --snapshot` refuses what the cluster's Argo CD or Flux cannot
apply. The snapshot folders are built as `kubectl get -o json` prints them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from tests.flux_crds import flux_crd
from tests.specs import minimal_spec, write_spec


def _list(items: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def _appproject_crd(names: bool) -> dict[str, Any]:
    item: dict[str, Any] = {"group": {"type": "string"}, "kind": {"type": "string"}}
    if names:
        item["name"] = {"type": "string"}
    whitelist = {"type": "array", "items": {"type": "object", "properties": item}}
    schema = {"properties": {"spec": {"properties": {"clusterResourceWhitelist": whitelist}}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "appprojects.argoproj.io"},
        "spec": {"versions": [{"name": "v1alpha1", "served": True, "schema": {"openAPIV3Schema": schema}}]},
    }


def _helmrelease_crd(versions: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "helmreleases.helm.toolkit.fluxcd.io"},
        "spec": {"versions": [{"name": v, "served": True} for v in versions]},
    }


def _deployment(name: str, labels: dict[str, str], image: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "gitops", "labels": labels},
        "spec": {"template": {"spec": {"containers": [{"name": name, "image": image}]}}},
    }


def _argocd_cm(options: str | None) -> dict[str, Any]:
    data = {} if options is None else {"kustomize.buildOptions": options}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": "argocd"},
        "data": data,
    }


def _snapshot(tmp_path: Path, **kinds: list[dict[str, Any]]) -> Path:
    folder = tmp_path / "snap"
    folder.mkdir()
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}} for n in ("gpu-01", "gpu-02")]
    (folder / "nodes.json").write_text(_list(nodes))
    for kind, items in kinds.items():
        (folder / f"{kind}.json").write_text(_list(items))
    return folder


def _check(
    tmp_path: Path, snap: Path, engines: list[str], chart: str | None = None, flux: str | None = None
) -> tuple[int, str]:
    doc = minimal_spec()
    doc["spec"]["delivery"]["engines"] = engines
    if chart:
        doc["spec"]["draDriver"]["chartVersion"] = chart
    if flux:
        doc["spec"]["delivery"]["fluxVersion"] = flux
    spec = write_spec(tmp_path / "lab.yaml", doc)
    result = CliRunner().invoke(main, ["check", str(spec), "--snapshot", str(snap)])
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


@pytest.mark.parametrize(
    ("kinds", "found"),
    [
        ({"customresourcedefinitions": [_appproject_crd(names=False)]}, True),
        ({"customresourcedefinitions": [_appproject_crd(names=True)]}, False),
        (
            {
                "deployments": [
                    _deployment(
                        "argocd-server",
                        {"app.kubernetes.io/name": "argocd-server"},
                        "quay.io/argoproj/argocd:v3.2.6",
                    )
                ]
            },
            True,
        ),
        (
            {
                "deployments": [
                    _deployment(
                        "argocd-server",
                        {"app.kubernetes.io/name": "argocd-server"},
                        "quay.io/argoproj/argocd:v3.3.0",
                    )
                ]
            },
            False,
        ),
        ({}, False),
    ],
)
def test_gp280_an_argo_cd_without_whitelist_names_is_refused(
    tmp_path: Path, kinds: dict[str, list[dict[str, Any]]], found: bool
) -> None:
    code, out = _check(tmp_path, _snapshot(tmp_path, **kinds), ["argocd"])
    assert ("GP291" in out) is found, out
    assert code == (1 if found else 0), out


def test_gp280_the_crd_decides_over_the_image_tag(tmp_path: Path) -> None:
    server = _deployment(
        "argocd-server", {"app.kubernetes.io/name": "argocd-server"}, "registry.local/argocd:v3.2.0"
    )
    snap = _snapshot(tmp_path, customresourcedefinitions=[_appproject_crd(names=True)], deployments=[server])
    assert "GP291" not in _check(tmp_path, snap, ["argocd"])[1]


@pytest.mark.parametrize(
    ("kinds", "found"),
    [
        ({"customresourcedefinitions": [_helmrelease_crd(["v2beta1", "v2beta2"])]}, True),
        ({"customresourcedefinitions": [_helmrelease_crd(["v2", "v2beta2"])]}, False),
        (
            {
                "deployments": [
                    _deployment(
                        "helm-controller",
                        {"app.kubernetes.io/component": "helm-controller"},
                        "ghcr.io/fluxcd/helm-controller:v0.37.4",
                    )
                ]
            },
            True,
        ),
        (
            {
                "deployments": [
                    _deployment(
                        "helm-controller",
                        {"app.kubernetes.io/component": "helm-controller"},
                        "ghcr.io/fluxcd/helm-controller:v1.0.1",
                    )
                ]
            },
            False,
        ),
    ],
)
def test_gp281_a_flux_without_helmrelease_v2_is_refused(
    tmp_path: Path, kinds: dict[str, list[dict[str, Any]]], found: bool
) -> None:
    # rendered for Flux 2.3 (what v2 alone is enough for: GP295 judges the later features)
    code, out = _check(tmp_path, _snapshot(tmp_path, **kinds), ["flux"], flux="2.3.0")
    assert ("GP292" in out) is found, out
    assert code == (1 if found else 0), out


@pytest.mark.parametrize(
    ("chart", "options", "found"),
    [
        (None, None, True),
        (None, "--load-restrictor LoadRestrictionsNone", True),
        (None, "--load-restrictor LoadRestrictionsNone --enable-helm", False),
        ("25.8.1", None, False),
    ],
)
def test_gp282_argocd_cm_without_enable_helm_is_refused_when_the_driver_is_wrapped(
    tmp_path: Path, chart: str | None, options: str | None, found: bool
) -> None:
    snap = _snapshot(tmp_path, configmaps=[_argocd_cm(options)])
    code, out = _check(tmp_path, snap, ["argocd"], chart)
    assert ("GP293" in out) is found, out
    if chart is None:  # 25.8.1 is refused on its own (GP112): only its GP293 verdict matters here
        assert code == (1 if found else 0), out


def test_a_snapshot_item_without_a_name_is_bad_input(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path, configmaps=[{"kind": "ConfigMap", "metadata": {}}])
    code, out = _check(tmp_path, snap, ["argocd"])
    assert code == 2
    assert "configmaps.json:items[0].metadata.name: missing" in out


def test_explain_the_preflight_rules() -> None:
    for code in ("GP291", "GP292", "GP293", "GP294", "GP295", "GP296"):
        result = CliRunner().invoke(main, ["explain", code])
        assert result.exit_code == 0 and code in result.output


@pytest.mark.parametrize(
    ("flag", "found"),
    [(None, True), ("false", True), ("True", True), ("true", False)],
)
def test_gp294_argocd_cm_without_impersonation_is_a_warning(
    tmp_path: Path, flag: str | None, found: bool
) -> None:
    cm = _argocd_cm("--enable-helm")
    if flag is not None:
        cm["data"]["application.sync.impersonation.enabled"] = flag
    code, out = _check(tmp_path, _snapshot(tmp_path, configmaps=[cm]), ["argocd"])
    assert ("GP294" in out) is found, out
    assert code == 0, out
    if found:
        assert "warning:" in out and "every sync runs with the controller's rights" in out


def test_gp294_is_not_judged_without_argocd_cm_or_argo_cd(tmp_path: Path) -> None:
    assert "GP294" not in _check(tmp_path, _snapshot(tmp_path), ["argocd"])[1]
    (tmp_path / "flux").mkdir()
    snap = _snapshot(tmp_path / "flux", configmaps=[_argocd_cm(None)])
    assert "GP294" not in _check(tmp_path, snap, ["flux"])[1]


@pytest.mark.parametrize(
    ("cluster", "rendered", "found"),
    [
        ("2.6.0", None, ["HelmRelease spec.upgrade.strategy"]),
        ("2.3.0", None, ["HelmRelease spec.upgrade.strategy", "source.toolkit.fluxcd.io/v1 OCIRepository"]),
        ("2.7.0", None, []),
        ("2.6.0", "2.6.0", []),
        ("2.3.0", "2.3.0", []),
    ],
)
def test_gp295_the_cluster_s_flux_crds_refuse_what_flux_version_renders(
    tmp_path: Path, cluster: str, rendered: str | None, found: list[str]
) -> None:
    # GIVEN a snapshot holding the HelmRelease and OCIRepository CRDs Flux `cluster` installs
    crds = [flux_crd(cluster, "HelmRelease"), flux_crd(cluster, "OCIRepository")]
    snap = _snapshot(tmp_path, customresourcedefinitions=crds)
    # WHEN check reads it for a spec rendered for `rendered` (default: the newest Flux)
    code, out = _check(tmp_path, snap, ["flux"], flux=rendered)
    # THEN each feature the output uses and the cluster lacks is refused, with the release to render for
    lines = list(dict.fromkeys(line for line in out.splitlines() if "GP295" in line))  # stdout and stderr
    assert [next(f for f in found if f in line) for line in lines] == found, out
    assert code == (1 if found else 0), out
    if found:
        assert f"set `delivery.fluxVersion: {cluster}`" in out, out


@pytest.mark.parametrize(("tag", "found"), [("v1.3.0", True), ("v1.4.0", False)])
def test_gp295_without_the_crds_the_controller_image_decides(tmp_path: Path, tag: str, found: bool) -> None:
    controller = _deployment(
        "helm-controller",
        {"app.kubernetes.io/component": "helm-controller"},
        f"ghcr.io/fluxcd/helm-controller:{tag}",
    )
    code, out = _check(tmp_path, _snapshot(tmp_path, deployments=[controller]), ["flux"])
    assert ("GP295" in out) is found, out
    assert code == (1 if found else 0), out


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _prometheusrule_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "prometheusrules.monitoring.coreos.com"},
        "spec": {"versions": [{"name": "v1", "served": True}]},
    }


def _check_alerts(tmp_path: Path, snap: Path, enabled: bool = True) -> tuple[int, str]:
    doc = minimal_spec()
    doc["spec"]["monitoring"] = {"enabled": enabled}
    spec = write_spec(tmp_path / "lab.yaml", doc)
    result = CliRunner().invoke(main, ["check", str(spec), "--snapshot", str(snap)])
    return result.exit_code, result.output  # stdout and stderr, interleaved


def _manifest(snap: Path, selected: list[str] | None) -> None:
    """The manifest `gpuplatform snapshot` writes: every kind read, and (since GP296) the CRDs it asked for."""
    kinds = {p.stem: "read" for p in snap.glob("*.json")}
    doc: dict[str, Any] = {"kinds": kinds, "missing": []}
    if selected is not None:
        doc["selected"] = {"customresourcedefinitions": selected}
    (snap / "manifest.json").write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("namespaces", "crds", "selected", "found"),
    [
        # GIVEN a cluster without the Prometheus Operator's namespace: the post gates cannot apply
        (["default", "kube-system"], [_prometheusrule_crd()], ["prometheusrules.monitoring.coreos.com"], 1),
        # GIVEN the namespace but no PrometheusRule CRD, in a snapshot that asked for it
        (["default", "monitoring"], [], ["prometheusrules.monitoring.coreos.com"], 1),
        # GIVEN neither
        (["default"], [], ["prometheusrules.monitoring.coreos.com"], 2),
        # GIVEN both: nothing to say
        (["default", "monitoring"], [_prometheusrule_crd()], ["prometheusrules.monitoring.coreos.com"], 0),
        # GIVEN a snapshot that never asked for the CRD (taken before GP296): its absence says nothing
        (["default", "monitoring"], [], ["appprojects.argoproj.io"], 0),
        (["default", "monitoring"], [], None, 0),
    ],
)
def test_gp296_alerts_need_the_prometheus_operators_namespace_and_crd(
    tmp_path: Path,
    namespaces: list[str],
    crds: list[dict[str, Any]],
    selected: list[str] | None,
    found: int,
) -> None:
    snap = _snapshot(tmp_path, namespaces=[_namespace(n) for n in namespaces], customresourcedefinitions=crds)
    _manifest(snap, selected)
    # WHEN the platform renders alerts and is checked against the cluster
    code, out = _check_alerts(tmp_path, snap)
    # THEN each missing prerequisite is one GP296 error, located at the field that names it
    assert sum(": GP296 " in line for line in out.splitlines() if line.startswith("error:")) == found, out
    if found:
        assert code == 1
    if namespaces == ["default", "kube-system"]:
        assert "spec.monitoring.namespace: GP296" in out and "no namespace 'monitoring'" in out
    # AND a platform without alerts needs neither
    assert "GP296" not in _check_alerts(tmp_path, snap, enabled=False)[1]


def test_gp296_does_not_judge_a_snapshot_without_namespaces(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path)  # a folder of `kubectl get -o json` files, namespaces not among them
    code, out = _check_alerts(tmp_path, snap)
    assert "GP296" not in out and code == 0, out
