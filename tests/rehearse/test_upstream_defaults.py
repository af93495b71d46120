"""Without `--crds` the rehearsal installs the cached CRDs of the releases the spec targets, so the
runbook's preflight reads the fields it checks (GP291, GP295) from real CRDs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.model.platform import Platform
from gpuplatform.rehearse.crds import read_crds
from gpuplatform.rehearse.upstream import UpstreamMissing, platform_crd_folders
from tests.crd_cache import release_folder


def _served_field(crd: dict[str, Any], *path: str) -> bool:
    """Whether the newest served version's schema declares the field at `path` (`[]`: list items)."""
    schema = crd["spec"]["versions"][-1]["schema"]["openAPIV3Schema"]
    for key in path:
        schema = schema.get("items" if key == "[]" else "properties", {})
        schema = schema if key == "[]" else schema.get(key)
        if not isinstance(schema, dict):
            return False
    return True


def test_the_default_crds_are_the_targeted_releases_and_hold_what_the_preflight_reads(
    reference: Platform,
) -> None:
    release_folder("argo-cd", "v3.5.1")  # skip (fail in CI) without the cache
    folders = platform_crd_folders(reference)
    assert [f.name for f in folders] == [
        "argo-cd@v3.5.1",
        "kueue@v0.19.2",
        "karpenter@v1.14.1",
        "helm-controller@v1.6.3",
        "kustomize-controller@v1.9.4",
        "source-controller@v1.9.4",
    ]
    crds = read_crds(folders)
    assert _served_field(
        crds[("argoproj.io", "AppProject")], "spec", "clusterResourceWhitelist", "[]", "name"
    )
    assert _served_field(crds[("helm.toolkit.fluxcd.io", "HelmRelease")], "spec", "upgrade", "strategy")


def test_an_older_flux_gets_its_own_release_s_crds(reference: Platform) -> None:
    release_folder("helm-controller", "v1.3.0")
    older = reference.model_copy(
        update={"delivery": reference.delivery.model_copy(update={"flux_version": "2.6.2"})}
    )
    assert "helm-controller@v1.3.0" in [f.name for f in platform_crd_folders(older)]


def test_a_missing_cache_says_how_to_fill_it(
    reference: Platform, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GPUPLATFORM_CRD_CACHE", str(tmp_path))
    with pytest.raises(UpstreamMissing, match="scripts/upstream-crds"):
        platform_crd_folders(reference)
