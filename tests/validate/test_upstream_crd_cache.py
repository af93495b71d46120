"""The CRD cache holds the releases the tests need, and what `scripts/upstream-crds` writes is the
upstream file: generated Flux CRDs byte for byte what the controllers committed at their tags."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpuplatform.versions import ARGOCD_MINIMUM, FLUX_MINIMUM, KUEUE_DEFAULT, KUEUE_V1BETA2_SINCE
from tests.crd_cache import FLUX_RELEASES, MANIFEST, release_folder
from tests.upstream_crds import KARPENTER_MINIMUM

#: Stored snapshots of the upstream repositories (the workplace's `fetch`), where at hand.
MIRRORS = Path("/work/.mirror")
_REPOSITORY = {
    "kueue": "kubernetes-sigs+kueue",
    "argo-cd": "argoproj+argo-cd",
    "karpenter": "kubernetes-sigs+karpenter",
    "argocd-operator": "argoproj-labs+argocd-operator",
}


def _releases() -> list[tuple[str, str, str]]:
    """(name, tag, folder of the CRDs in its repository) of every release the manifest names."""
    found = [(e["name"], v, e["dir"]) for e in MANIFEST["copied"] for v in e["versions"]]
    found += [(e["name"], v, "config/crd/bases") for e in MANIFEST["generated"] for v in e["versions"]]
    return found


def test_the_manifest_names_every_release_the_versions_module_supports() -> None:
    copied = {(e["name"], v) for e in MANIFEST["copied"] for v in e["versions"]}
    assert {("kueue", f"v{KUEUE_DEFAULT}"), ("kueue", f"v{KUEUE_V1BETA2_SINCE}")} <= copied
    assert {("argo-cd", f"v{ARGOCD_MINIMUM}"), ("karpenter", f"v{KARPENTER_MINIMUM}")} <= copied
    assert str(FLUX_MINIMUM) in FLUX_RELEASES
    generated = {(e["name"], v) for e in MANIFEST["generated"] for v in e["versions"]}
    assert {(c, t) for tags in FLUX_RELEASES.values() for c, t in tags.items()} <= generated


@pytest.mark.parametrize(("name", "tag", "folder"), _releases(), ids=[f"{n}@{t}" for n, t, _ in _releases()])
def test_each_cached_crd_is_the_file_upstream_committed_at_its_tag(name: str, tag: str, folder: str) -> None:
    cached = release_folder(name, tag)
    repository = MIRRORS / _REPOSITORY.get(name, f"fluxcd+{name}") / "repo"
    if not repository.is_dir():
        pytest.skip(f"no stored snapshot of the repository at {repository} to compare with")
    known = subprocess.run(
        ["git", "--git-dir", str(repository), "rev-parse", "--verify", "-q", tag], check=False
    )
    if known.returncode != 0:
        pytest.skip(f"the stored snapshot at {repository} has no tag {tag} to compare with")
    files = sorted(p for p in cached.glob("*.yaml"))
    assert files
    for path in files:
        committed = subprocess.run(
            ["git", "--git-dir", str(repository), "show", f"{tag}:{folder}/{path.name}"],
            capture_output=True,
            check=True,
        ).stdout
        assert path.read_bytes() == committed, f"{name} {tag} {path.name}"
