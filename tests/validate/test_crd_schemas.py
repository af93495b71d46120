"""The project's CRD schemas only allow what the upstream CRDs define, with compatible types."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpuplatform.validate.schemas import own_schema_kinds, own_validator
from gpuplatform.versions import KUEUE_API_VERSION, KUEUE_DEFAULT
from tests.conftest import SHARED
from tests.crd_cache import upstream_file

CRDS = SHARED / "reference" / "crds"
UPSTREAM = {
    ("helm.toolkit.fluxcd.io/v2", "HelmRelease"): "helm.toolkit.fluxcd.io_helmreleases.yaml",
    ("source.toolkit.fluxcd.io/v1", "HelmRepository"): "source.toolkit.fluxcd.io_helmrepositories.yaml",
    ("source.toolkit.fluxcd.io/v1", "GitRepository"): "source.toolkit.fluxcd.io_gitrepositories.yaml",
    ("source.toolkit.fluxcd.io/v1", "OCIRepository"): "source.toolkit.fluxcd.io_ocirepositories.yaml",
    ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"): "kustomize.toolkit.fluxcd.io_kustomizations.yaml",
    ("argoproj.io/v1alpha1", "Application"): "application-crd.yaml",
    ("argoproj.io/v1alpha1", "AppProject"): "appproject-crd.yaml",
    ("argoproj.io/v1alpha1", "ApplicationSet"): "applicationset-crd.yaml",
    ("karpenter.sh/v1", "NodePool"): "karpenter.sh_nodepools.yaml",
}


def _upstream(api_version: str, file: str) -> dict[str, Any]:
    version = api_version.split("/")[1]
    crd = yaml.safe_load((CRDS / file).read_text())
    [entry] = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema: dict[str, Any] = entry["schema"]["openAPIV3Schema"]
    return schema


def _compatible(ours: dict[str, Any], theirs: dict[str, Any], path: str) -> list[str]:
    problems = []
    if theirs.get("x-kubernetes-preserve-unknown-fields") or not theirs:
        return []
    if "type" in ours and "type" in theirs and ours["type"] != theirs["type"]:
        problems.append(f"{path}: type {ours['type']} upstream {theirs['type']}")
    for enum in ours.get("enum") or []:
        if "enum" in theirs and enum not in theirs["enum"]:
            problems.append(f"{path}: value {enum!r} not allowed upstream")
    for name, sub in (ours.get("properties") or {}).items():
        if path == "" and name in ("apiVersion", "kind", "metadata"):
            continue
        upstream = (theirs.get("properties") or {}).get(name)
        if upstream is None:
            problems.append(f"{path}.{name}: not in the upstream CRD")
            continue
        problems += _compatible(sub, upstream, f"{path}.{name}")
    if isinstance(ours.get("items"), dict) and isinstance(theirs.get("items"), dict):
        problems += _compatible(ours["items"], theirs["items"], f"{path}[]")
    return problems


@pytest.mark.parametrize(("api_version", "kind"), sorted(UPSTREAM), ids=lambda v: str(v))
def test_own_schema_is_a_subset_of_the_upstream_crd(api_version: str, kind: str) -> None:
    if not CRDS.is_dir():
        pytest.skip(f"upstream CRDs not found at {CRDS}")
    ours = own_validator(api_version, kind).schema
    assert _compatible(ours, _upstream(api_version, UPSTREAM[(api_version, kind)]), "") == []


#: Kueue kinds -> their CRD file in kubernetes-sigs/kueue (config/components/crd/bases/): no copy is in
#: shared/reference/crds, so they are checked against a fetched copy of the repository when one is here.
KUEUE_CRDS = {
    "ClusterQueue": "kueue.x-k8s.io_clusterqueues.yaml",
    "LocalQueue": "kueue.x-k8s.io_localqueues.yaml",
    "ResourceFlavor": "kueue.x-k8s.io_resourceflavors.yaml",
}
#: CRD kinds emitted without an upstream copy in shared/reference/crds (checked by our schema only).
NO_UPSTREAM_COPY = {
    ("monitoring.coreos.com/v1", "PrometheusRule"),
    *((KUEUE_API_VERSION, kind) for kind in KUEUE_CRDS),
}


@pytest.mark.parametrize("kind", sorted(KUEUE_CRDS))
def test_kueue_schema_is_a_subset_of_the_fetched_crd(kind: str) -> None:
    crd = upstream_file("kueue", f"v{KUEUE_DEFAULT}", KUEUE_CRDS[kind])
    [entry] = [v for v in crd["spec"]["versions"] if v["name"] == KUEUE_API_VERSION.split("/")[1]]
    ours = own_validator(KUEUE_API_VERSION, kind).schema
    assert _compatible(ours, entry["schema"]["openAPIV3Schema"], "") == []


def test_every_emitted_crd_kind_has_an_upstream_reference() -> None:
    crd_kinds = {
        k for k in own_schema_kinds() if not k[0].startswith(("gpuplatform.dev", "kustomize.config.k8s.io"))
    }
    assert crd_kinds - NO_UPSTREAM_COPY <= set(UPSTREAM)


def test_own_schemas_reject_unknown_fields() -> None:
    validator = own_validator("kustomize.toolkit.fluxcd.io/v1", "Kustomization")
    doc = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "k"},
        "spec": {
            "interval": "1m",
            "prune": True,
            "sourceRef": {"kind": "GitRepository", "name": "r"},
            "pruen": True,
        },
    }
    assert [e.message for e in validator.iter_errors(doc)] == [
        "Additional properties are not allowed ('pruen' was unexpected)"
    ]
