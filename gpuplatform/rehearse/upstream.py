"""The upstream CRDs of the releases a platform targets, from the cache `scripts/upstream-crds`
fills from the Go module proxy (`data/upstream-crds.json` says what it holds).

The rehearsal installs them unless `--crds DIR` names a folder: the runbook's preflight reads the
cluster's served CRD fields (GP291, GP295), which a CRD that stores any object as written does not
have. Argo CD at `ARGOCD_DEFAULT`, Flux at the newest release of the table at or below
`delivery.fluxVersion` (its controllers' CRDs), Kueue at `KUEUE_DEFAULT`, Karpenter at the newest
cached. NVIDIA's kinds (ClusterPolicy, NIMService) are not on the proxy: they keep the rehearsal's
permissive CRDs (`crds.py`).
"""

from __future__ import annotations

import json
import os
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from gpuplatform.model.platform import Platform
from gpuplatform.versions import ARGOCD_DEFAULT, KUEUE_DEFAULT, parse_release

__all__ = [
    "CRD_CACHE_ENV",
    "FETCH_HINT",
    "UpstreamMissing",
    "cache_folder",
    "manifest",
    "platform_crd_folders",
]

#: Where `scripts/upstream-crds` writes (default `~/.cache/gpuplatform/crds`).
CRD_CACHE_ENV = "GPUPLATFORM_CRD_CACHE"
FETCH_HINT = "run scripts/upstream-crds (needs Go and the Go module proxy), or pass --crds DIR"
_COMPLETE = ".complete"


class UpstreamMissing(Exception):
    """A release's CRDs are not in the cache; the message says which and where it looked."""


def cache_folder() -> Path:
    """`$GPUPLATFORM_CRD_CACHE`, else `~/.cache/gpuplatform/crds`."""
    explicit = os.environ.get(CRD_CACHE_ENV)
    return Path(explicit) if explicit else Path.home() / ".cache" / "gpuplatform" / "crds"


@cache
def manifest() -> dict[str, Any]:
    """`data/upstream-crds.json`: the releases the cache holds."""
    text = resources.files("gpuplatform.rehearse").joinpath("data").joinpath("upstream-crds.json").read_text()
    doc: dict[str, Any] = json.loads(text)
    return doc


def release_folder(name: str, tag: str) -> Path:
    """The cached CRDs of `name` at `tag`; UpstreamMissing when they are not there."""
    folder = cache_folder() / f"{name}@{tag}"
    if not (folder / _COMPLETE).is_file():
        raise UpstreamMissing(f"no upstream CRDs of {name} {tag} at {folder}: {FETCH_HINT}")
    return folder


def _newest(name: str) -> str:
    [versions] = [e["versions"] for e in manifest()["copied"] if e["name"] == name]
    return str(max(versions, key=parse_release))


def platform_crd_folders(platform: Platform) -> list[Path]:
    """The cached CRD folders of the engines and kinds `platform` targets."""
    releases = manifest()["fluxReleases"]
    wanted = parse_release(platform.delivery.flux_version)
    flux = max((r for r in releases if parse_release(r) <= wanted), key=parse_release, default=None)
    if flux is None:
        raise UpstreamMissing(f"no Flux release at or below {wanted} in the CRD cache's table")
    pairs = [
        ("argo-cd", f"v{ARGOCD_DEFAULT}"),
        ("kueue", f"v{KUEUE_DEFAULT}"),
        ("karpenter", _newest("karpenter")),
    ]
    pairs += sorted(releases[flux].items())
    return [release_folder(name, tag) for name, tag in pairs]
