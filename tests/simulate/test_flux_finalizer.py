"""A Flux Kustomization dropped from the entry uninstalls what it held at once; the chain keeps the
releases' Kustomization in every wave so that a release is removed in the chain's order.

kustomize-controller v1.9.4 `finalize` deletes a deleted Kustomization's inventory when
`finalizerShouldDeleteResources` (`spec.prune` under the default `deletionPolicy: MirrorPrune`):
the entry's own prune deletes a Kustomization it no longer renders, and its finalizer runs before
any gate of the new chain. With the operator outside gpuplatform (`managed: false`) the first wave
installs no release, so its `00-operators/flux` folder used to be absent: rolling back to it
uninstalled the DRA driver that way, unordered (and the model, which did not delete a dropped
Kustomization's inventory, reported the release as left installed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import gpuplatform.render.tree as tree_module
from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.tree import render_tree
from gpuplatform.simulate.devices import DeviceMatcher
from gpuplatform.simulate.replay import Replayer, declared_modes
from gpuplatform.simulate.run import prepare
from tests.simulate.helpers import sim_spec, violations
from tests.specs import write_spec

UNINSTALL = "HelmRelease dra-driver-nvidia-gpu deleted: helm uninstall"


@pytest.fixture
def unmanaged(tmp_path: Path) -> LoadedPlatform:
    doc = sim_spec()
    doc["spec"]["gpuOperator"] = {}
    doc["spec"]["delivery"]["engines"] = ["flux"]
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    return loaded


def _rollback_trace(loaded: LoadedPlatform) -> list[str]:
    """The Flux steps of base -> pilot -> base, as `actor: text`."""
    plan = plan_platform(loaded.platform)
    tree = render_tree(plan)
    replayer = Replayer(plan, tree, "flux", DeviceMatcher(loaded.platform), declared_modes(plan, tree))
    replayer.bootstrap()
    replayer.transition("base", "pilot")
    start = len(replayer.world.trace)
    replayer.transition("pilot", "base")
    return [f"{s.actor}: {s.text}" for s in replayer.world.trace[start:] if s.actor == "flux"]


def test_every_wave_renders_the_releases_folder(unmanaged: LoadedPlatform) -> None:
    files = render_tree(plan_platform(unmanaged.platform)).files
    for state in plan_platform(unmanaged.platform).waves:
        assert f"waves/{state.dir_name}/00-operators/flux/kustomization.yaml" in files


def test_a_rollback_removes_the_driver_after_the_pre_gates(unmanaged: LoadedPlatform) -> None:
    trace = _rollback_trace(unmanaged)
    gates = next(i for i, line in enumerate(trace) if "Kustomization lab-gates-pre applies" in line)
    uninstall = next(i for i, line in enumerate(trace) if UNINSTALL in line)
    assert gates < uninstall
    assert not any("its finalizer prunes" in line for line in trace)
    assert violations(prepare(unmanaged, None, None, ("flux",)).replay()) == []


def test_a_dropped_kustomization_uninstalls_at_once(
    unmanaged: LoadedPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the empty folder the releases' Kustomization leaves the chain: its finalizer removes
    the driver before the first gate."""
    monkeypatch.setattr(tree_module, "OPERATORS_LAYER", "no-such-layer")
    trace = _rollback_trace(unmanaged)
    finalized = next(i for i, line in enumerate(trace) if "deleted: its finalizer prunes" in line)
    assert UNINSTALL in trace[finalized]
    gates = next(i for i, line in enumerate(trace) if "Kustomization lab-gates-pre applies" in line)
    assert finalized < gates
