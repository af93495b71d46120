"""`kubectl kustomize` builds every folder of every stack, and the entry points name folders that build."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest
import yaml

from tests.realtools.conftest import Rendered

Key = tuple[str, str, str, str]


def _key(obj: dict) -> Key:  # type: ignore[type-arg]
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


def _load_all(text: str) -> list[dict]:  # type: ignore[type-arg]
    return [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d]


@cache
def _file_keys(path: Path) -> frozenset[Key]:
    return frozenset(_key(d) for d in _load_all(path.read_text()))


@cache
def _expected(folder: Path) -> frozenset[Key]:
    """The objects `folder`'s kustomization lists: its files, and the folders it names, recursively."""
    out: set[Key] = set()
    for entry in yaml.load((folder / "kustomization.yaml").read_text(), Loader=yaml.CSafeLoader)["resources"]:
        target = (folder / entry).resolve()
        out |= _expected(target) if target.is_dir() else _file_keys(target)
    return frozenset(out)


def _own_files(folder: Path) -> set[Key]:
    """Objects in files under `folder`, outside engine subfolders (which only an engine's entry lists)."""
    out: set[Key] = set()
    for path in folder.rglob("*.yaml"):
        rel = path.relative_to(folder).parts
        if path.name == "kustomization.yaml" or any(p in ("flux", "argocd", "argocd-apps") for p in rel[:-1]):
            continue
        out |= _file_keys(path.resolve())
    return out


def _wrapper(folder: Path) -> bool:
    """The Argo CD kustomize wrapper of a chart: it builds only with `--enable-helm` (tested below)."""
    return "helmCharts" in yaml.load((folder / "kustomization.yaml").read_text(), Loader=yaml.CSafeLoader)


@pytest.fixture(scope="module")
def builds(rendered: Rendered, kubectl: str) -> dict[Path, subprocess.CompletedProcess[str]]:
    """`kubectl kustomize` of every folder that has a kustomization.yaml, in parallel."""
    folders = sorted(p.parent for p in rendered.root.rglob("kustomization.yaml") if not _wrapper(p.parent))

    def build(folder: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [kubectl, "kustomize", str(folder)], capture_output=True, text=True, check=False
        )

    with ThreadPoolExecutor(max_workers=6) as pool:
        return dict(zip(folders, pool.map(build, folders), strict=True))


def test_every_folder_builds_and_emits_exactly_its_objects(
    rendered: Rendered, builds: dict[Path, subprocess.CompletedProcess[str]]
) -> None:
    assert len(builds) > 100
    for folder, done in builds.items():
        rel = folder.relative_to(rendered.root)
        assert done.returncode == 0, f"{rel}: {done.stderr}"
        emitted = [_key(d) for d in _load_all(done.stdout)]
        assert len(emitted) == len(set(emitted)), f"{rel}: an object is emitted twice"
        assert set(emitted) == _expected(folder), rel
        if folder.name not in ("argocd", "argocd-apps"):
            assert _own_files(folder) <= set(emitted), f"{rel}: a file of the folder is not built"


def _paths(rendered: Rendered) -> list[tuple[str, str]]:
    """(where, repository-relative path) of every Flux Kustomization and Argo CD source path."""
    found = []
    for name, tree in sorted(rendered.trees.items()):
        for path, content in sorted(tree.files.items()):
            if not isinstance(content, list) or not path.startswith("delivery/"):
                continue
            for obj in content:
                spec = obj.get("spec", {})
                if obj["kind"] == "Kustomization" and obj["apiVersion"].startswith("kustomize.toolkit"):
                    found.append((f"{name}/{path}", spec["path"]))
                elif obj["kind"] == "Application":
                    found.append((f"{name}/{path}", spec["source"]["path"]))
                elif obj["kind"] == "ApplicationSet":
                    found += [
                        (f"{name}/{path}", e["path"]) for e in spec["generators"][0]["list"]["elements"]
                    ]
    return found


def test_every_flux_and_argocd_path_resolves_to_a_folder_that_builds(
    rendered: Rendered, builds: dict[Path, subprocess.CompletedProcess[str]]
) -> None:
    paths = _paths(rendered)
    assert {p for _, p in paths if p.startswith("./")} and {p for _, p in paths if not p.startswith("./")}
    for where, path in paths:
        folder = (rendered.root / path).resolve()
        assert folder in builds, f"{where}: {path} is not a folder with a kustomization.yaml"
        assert builds[folder].returncode == 0, f"{where}: {path} does not build"


def test_each_platform_points_only_into_its_own_folder(rendered: Rendered) -> None:
    for where, path in _paths(rendered):
        name, _, file = where.partition("/")
        if "argocd-applicationset" in file:
            continue
        assert path.removeprefix("./").startswith(f"dist/{name}/"), f"{where}: {path}"
