"""`simulate` is held to `rehearse`: the same transitions, the same verdicts.

Every transition both rehearse (adjacent ones, forward and back, and with the operator late where
the runbook starts with the operator's steps) under both engines is compared: proven by one and
refused by the other is a bug in the model until upstream source says otherwise (docs/rehearse.md
lists what the model leaves out). The unsafe side is compared too: plans whose replay breaks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.rehearse.assets import Assets
from gpuplatform.rehearse.kueue import KueueRelease
from gpuplatform.rehearse.run import RehearsalOptions, rehearse_platform
from gpuplatform.simulate.replay import TransitionResult
from gpuplatform.simulate.run import ENGINES, prepare
from tests.conftest import REPO
from tests.rehearse.conftest import FOUR_NODES, KARPENTER_POOL, synth_tree

Key = tuple[str, str, str, bool]

#: Transitions every run compares, at the least (the issue's bar).
ENOUGH = 40


def _verdicts(results: Sequence[TransitionResult]) -> dict[Key, TransitionResult]:
    return {(r.engine, r.source, r.target, r.late): r for r in results}


def _compare(
    loaded: LoadedPlatform, stack: Path, tree: Path, assets: Assets, crds: Path | None, *, safe: bool = True
) -> dict[Key, TransitionResult]:
    """The rehearsal's verdicts on the keys both compared; fails naming every disagreement with both
    sides' words. `safe`: every transition is rehearsed (none left after a violation)."""
    engines = [e for e in ENGINES if e in loaded.platform.delivery.engines]
    rehearsed = rehearse_platform(
        loaded, str(stack), None, None, engines, RehearsalOptions(assets.folder, crds, tree)
    )
    modelled = prepare(loaded, None, None, engines).replay()
    real, model = _verdicts(rehearsed.results), _verdicts(modelled.results)
    common = sorted(set(real) & set(model))
    disagree = []
    for key in common:
        r, m = real[key].violation, model[key].violation
        if (r is None) != (m is None):
            words = [f"rehearse: {r.invariant}: {r.message}" if r else "rehearse: proven"]
            words.append(f"simulate: {m.invariant}: {m.message}" if m else "simulate: proven")
            disagree.append(f"{key}: " + " / ".join(words))
    assert not disagree, "\n".join(disagree)
    if safe:
        assert all("not rendered" in s for s in rehearsed.skipped), rehearsed.skipped
    return {key: real[key] for key in common}


@pytest.fixture(scope="module")
def compared() -> list[Key]:
    """Every key compared in this module, for the count."""
    return []


def test_the_reference_stack(assets_136: Assets, crds: Path | None, compared: list[Key]) -> None:
    stack = REPO / "stacks" / "reference.py"
    [loaded] = [lp for lp in load_stack(stack) if lp.platform.name == "reference"]
    compared += _compare(loaded, stack, REPO / "dist" / "reference", assets_136, crds)


def test_the_kueue_fleet(
    assets_136: Assets, crds: Path | None, kueue_release: KueueRelease, compared: list[Key]
) -> None:
    """Kueue's admission: the model's (`kueue/simulate.py`) against the real manager's."""
    stack = REPO / "stacks" / "kueue-fleet.yaml"
    [loaded] = load_stack(stack)
    compared += _compare(loaded, stack, REPO / "dist" / "kueue-fleet", assets_136, crds)


def test_the_nim_lab(assets_136: Assets, crds: Path | None, compared: list[Key]) -> None:
    """NIM services on the emulated NIM Operator (blue/green, the old one retired the wave after),
    which the model plans for but does not replay, and a workload its team converts with its own
    manifest."""
    stack = REPO / "stacks" / "nim-lab.yaml"
    [loaded] = load_stack(stack)
    compared += _compare(loaded, stack, REPO / "dist" / "nim-lab", assets_136, crds)


def test_a_four_node_pilot(
    tmp_path: Path, assets_136: Assets, crds: Path | None, compared: list[Key]
) -> None:
    tree = synth_tree(FOUR_NODES, tmp_path)
    [loaded] = load_stack(FOUR_NODES)
    compared += _compare(loaded, FOUR_NODES, tree, assets_136, crds)


def test_a_karpenter_pool(tmp_path: Path, assets_136: Assets, crds: Path | None, compared: list[Key]) -> None:
    """A pool whose nodes Karpenter replaces when the runbook patches its NodePool (emulated from
    its v1.14.1 source), against the model's replacement (`simulate/manual.py` `_replace`)."""
    tree = synth_tree(KARPENTER_POOL, tmp_path)
    [loaded] = load_stack(KARPENTER_POOL)
    compared += _compare(loaded, KARPENTER_POOL, tree, assets_136, crds)


def test_a_kubelet_plugin_pinned_away_from_the_pool_breaks_both(
    tmp_path: Path, assets_136: Assets, crds: Path | None, compared: list[Key]
) -> None:
    """The unsafe side: a team value narrows the kubelet plugin to a label no node has, so the DRA
    pool publishes nothing (GP240; the post gates hold the sync in the model and in the cluster, so
    synth refuses it too, GP290, unless both are allowed)."""
    doc = yaml.safe_load(FOUR_NODES.read_text())
    doc["metadata"]["name"] = "four-node-pinned"
    doc["spec"]["draDriver"]["values"] = {
        "kubeletPlugin": {"nodeSelector": {"lab.example.com/never": "true"}}
    }
    stack = tmp_path / "pinned.yaml"
    stack.write_text(yaml.safe_dump(doc, sort_keys=False))
    tree = synth_tree(stack, tmp_path / "out", "GP240", "GP290")
    [loaded] = load_stack(stack)
    verdicts = _compare(loaded, stack, tree, assets_136, crds, safe=False)
    unsafe = [k for k, r in verdicts.items() if k[1:3] == ("baseline", "pilot") and r.violation is not None]
    assert unsafe, verdicts  # the transition itself was compared, and both refused it
    compared += verdicts


def test_enough_transitions_were_compared(compared: list[Key]) -> None:
    assert len(compared) >= ENOUGH, f"{len(compared)} transitions compared, fewer than {ENOUGH}"
