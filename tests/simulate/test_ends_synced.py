"""Every transition, forward and back, between any two waves ends Synced under Argo CD: nothing it
expects to prune and never will (`Prune=false`) is left out of the target wave without
`IgnoreExtraneous` (argo-cd v3.5.1 controller/state.go `CompareAppState`)."""

from __future__ import annotations

import itertools

import pytest

from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.meta import NEVER_DELETE_ANNOTATIONS, Obj
from gpuplatform.render.tree import render_tree
from gpuplatform.simulate.argocd import out_of_sync
from gpuplatform.simulate.devices import DeviceMatcher
from gpuplatform.simulate.rendered import engine_wave
from gpuplatform.simulate.replay import replay_platform
from tests.conftest import REPO

ARGO_STACKS = ("reference.py", "mixed-fleet.yaml", "kueue-fleet.yaml")


def _argo_platforms() -> list[LoadedPlatform]:
    return [
        lp
        for stack in ARGO_STACKS
        for lp in load_stack(REPO / "stacks" / stack)
        if "argocd" in lp.platform.delivery.engines
    ]


def _synced_states(lp: LoadedPlatform) -> dict[str, tuple[list[Obj], list[Obj]]]:
    """Per wave: what the wave Application and the root (`delivery/argocd/`) hold once it synced."""
    plan = plan_platform(lp.platform)
    tree = render_tree(plan)
    out = {}
    for state in plan.waves:
        rendered = engine_wave(tree, plan, state.name, "argocd")
        out[state.name] = ([o for u in rendered.units if not u.hook for o in u.objects], rendered.entry)
    return out


@pytest.mark.parametrize("loaded", _argo_platforms(), ids=lambda lp: lp.platform.name)
def test_every_ordered_pair_of_waves_ends_synced(loaded: LoadedPlatform) -> None:
    states = _synced_states(loaded)
    stuck = [
        f"{a} -> {b}: {o['kind']} {o['metadata']['name']}"
        for a, b in itertools.permutations(states, 2)
        for live, target in zip(states[a], states[b], strict=True)
        for o in out_of_sync(live, target)
    ]
    assert stuck == []


def test_a_never_pruned_namespace_without_ignore_extraneous_keeps_the_rollback_out_of_sync(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the never-delete annotations without IgnoreExtraneous (as before issue 36)
    bare = {k: v for k, v in NEVER_DELETE_ANNOTATIONS.items() if "compare-options" not in k}
    monkeypatch.setattr("gpuplatform.render.tenants.NEVER_DELETE_ANNOTATIONS", bare)
    [loaded, _] = load_stack(REPO / "stacks" / "reference.py")
    states = _synced_states(loaded)
    # WHEN the claim pilot's wave is rolled back to the wave before its tenant existed
    stuck = out_of_sync(states["native-claim-pilot"][0], states["driver-validation"][0])
    # THEN the tenant Namespace stays OutOfSync
    assert [(o["kind"], o["metadata"]["name"]) for o in stuck] == [("Namespace", "gpu-dra-pilot")]


def test_the_simulator_fails_a_rollback_that_ends_out_of_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the same regression, replayed by the simulator on Argo CD
    bare = {k: v for k, v in NEVER_DELETE_ANNOTATIONS.items() if "compare-options" not in k}
    monkeypatch.setattr("gpuplatform.render.tenants.NEVER_DELETE_ANNOTATIONS", bare)
    [loaded, _] = load_stack(REPO / "stacks" / "reference.py")
    plan = plan_platform(loaded.platform)
    # WHEN the claim pilot's wave is rolled back
    results = replay_platform(
        plan,
        render_tree(plan),
        "argocd",
        [("native-claim-pilot", "driver-validation")],
        DeviceMatcher(loaded.platform),
    )
    # THEN it is an `ends-synced` violation naming the Namespace (the operator on time and late)
    found = {(r.violation.invariant, r.violation.objects) for r in results if r.violation}
    assert found == {("ends-synced", ("Namespace/gpu-dra-pilot",))}
