"""One engine's annotations per one-engine platform: a platform delivered by Argo CD alone carries
no `…fluxcd.io/` annotation, one delivered by Flux alone no `…argoproj.io/` one; both engines keep both."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

from gpuplatform.load.stacks import discover_stacks, load_stack
from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.meta import for_engines
from gpuplatform.render.tree import render_tree
from tests.conftest import REPO

_DOMAIN = {"argocd": "argoproj.io", "flux": "fluxcd.io"}


@cache
def _stack_platforms() -> dict[str, Platform]:
    return {lp.platform.name: lp.platform for s in discover_stacks(REPO / "stacks") for lp in load_stack(s)}


def _annotation_domains(platform: Platform) -> Iterator[tuple[str, str]]:
    """(file, annotation key) of every annotation in the platform's rendered tree."""
    for path, content in render_tree(plan_platform(platform)).files.items():
        if isinstance(content, str):
            continue
        for obj in content:
            for key in (obj.get("metadata") or {}).get("annotations") or {}:
                yield path, key


def _of(engine: str, key: str) -> bool:
    prefix = key.split("/", 1)[0]
    return prefix == _DOMAIN[engine] or prefix.endswith("." + _DOMAIN[engine])


def _one_engine(platform: Platform, engine: str) -> Platform:
    delivery = platform.delivery.model_copy(update={"engines": (engine,)})
    return platform.model_copy(update={"delivery": delivery})


@pytest.mark.parametrize("engine", ["argocd", "flux"])
@pytest.mark.parametrize("name", sorted(_stack_platforms()))
def test_a_one_engine_platform_carries_no_annotation_of_the_other_engine(name: str, engine: str) -> None:
    # GIVEN a bundled stack's platform delivered by one engine only
    platform = _one_engine(_stack_platforms()[name], engine)
    other = "flux" if engine == "argocd" else "argocd"
    # WHEN its whole tree is rendered
    keys = list(_annotation_domains(platform))
    # THEN its own engine's annotations are there and the other engine's are not
    assert any(_of(engine, key) for _, key in keys)
    assert [(path, key) for path, key in keys if _of(other, key)] == []


def test_a_platform_with_both_engines_keeps_both_engines_annotations() -> None:
    platform = _stack_platforms()["reference"]
    assert set(platform.delivery.engines) == {"argocd", "flux"}
    keys = [key for _, key in _annotation_domains(platform)]
    assert any(_of("argocd", k) for k in keys) and any(_of("flux", k) for k in keys)


def test_for_engines_drops_only_the_other_engine_s_keys_and_leaves_the_input_alone() -> None:
    notes = {
        "argocd.argoproj.io/sync-options": "Prune=false",
        "notifications.argoproj.io/subscribe.on-sync-failed.slack": "gpu-oncall",
        "kustomize.toolkit.fluxcd.io/prune": "disabled",
        "example.com/owner": "gpu-team",
    }
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "annotations": notes},
    }
    [flux] = for_engines([obj], ("flux",))
    [argo] = for_engines([obj], ("argocd",))
    [both] = for_engines([obj], ("argocd", "flux"))
    assert flux["metadata"]["annotations"] == {
        "kustomize.toolkit.fluxcd.io/prune": "disabled",
        "example.com/owner": "gpu-team",
    }
    assert set(argo["metadata"]["annotations"]) == {
        "argocd.argoproj.io/sync-options",
        "notifications.argoproj.io/subscribe.on-sync-failed.slack",
        "example.com/owner",
    }
    assert both is obj and obj["metadata"]["annotations"] is notes and len(notes) == 4
    only_flux: dict[str, Any] = {
        "kind": "Job",
        "metadata": {"name": "j", "annotations": {"argocd.argoproj.io/hook": "Sync"}},
    }
    assert for_engines([only_flux], ("flux",)) == [{"kind": "Job", "metadata": {"name": "j"}}]
