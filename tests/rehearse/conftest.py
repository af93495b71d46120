"""The rehearsal's fixtures: a release's control plane binaries, or a skip that says why.

In CI (`GPUPLATFORM_REHEARSAL=required`, set by `.ci/run`) a missing binary or a machine that
refuses mount namespaces fails the test instead: the rehearsal must run there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from gpuplatform.rehearse.assets import Assets, AssetsMissing, find_assets
from gpuplatform.rehearse.runtime import runtime_problem
from tests.conftest import SHARED

REQUIRED = os.environ.get("GPUPLATFORM_REHEARSAL") == "required"
CRDS = SHARED / "reference" / "crds"


def _unavailable(why: str) -> None:
    if REQUIRED:
        pytest.fail(f"the rehearsal must run here (GPUPLATFORM_REHEARSAL=required): {why}")
    pytest.skip(why)


def release_assets(minor: str) -> Assets:
    """The binaries of Kubernetes `minor`, or skip (fail in CI) saying what is missing."""
    why = runtime_problem() or ("" if shutil.which("jq") else "jq is not installed")
    if why:
        _unavailable(f"the shipped programs cannot run here: {why}")
    try:
        return find_assets(minor)
    except AssetsMissing as exc:
        _unavailable(str(exc))
        raise


@pytest.fixture(scope="session")
def assets_136() -> Assets:
    return release_assets("1.36")


@pytest.fixture(scope="session")
def assets_135() -> Assets:
    return release_assets("1.35")


@pytest.fixture(scope="session")
def crds() -> Path | None:
    """The upstream CRDs of the shared reference, when this checkout sits next to it."""
    return CRDS if CRDS.is_dir() else None
