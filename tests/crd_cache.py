"""The upstream CRDs `scripts/upstream-crds` writes from the Go module proxy (`.ci/setup-tools` runs
it; `gpuplatform/rehearse/upstream.py` finds them), read by the tests that judge the output against
a release's CRDs.

Without the cache a test that needs it skips and says so; in CI (`GPUPLATFORM_UPSTREAM_CRDS=required`,
set by `.ci/run`) it fails instead: the upstream CRDs must judge the output there.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplatform.rehearse.upstream import UpstreamMissing, manifest
from gpuplatform.rehearse.upstream import release_folder as cached_release

REQUIRED = os.environ.get("GPUPLATFORM_UPSTREAM_CRDS") == "required"
MANIFEST: dict[str, Any] = manifest()
#: Flux release -> controller -> tag (fluxcd/flux2 manifests/bases at each release).
FLUX_RELEASES: dict[str, dict[str, str]] = MANIFEST["fluxReleases"]


def release_folder(name: str, tag: str) -> Path:
    """The cached CRDs of `name` (a manifest entry) at `tag`, or skip (fail in CI) saying how to get them."""
    try:
        return cached_release(name, tag)
    except UpstreamMissing as exc:
        if REQUIRED:
            pytest.fail(f"{exc} (GPUPLATFORM_UPSTREAM_CRDS=required)")
        pytest.skip(str(exc))


@cache
def upstream_file(name: str, tag: str, file: str) -> dict[str, Any]:
    """One cached CRD document (libyaml: the Argo CD CRDs are megabytes)."""
    crd: dict[str, Any] = yaml.load((release_folder(name, tag) / file).read_text(), Loader=yaml.CSafeLoader)
    return crd
