"""The benchmark fleet is a valid platform at small and large sizes (benchmarks time the valid path)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplatform.commands.check import check_platform
from gpuplatform.evidence.evaluate import evaluate_wave
from gpuplatform.load.stacks import load_stack
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
