"""Flux's CRDs at the controllers' tags of a Flux release, read from the stored snapshots of the
controllers' repositories (`fetch` of fluxcd/helm-controller, source-controller, kustomize-controller;
`config/crd/bases/`), and a strict reading of their schemas.

The controllers of each release are those fluxcd/flux2 `manifests/bases/*/kustomization.yaml` names
at its tag. Without the snapshots the tests that need them skip and say so.
"""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

MIRRORS = Path("/work/.mirror")
#: Flux release -> controller -> tag (fluxcd/flux2 v2.3.0, v2.6.0, v2.7.0 manifests/bases).
RELEASES: dict[str, dict[str, str]] = {
    "2.3.0": {"helm-controller": "v1.0.1", "source-controller": "v1.3.0", "kustomize-controller": "v1.3.0"},
    "2.6.0": {"helm-controller": "v1.3.0", "source-controller": "v1.6.0", "kustomize-controller": "v1.6.0"},
    "2.7.0": {"helm-controller": "v1.4.0", "source-controller": "v1.7.0", "kustomize-controller": "v1.7.0"},
}
#: (group, plural) of each kind the Flux output holds -> its controller.
KINDS: dict[str, tuple[str, str, str]] = {
    "HelmRelease": ("helm-controller", "helm.toolkit.fluxcd.io", "helmreleases"),
    "HelmRepository": ("source-controller", "source.toolkit.fluxcd.io", "helmrepositories"),
    "OCIRepository": ("source-controller", "source.toolkit.fluxcd.io", "ocirepositories"),
    "GitRepository": ("source-controller", "source.toolkit.fluxcd.io", "gitrepositories"),
    "Kustomization": ("kustomize-controller", "kustomize.toolkit.fluxcd.io", "kustomizations"),
}


@cache
def flux_crd(release: str, kind: str) -> dict[str, Any]:
    """The CRD of `kind` as Flux `release` installs it (skips the test without the snapshot)."""
    controller, group, plural = KINDS[kind]
    repo = MIRRORS / f"fluxcd+{controller}" / "repo"
    if not repo.is_dir():
        pytest.skip(f"no stored snapshot of fluxcd/{controller} at {repo}")
    tag = RELEASES[release][controller]
    text = subprocess.run(
        ["git", "--git-dir", str(repo), "show", f"{tag}:config/crd/bases/{group}_{plural}.yaml"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    crd: dict[str, Any] = yaml.safe_load(text)
    return crd


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """A CRD schema as the API server applies it under strict field validation (kubectl's default):
    an object with declared properties refuses any other field, unless it preserves unknown fields."""
    out = dict(schema)
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    if "properties" in out:
        out["properties"] = {k: strict(v) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = strict(out["items"])
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = strict(out["additionalProperties"])
    return out


def served_schema(crd: dict[str, Any], version: str) -> dict[str, Any] | None:
    """The strict schema of a served version, None when the CRD does not serve it; `metadata` is
    the API server's, not the CRD's, to check."""
    for v in crd["spec"]["versions"]:
        if v["name"] == version and v.get("served"):
            schema = strict(v["schema"]["openAPIV3Schema"])
            schema["properties"]["metadata"] = {"type": "object"}
            return schema
    return None
