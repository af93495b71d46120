"""The upstream CRDs `scripts/upstream-crds` writes from the Go module proxy (`.ci/setup-tools` runs
it), read by the tests that judge the output against a release's CRDs.

Without the cache a test that needs it skips and says so; in CI (`GPUPLATFORM_UPSTREAM_CRDS=required`,
set by `.ci/run`) it fails instead: the upstream CRDs must judge the output there.
"""

from __future__ import annotations

import json
import os
from functools import cache
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.conftest import REPO

REQUIRED = os.environ.get("GPUPLATFORM_UPSTREAM_CRDS") == "required"
MANIFEST: dict[str, Any] = json.loads((REPO / "tests" / "upstream-crds.json").read_text())
#: Flux release -> controller -> tag (fluxcd/flux2 manifests/bases at each release).
FLUX_RELEASES: dict[str, dict[str, str]] = MANIFEST["fluxReleases"]


@cache
def _script() -> ModuleType:
    """scripts/upstream-crds, whose `cache_folder` says where it writes."""
    loader = SourceFileLoader("upstream_crds_script", str(REPO / "scripts" / "upstream-crds"))
    spec = spec_from_loader(loader.name, loader)
    assert spec is not None
    module = module_from_spec(spec)
    loader.exec_module(module)
    return module


def release_folder(name: str, tag: str) -> Path:
    """The cached CRDs of `name` (a manifest entry) at `tag`, or skip (fail in CI) saying how to get them."""
    folder: Path = _script().cache_folder() / f"{name}@{tag}"
    if not (folder / ".complete").is_file():
        why = f"no upstream CRDs of {name} {tag} at {folder}: run scripts/upstream-crds (needs Go)"
        if REQUIRED:
            pytest.fail(f"{why} (GPUPLATFORM_UPSTREAM_CRDS=required)")
        pytest.skip(why)
    return folder


@cache
def upstream_file(name: str, tag: str, file: str) -> dict[str, Any]:
    """One cached CRD document (libyaml: the Argo CD CRDs are megabytes)."""
    crd: dict[str, Any] = yaml.load((release_folder(name, tag) / file).read_text(), Loader=yaml.CSafeLoader)
    return crd
