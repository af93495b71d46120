"""`delivery.fluxVersion` renders what that Flux serves: the Flux objects of every wave, rendered for
Flux 2.3, 2.6 and 2.7, are valid under that release's CRDs (served version, strict fields, CEL
rules: `tests/upstream_crds.py`), and the default output is not valid under an older Flux's (which
is why the preflight's GP295 exists)."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplatform.load.stacks import load_stack
from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.tree import render_tree
from tests.conftest import REPO
from tests.flux_crds import KINDS, RELEASES
from tests.upstream_crds import crd_errors

STACKS = ("reference.py", "nim-lab.yaml")


def _flux_objects(platform: Platform) -> list[dict[str, Any]]:
    """Every Flux object of the platform's tree (each once per content)."""
    tree = render_tree(plan_platform(platform))
    seen: dict[str, dict[str, Any]] = {}
    for content in tree.files.values():
        if not isinstance(content, list):
            continue
        for obj in content:
            if obj.get("kind") in KINDS and str(obj.get("apiVersion", "")).endswith(
                ("fluxcd.io/v1", "fluxcd.io/v2")
            ):
                seen.setdefault(repr(obj), obj)
    return list(seen.values())


def _for(platform: Platform, release: str) -> Platform:
    return platform.model_copy(
        update={"delivery": platform.delivery.model_copy(update={"flux_version": release})}
    )


def _refusals(objects: list[dict[str, Any]], release: str) -> list[str]:
    return [
        f"{obj['kind']} {obj['metadata']['name']}: {error}"
        for obj in objects
        for error in crd_errors(obj, release)
    ]


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("release", sorted(RELEASES))
def test_the_output_for_a_flux_release_is_valid_under_its_crds(stack: str, release: str) -> None:
    platforms = [
        lp.platform for lp in load_stack(REPO / "stacks" / stack) if "flux" in lp.platform.delivery.engines
    ]
    objects = [o for p in platforms for o in _flux_objects(_for(p, release))]
    assert {o["kind"] for o in objects} >= {"HelmRelease", "Kustomization"}
    assert _refusals(objects, release) == []


def test_the_default_output_is_refused_by_an_older_flux(reference: Platform) -> None:
    objects = _flux_objects(reference)
    refused = _refusals(objects, "2.6.0")
    assert refused and all("HelmRelease" in r and "strategy" in r for r in refused), refused
    older = _refusals(objects, "2.3.0")
    assert any("OCIRepository" in r and "not served" in r for r in older), older
