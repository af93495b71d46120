"""Where the control plane's binaries are: `--assets DIR`, `GPUPLATFORM_KUBE_ASSETS`, or the cache
`scripts/build-control-plane` fills, found the way envtest finds `KUBEBUILDER_ASSETS`.

A folder of assets holds `kube-apiserver`, `kube-controller-manager`, `kube-scheduler` and `etcd`
of one Kubernetes release (and optionally its `kubectl`); the release is what `kube-apiserver
--version` answers, and it must be the minor the spec declares (`spec.kubernetes.version`), since
the rehearsal's verdict is about that release's scheduler and controllers.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gpuplatform.versions import Release, parse_release

__all__ = ["ASSETS_ENV", "BINARIES", "CACHE_ENV", "Assets", "AssetsMissing", "cache_root", "find_assets"]

#: A folder with one release's server binaries (like envtest's KUBEBUILDER_ASSETS).
ASSETS_ENV = "GPUPLATFORM_KUBE_ASSETS"
#: Where `scripts/build-control-plane` keeps one folder per release (`<cache>/v1.36.3/`).
CACHE_ENV = "GPUPLATFORM_KUBE_CACHE"
BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd")
BUILD_HINT = "scripts/build-control-plane (needs Go and the Go module proxy)"


class AssetsMissing(Exception):
    """No usable control plane binaries for the release asked for; the message says where it looked."""


@dataclass(frozen=True)
class Assets:
    """One release's control plane binaries."""

    folder: Path
    release: Release

    def binary(self, name: str) -> str:
        return str(self.folder / name)

    @property
    def kubectl(self) -> str | None:
        """The release's own kubectl, when the folder has one (the build script makes it)."""
        path = self.folder / "kubectl"
        return str(path) if os.access(path, os.X_OK) else None


def cache_root() -> Path:
    """`$GPUPLATFORM_KUBE_CACHE`, else `$XDG_CACHE_HOME/gpuplatform/kube` (`~/.cache/...`)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpuplatform" / "kube"


def _release_of(folder: Path) -> Release | None:
    """The release the folder's kube-apiserver reports, or None when a binary is missing or broken."""
    if not all(os.access(folder / b, os.X_OK) for b in BINARIES):
        return None
    try:
        out = subprocess.run(
            [str(folder / "kube-apiserver"), "--version"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = out.split()
    try:
        return parse_release(words[-1]) if words else None
    except ValueError:
        return None


def find_assets(minor: str, assets: Path | None = None) -> Assets:
    """The binaries of Kubernetes `minor` (`1.36`): `assets`, else `$GPUPLATFORM_KUBE_ASSETS`, else the
    newest patch release of that minor in the cache. AssetsMissing says what was tried and how to fix it."""
    explicit = (
        assets
        if assets is not None
        else (Path(os.environ[ASSETS_ENV]) if os.environ.get(ASSETS_ENV) else None)
    )
    if explicit is not None:
        release = _release_of(explicit)
        if release is None:
            raise AssetsMissing(
                f"{explicit} does not hold {', '.join(BINARIES)} that answer --version "
                f"(from --assets or {ASSETS_ENV})"
            )
        if release.minor != minor:
            raise AssetsMissing(f"{explicit} holds Kubernetes {release}, the spec declares {minor}")
        return Assets(explicit, release)
    root = cache_root()
    found = []
    for folder in sorted(root.glob(f"v{minor}.*")) if root.is_dir() else []:
        release = _release_of(folder)
        if release is not None and release.minor == minor:
            found.append(Assets(folder, release))
    if not found:
        raise AssetsMissing(
            f"no Kubernetes {minor} control plane in {root}: build it with {BUILD_HINT}, "
            f"or point {ASSETS_ENV} (or --assets) at a folder of that release's server binaries"
        )
    return max(found, key=lambda a: a.release)
