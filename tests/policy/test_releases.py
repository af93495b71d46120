"""Version gates: GP110-GP114, GP170, GP180."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.policy.helpers import codes, findings
from tests.specs import minimal_spec


def _spec(**spec: Any) -> dict[str, Any]:
    doc = minimal_spec()
    for key, value in spec.items():
        if isinstance(value, dict) and isinstance(doc["spec"].get(key), dict):
            doc["spec"][key].update(value)
        else:
            doc["spec"][key] = value
    return doc


def _bridged(version: str, gates: dict[str, bool] | None = None) -> dict[str, Any]:
    doc = _spec(kubernetes={"version": version, "featureGates": gates or {}}, bridges=[{"name": "legacy"}])
    doc["spec"]["waves"].insert(3, {"name": "bridge", "stage": "compatibility-bridge", "bridges": ["legacy"]})
    return doc


def test_gp110_kubernetes_below_the_minimum(tmp_path: Path) -> None:
    found = [p for p in findings(tmp_path, _spec(kubernetes={"version": "1.34.1"})) if p.code == "GP110"]
    assert [p.loc for p in found] == ["spec.kubernetes.version"]
    assert "1.34.2" in found[0].message


def test_gp110_minimum_release_passes(tmp_path: Path) -> None:
    assert "GP110" not in codes(tmp_path, _spec(kubernetes={"version": "1.34.2"}))


@pytest.mark.parametrize("source", ["platform", "chart"])
def test_gp111_bridge_on_135_without_the_gate(tmp_path: Path, source: str) -> None:
    # a chart's class loses extendedResourceName on 1.35 as the platform's does (found by
    # checking the reference stack on 1.35: only simulate's GP290 refused it, as an unschedulable probe)
    doc = _bridged("1.35.2")
    doc["spec"]["bridges"][0]["source"] = source
    found = [p for p in findings(tmp_path, doc) if p.code == "GP111"]
    assert [(p.loc, p.severity) for p in found] == [("spec.bridges[0]", "error")]


@pytest.mark.parametrize(
    ("version", "gates"), [("1.35.2", {"DRAExtendedResource": True}), ("1.36.1", {})], ids=["gate-on", "1.36"]
)
def test_gp111_bridge_with_the_gate_passes(tmp_path: Path, version: str, gates: dict[str, bool]) -> None:
    assert "GP111" not in codes(tmp_path, _bridged(version, gates))


@pytest.mark.parametrize(
    ("field", "value", "loc"),
    [
        ("gpuOperator", {"version": "25.10.1"}, "spec.gpuOperator.version"),
        ("gpuOperator", {"driverVersion": "570.172.08"}, "spec.gpuOperator.driverVersion"),
        ("draDriver", {"chartVersion": "0.3.0"}, "spec.draDriver.chartVersion"),
    ],
)
def test_gp112_component_below_the_baseline(
    tmp_path: Path, field: str, value: dict[str, str], loc: str
) -> None:
    found = [p for p in findings(tmp_path, _spec(**{field: value})) if p.code == "GP112"]
    assert [p.loc for p in found] == [loc]


def test_gp112_baseline_releases_pass(tmp_path: Path) -> None:
    doc = _spec(
        gpuOperator={"version": "26.3.0", "driverVersion": "580.65.06"}, draDriver={"chartVersion": "0.4.0"}
    )
    assert "GP112" not in codes(tmp_path, doc)


@pytest.mark.parametrize(
    ("gate", "fragment"),
    [
        ("ConsumableShares", "main branch only"),
        ("NoSuchGate", "unknown"),
        ("DynamicMIG", "DRAPartitionableDevices"),
    ],
)
def test_gp113_driver_gate_the_release_or_cluster_lacks(tmp_path: Path, gate: str, fragment: str) -> None:
    doc = _spec(
        draDriver={"featureGates": {gate: True}},
        kubernetes={"featureGates": {"DRAPartitionableDevices": False}},
    )
    found = [p for p in findings(tmp_path, doc) if p.code == "GP113"]
    assert [p.loc for p in found] == [f"spec.draDriver.featureGates.{gate}"]
    assert fragment in found[0].message


def test_gp113_released_gate_passes(tmp_path: Path) -> None:
    assert "GP113" not in codes(tmp_path, _spec(draDriver={"featureGates": {"DeviceMetadata": True}}))


def test_gp114_unknown_kubernetes_gate_is_a_warning(tmp_path: Path) -> None:
    found = [
        p
        for p in findings(tmp_path, _spec(kubernetes={"featureGates": {"DRAExtendedResources": True}}))
        if p.code == "GP114"
    ]
    assert [(p.loc, p.severity) for p in found] == [
        ("spec.kubernetes.featureGates.DRAExtendedResources", "warning")
    ]


def test_gp114_known_gate_passes(tmp_path: Path) -> None:
    assert "GP114" not in codes(tmp_path, _spec(kubernetes={"featureGates": {"DRAExtendedResource": True}}))


@pytest.mark.parametrize(
    "operator",
    [
        {"mode": "gpuCluster", "version": "26.3.1"},
        {"mode": "gpuCluster", "version": "26.7.0"},
        {"values": {"clusterPolicy": {"deployCR": True}, "gpuCluster": {"deployCR": True}}},
    ],
    ids=["gpucluster-too-old", "gpucluster-plus-dra-release", "values-deploy-both"],
)
def test_gp170_cluster_policy_and_gpucluster_mixed(tmp_path: Path, operator: dict[str, Any]) -> None:
    assert "GP170" in codes(tmp_path, _spec(gpuOperator=operator))


def test_gp170_cluster_policy_alone_passes(tmp_path: Path) -> None:
    assert "GP170" not in codes(
        tmp_path, _spec(gpuOperator={"values": {"clusterPolicy": {"deployCR": True}}})
    )


def test_gp180_bridge_on_a_scheduler_without_the_explicit_zero_fix(tmp_path: Path) -> None:
    found = [
        p for p in findings(tmp_path, _bridged("1.34.3", {"DRAExtendedResource": True})) if p.code == "GP180"
    ]
    assert [p.loc for p in found] == ["spec.waves[3].bridges"]


def test_gp180_fixed_scheduler_or_no_bridge_passes(tmp_path: Path) -> None:
    assert "GP180" not in codes(tmp_path, _bridged("1.35.0", {"DRAExtendedResource": True}))
    assert "GP180" not in codes(tmp_path, _spec(kubernetes={"version": "1.34.3"}))
