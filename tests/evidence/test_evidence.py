"""Evidence: every gate holds on a healthy snapshot and breaks on the fixture made to break it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuplatform.cli import main
from gpuplatform.evidence.snapshot import load_snapshot
from gpuplatform.gates.evaluate import evaluate_wave
from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from tests.conftest import REPO
from tests.evidence.builders import Cluster, claim, device_plugin_pod, node

STACK = str(REPO / "stacks" / "reference.py")


def _results(
    reference: Platform, cluster: Cluster, tmp_path: Path, wave: str = "native-claim-pilot"
) -> dict[str, Any]:
    plan = plan_platform(reference)
    results = evaluate_wave(plan, plan.wave(wave), load_snapshot(cluster.write(tmp_path / "snap")))
    return {r.id: r for r in results}


def test_healthy_snapshot_holds_every_gate(reference: Platform, tmp_path: Path) -> None:
    results = _results(reference, Cluster.healthy(), tmp_path)
    assert {k: r.status for k, r in results.items()} == {
        "rollback-safety": "held",
        "allocator-exclusivity": "held",
        "claim-pilot": "held",
        "inventory": "held",
        "claim-placement": "held",
        "cleanup": "held",
        "spec-nodes-exist": "held",
    }
    assert any("seen by the container" in p for p in results["claim-pilot"].proof)


def _break(kind: str, change: Callable[[list[dict[str, Any]]], None]) -> Cluster:
    cluster = Cluster.healthy()
    items = cluster.kinds[kind]
    assert items is not None
    change(items)
    return cluster


BREAKS: dict[str, tuple[Cluster, str, str]] = {
    "device plugin on a DRA node": (
        _break("pods", lambda pods: pods.append(device_plugin_pod("gpu-dra-01"))),
        "allocator-exclusivity",
        "TWO ALLOCATORS",
    ),
    "gpus still allocatable": (
        _break("nodes", lambda nodes: nodes.__setitem__(1, node("gpu-dra-01", gpus="8"))),
        "allocator-exclusivity",
        "TWO ALLOCATORS",
    ),
    "no kubelet plugin": (
        _break("pods", lambda pods: pods.pop(1)),
        "allocator-exclusivity",
        "runs no DRA kubelet plugin",
    ),
    "no slice": (
        _break("resourceslices", lambda s: s.clear()),
        "inventory",
        "publishes no gpu.nvidia.com ResourceSlice",
    ),
    "wrong product": (
        _break(
            "resourceslices",
            lambda s: s[0]["spec"]["devices"][0]["attributes"].__setitem__(
                "productName", {"string": "NVIDIA A100-SXM4-40GB"}
            ),
        ),
        "inventory",
        "pool dra-pilot declares",
    ),
    "claim on legacy node": (
        _break("resourceclaims", lambda c: c.append(claim("old", "ml", "gpu-legacy-01"))),
        "rollback-safety",
        "claim ml/old is allocated on legacy node gpu-legacy-01",
    ),
    "stale reservation": (
        _break("resourceclaims", lambda c: c.append(claim("stale", "ml", "gpu-dra-01", reserved_uid="gone"))),
        "cleanup",
        "no longer exists",
    ),
    "phantom node": (
        _break("nodes", lambda nodes: nodes.pop(0)),
        "spec-nodes-exist",
        "node gpu-legacy-01 of pool legacy is not in the cluster",
    ),
}


@pytest.mark.parametrize("case", sorted(BREAKS))
def test_each_failure_breaks_its_gate(reference: Platform, tmp_path: Path, case: str) -> None:
    cluster, gate, finding = BREAKS[case]
    result = _results(reference, cluster, tmp_path)[gate]
    assert result.status == "broken"
    assert any(finding in f for f in result.findings), result.findings


def test_runtime_uuid_mismatch_breaks_the_claim_pilot(reference: Platform, tmp_path: Path) -> None:
    cluster = Cluster.healthy()
    cluster.nvidia_smi = {
        k: "name, memory.total [MiB], uuid\nNVIDIA H100 80GB HBM3, 81559 MiB, GPU-other\n"
        for k in cluster.nvidia_smi
    }
    assert _results(reference, cluster, tmp_path)["claim-pilot"].status == "broken"


def test_a_missing_kind_is_unknown_never_held(reference: Platform, tmp_path: Path) -> None:
    cluster = Cluster.healthy()
    cluster.kinds["resourceclaims"] = None
    results = _results(reference, cluster, tmp_path)
    assert results["rollback-safety"].status == "unknown"
    assert results["claim-placement"].status == "unknown"


def test_cli_exit_codes_and_formats(tmp_path: Path) -> None:
    healthy = Cluster.healthy().write(tmp_path / "ok")
    runner = CliRunner()
    base = ["evidence", STACK, "--platform", "reference", "--wave"]
    result = runner.invoke(main, [*base, "native-claim-pilot", "--snapshot", str(healthy)])
    assert result.exit_code == 0, result.output
    assert "All gates hold." in result.stdout
    assert "| `allocator-exclusivity` | held |" in result.stdout
    broken = BREAKS["device plugin on a DRA node"][0].write(tmp_path / "bad")
    result = runner.invoke(main, [*base, "native-claim-pilot", "--snapshot", str(broken), "--format", "json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["held"] is False
    assert [g["status"] for g in report["gates"] if g["id"] == "allocator-exclusivity"] == ["broken"]
    assert runner.invoke(main, [*base, "nope", "--snapshot", str(healthy)]).exit_code == 2
    assert runner.invoke(main, [*base, "baseline", "--snapshot", str(tmp_path / "none")]).exit_code == 2
    ambiguous = runner.invoke(main, ["evidence", STACK, "--wave", "baseline", "--snapshot", str(healthy)])
    assert ambiguous.exit_code == 2 and "choose one" in ambiguous.stderr
