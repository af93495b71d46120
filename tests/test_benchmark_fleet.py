"""The benchmark fleet is a valid platform at small and large sizes (benchmarks time the valid path)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from gpuplatform.commands.check import check_platform
from gpuplatform.evidence.evaluate import evaluate_wave
from gpuplatform.load.stacks import load_stack
from gpuplatform.model.limits import MAX_WAVES
from gpuplatform.plan.transitions import transition
from gpuplatform.plan.waves import plan_platform
from gpuplatform.snapshot.read import load_snapshot
from tests.conftest import REPO


@pytest.mark.parametrize("nodes", ["11", "300"])
def test_the_benchmark_fleet_checks_clean(nodes: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the fleet stack at a size
    monkeypatch.setenv("FLEET_NODES", nodes)
    (loaded,) = load_stack(REPO / "benchmarks" / "fleet.py")
    # WHEN it is checked
    report = check_platform(loaded)
    # THEN no error: every tier, claim template and NIM selector matches, every rule holds
    assert report.errors == []
    platform = loaded.platform
    assert {p.product for p in platform.node_pools} >= {"H100-80GB", "A100-80GB", "H200-141GB", "L40S"}
    assert any(p.mig_layout for p in platform.node_pools) and any(p.provisioner for p in platform.node_pools)
    assert platform.workloads and platform.nim_services
    assert sum(len(p.nodes) for p in platform.node_pools) == int(nodes)
    assert all(row.modelled > 0 for row in report.rows)


@pytest.mark.parametrize("wave", ["application", "final-cutover"])
def test_the_benchmark_snapshot_is_healthy_so_evidence_times_the_held_path(
    wave: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the benchmark's snapshot of the 300-node fleet at a wave the benchmark times
    monkeypatch.setenv("FLEET_NODES", "300")
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import fleet_snapshot

    folder = fleet_snapshot.write(wave, tmp_path / wave)
    (loaded,) = load_stack(REPO / "benchmarks" / "fleet.py")
    plan = plan_platform(loaded.platform)
    # WHEN every gate and evidence check judges it
    results = evaluate_wave(plan, plan.wave(wave), load_snapshot(folder))
    # THEN every one holds, the bridge probe included
    assert {r.id: r.status for r in results} == {r.id: "held" for r in results}
    assert "bridge" in {r.id for r in results}


def test_the_fleet_at_the_wave_limit_moves_a_batch_of_pools_in_each_scale_wave(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the fleet with 32 waves, the platform's limit (`limit_speed.py` times it at 14,997 nodes),
    # large enough for a pool per scale wave
    monkeypatch.setenv("FLEET_NODES", "6500")
    monkeypatch.setenv("FLEET_WAVES", str(MAX_WAVES))
    (loaded,) = load_stack(REPO / "benchmarks" / "fleet.py")
    platform = loaded.platform
    # THEN it has that many waves, 24 of them `scale` waves that each move pools, and `plan` accepts
    # every step forward and back
    assert len(platform.waves) == MAX_WAVES
    scale = [w.name for w in platform.waves if w.stage == "scale"]
    assert len(scale) == MAX_WAVES - 8
    assert all(any(p.migrates_in == name for p in platform.node_pools) for name in scale)
    plan = plan_platform(platform)
    names = [w.name for w in platform.waves]
    for a, b in pairwise(names):
        assert not transition(plan, a, b).refusals and not transition(plan, b, a).refusals
