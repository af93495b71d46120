"""The rehearsal's fixtures: a release's control plane binaries, or a skip that says why.

In CI (`GPUPLATFORM_REHEARSAL=required`, set by `.ci/run`) a missing binary or a machine that
refuses mount namespaces fails the test instead: the rehearsal must run there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpuplatform.load.stacks import load_stack
from gpuplatform.rehearse.assets import Assets, AssetsMissing, find_assets
from gpuplatform.rehearse.kueue import KueueRelease, find_kueue
from gpuplatform.rehearse.run import RehearsalOptions, rehearse_platform
from gpuplatform.rehearse.runtime import runtime_problem
from gpuplatform.simulate.run import PlatformReport
from gpuplatform.versions import KUEUE_DEFAULT
from tests.conftest import REPO, SHARED

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
def kueue_release() -> KueueRelease:
    """Kueue at KUEUE_DEFAULT as scripts/build-control-plane builds it, or skip (fail in CI)."""
    try:
        return find_kueue(KUEUE_DEFAULT)
    except AssetsMissing as exc:
        _unavailable(str(exc))
        raise


@pytest.fixture(scope="session")
def crds() -> Path | None:
    """The upstream CRDs of the shared reference, when this checkout sits next to it."""
    return CRDS if CRDS.is_dir() else None


FOUR_NODES = Path(__file__).parent / "stacks" / "four-node-pilot.yaml"
KARPENTER_POOL = Path(__file__).parent / "stacks" / "karpenter-pool.yaml"


def synth_tree(stack: Path, out: Path, *allow: str) -> Path:
    """The stack's tree as `gpuplatform synth --out` writes it (with `--allow` of each code in
    `allow`); the platform's folder."""
    overrides = [arg for code in allow for arg in ("--allow", code)]
    subprocess.run(
        [str(REPO / ".venv" / "bin" / "gpuplatform"), "synth", str(stack), "--out", str(out), *overrides],
        check=True,
        capture_output=True,
    )
    name: str = yaml.safe_load(stack.read_text())["metadata"]["name"]
    return out / name


def rehearse_tree(
    stack: Path,
    tree: Path,
    source: str,
    target: str,
    assets: Assets,
    crds: Path | None,
    snapshots: Path | None = None,
    engine: str = "flux",
) -> PlatformReport:
    [loaded] = [lp for lp in load_stack(stack) if lp.platform.name == tree.name]
    options = RehearsalOptions(assets.folder, crds, tree, late=False, snapshots=snapshots)
    return rehearse_platform(loaded, str(stack), source, target, [engine], options)


@pytest.fixture(scope="module")
def four_nodes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth_tree(FOUR_NODES, tmp_path_factory.mktemp("four-nodes"))
