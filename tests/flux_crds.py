"""Flux's CRDs at the controllers' tags of a Flux release, from the CRD cache (`tests/crd_cache.py`:
generated from the controllers' api modules as their Makefiles do), and a strict reading of their
schemas.

The controllers of each release are those fluxcd/flux2 `manifests/bases/*/kustomization.yaml` names
at its tag (`tests/upstream-crds.json`). Without the cache the tests that need it skip and say so
(fail in CI).
"""

from __future__ import annotations

from typing import Any

from tests.crd_cache import FLUX_RELEASES, upstream_file

#: Flux release -> controller -> tag (tests/upstream-crds.json).
RELEASES = FLUX_RELEASES
#: (group, plural) of each kind the Flux output holds -> its controller.
KINDS: dict[str, tuple[str, str, str]] = {
    "HelmRelease": ("helm-controller", "helm.toolkit.fluxcd.io", "helmreleases"),
    "HelmRepository": ("source-controller", "source.toolkit.fluxcd.io", "helmrepositories"),
    "OCIRepository": ("source-controller", "source.toolkit.fluxcd.io", "ocirepositories"),
    "GitRepository": ("source-controller", "source.toolkit.fluxcd.io", "gitrepositories"),
    "Kustomization": ("kustomize-controller", "kustomize.toolkit.fluxcd.io", "kustomizations"),
}


def flux_crd(release: str, kind: str) -> dict[str, Any]:
    """The CRD of `kind` as Flux `release` installs it (skips the test without the CRD cache)."""
    controller, group, plural = KINDS[kind]
    return upstream_file(controller, RELEASES[release][controller], f"{group}_{plural}.yaml")


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
