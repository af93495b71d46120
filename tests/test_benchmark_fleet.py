"""The benchmark fleet is a valid platform at small and large sizes (benchmarks time the valid path)."""

from __future__ import annotations

import pytest

from gpuplatform.load.stacks import load_stack
from gpuplatform.policy.check import check_platform
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
