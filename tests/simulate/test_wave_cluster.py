"""The one healthy cluster of a wave is the model's: every gate and evidence check of the wave holds on
it, the validation probes run in it while their gates read them, and a broken replay gives none."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplatform.evidence.evaluate import evaluate_wave
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.simulate import jobs
from gpuplatform.simulate.snapshot import cluster_snapshot
from gpuplatform.simulate.wave_cluster import wave_world
from gpuplatform.simulate.world import ViolationFound
from tests.gates.harness import fleet_doc, load_platform
from tests.specs import reference_platform


def _platforms(tmp_path: Path) -> list[Platform]:
    return [reference_platform(), load_platform(tmp_path, fleet_doc())]


def test_every_gate_and_check_of_every_wave_holds_on_the_models_cluster(tmp_path: Path) -> None:
    for platform in _platforms(tmp_path):
        plan = plan_platform(platform)
        for state in plan.waves:
            # GIVEN the model's cluster of the wave
            snapshot = cluster_snapshot(wave_world(plan, state.name))
            # WHEN evidence judges it / THEN everything holds
            results = evaluate_wave(plan, state, snapshot)
            broken = {r.id: r.findings + r.unknowns for r in results if r.status != "held"}
            assert broken == {}, (platform.name, state.name)


def test_the_probes_run_while_their_gates_read_them(tmp_path: Path) -> None:
    # GIVEN the fleet's bridge wave, whose gates read the claim pilot's and the bridge's probes
    plan = plan_platform(load_platform(tmp_path, fleet_doc()))
    world = wave_world(plan, "bridge")
    # THEN every probe runs in the cluster taken (not yet removed by the gate that reads it)
    probes = {w.probe: w.phase for w in world.cluster.workloads if w.probe}
    assert probes == {"claim-pilot": "running", "bridge-legacy": "running", "bridge-dra": "running"}
    # AND the proof is the probes' own, not a gate Job's record of them
    results = {r.id: r for r in evaluate_wave(plan, plan.wave("bridge"), cluster_snapshot(world))}
    for gate in ("claim-pilot", "bridge"):
        assert results[gate].status == "held"
        assert not any(line.startswith("recorded by gate Job") for line in results[gate].proof)


def test_a_wave_without_probes_is_taken_settled(tmp_path: Path) -> None:
    # GIVEN the fleet's driver-validation wave, which renders no validation probe
    plan = plan_platform(load_platform(tmp_path, fleet_doc()))
    world = wave_world(plan, "validate")
    # THEN its cluster is the one the transition settled in, every step of it behind
    assert not any(w.probe for w in world.cluster.workloads)
    assert world.transition == "pilot-to-validate" and world.steps > 0 and world.observe is None


def test_a_replay_that_breaks_gives_no_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN probes that end at once and free their claims before the claim pilot's gate reads them
    monkeypatch.setattr(jobs, "holds_claim", lambda pod: False)
    plan = plan_platform(load_platform(tmp_path, fleet_doc()))
    # THEN a wave before it still has its cluster, and the wave the gate blocks has none to give
    assert wave_world(plan, "validate").target == "validate"
    with pytest.raises(ViolationFound) as stopped:
        wave_world(plan, "claims")
    assert stopped.value.violation.invariant == "sync-completes"
    assert "gate-claim-pilot" in stopped.value.violation.message
