"""One allocator per GPU: GP101, GP102, GP120, GP121, GP190, GP210, GP211."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.labels import DEVICE_PLUGIN_DEPLOY_LABEL
from gpuplatform.render import handoff, helm_values, nodes, operators, validation
from tests.policy.helpers import codes, findings
from tests.specs import minimal_spec


def test_gp101_node_in_two_pools_is_located_at_the_second_listing(tmp_path: Path) -> None:
    # GIVEN gpu-01 listed by the legacy pool and by the DRA pool
    doc = minimal_spec()
    doc["spec"]["nodePools"][1]["nodes"] = ["gpu-02", "gpu-01"]
    # WHEN the rules run
    found = [p for p in findings(tmp_path, doc) if p.code == "GP101"]
    # THEN one error names the node and both pools, at the duplicate's path
    assert [(p.loc, p.severity) for p in found] == [("spec.nodePools[1].nodes[1]", "error")]
    assert "'gpu-01'" in found[0].message and "'old'" in found[0].message


def test_gp101_distinct_nodes_pass(tmp_path: Path) -> None:
    assert "GP101" not in codes(tmp_path, minimal_spec())


def test_gp102_reads_the_rendered_node_labels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a renderer regression that forgets device-plugin=false on DRA nodes
    original = nodes.node_labels

    def forgetful(platform: Any, pool: Any, mode: Any, *args: Any) -> dict[str, str]:
        labels = original(platform, pool, mode, *args)
        labels.pop(DEVICE_PLUGIN_DEPLOY_LABEL, None)
        return labels

    monkeypatch.setattr(nodes, "node_labels", forgetful)
    monkeypatch.setattr(handoff, "node_labels", forgetful)
    # WHEN the rules run
    found = [p for p in findings(tmp_path, minimal_spec()) if p.code == "GP102"]
    # THEN each DRA node is reported at its pool, in the DRA state its waves share: gpu-02 (from the
    # pilot), gpu-01 (at the cutover)
    where = {(p.loc, p.message.split(":")[0]) for p in found}
    assert ("spec.nodePools[1]", "nodes/new/dra/node_gpu-02.yaml") in where
    assert ("spec.nodePools[0]", "nodes/old/dra/node_gpu-01.yaml") in where
    assert ("spec.nodePools[1]", "handoff/01-pilot/nodepoolhandoff_new.yaml") in where
    assert all(
        (p.loc == "spec.nodePools[0]") == ("gpu-01" in p.message or " old " in p.message) for p in found
    )
    assert not any("00-base" in p.message for p in found)


def test_gp102_reads_the_karpenter_hand_off_of_provisioner_pools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a Karpenter-managed DRA pool and the same renderer regression
    original = nodes.node_labels

    def forgetful(platform: Any, pool: Any, mode: Any, *args: Any) -> dict[str, str]:
        labels = original(platform, pool, mode, *args)
        labels.pop(DEVICE_PLUGIN_DEPLOY_LABEL, None)
        return labels

    monkeypatch.setattr(nodes, "node_labels", forgetful)
    monkeypatch.setattr(handoff, "node_labels", forgetful)
    doc = minimal_spec()
    del doc["spec"]["nodePools"][1]["nodes"]
    doc["spec"]["nodePools"][1]["provisioner"] = {"kind": "karpenter", "name": "gpu-h100"}
    # WHEN / THEN the Karpenter NodePool patch is reported at the pool
    found = [p for p in findings(tmp_path, doc) if p.code == "GP102" and "provisioner gpu-h100" in p.message]
    assert found and {p.loc for p in found} == {"spec.nodePools[1]"}


def test_gp102_correct_labels_pass(tmp_path: Path) -> None:
    assert "GP102" not in codes(tmp_path, minimal_spec())


def _bridge_spec(*bridges: dict[str, Any], k8s: str = "1.36.1", chart: str = "0.4.1") -> dict[str, Any]:
    doc = minimal_spec()
    doc["spec"]["bridges"] = list(bridges)
    doc["spec"]["kubernetes"] = {"version": k8s}
    doc["spec"]["draDriver"]["chartVersion"] = chart
    doc["spec"]["waves"].insert(
        3, {"name": "bridge", "stage": "compatibility-bridge", "bridges": [b["name"] for b in bridges]}
    )
    return doc


def test_gp120_two_platform_bridges_for_one_name_are_an_error(tmp_path: Path) -> None:
    doc = _bridge_spec({"name": "a"}, {"name": "b"})
    found = [p for p in findings(tmp_path, doc) if p.code == "GP120"]
    assert [(p.loc, p.severity) for p in found] == [("spec.bridges[1].extendedResourceName", "error")]


def test_gp120_bridges_for_different_names_pass(tmp_path: Path) -> None:
    doc = _bridge_spec({"name": "a"}, {"name": "b", "extendedResourceName": "example.com/gpu"})
    assert "GP120" not in codes(tmp_path, doc)


def test_gp121_platform_bridge_next_to_an_unpatched_chart_class_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a renderer regression that drops the chart-class patch
    monkeypatch.setattr(operators, "chart_class_patches", lambda plan, state: [])
    found = [p for p in findings(tmp_path, _bridge_spec({"name": "a"})) if p.code == "GP121"]
    assert {(p.loc, p.severity) for p in found} == {("spec.bridges[0]", "warning")}
    assert "gpu.nvidia.com" in found[0].message


def test_gp121_the_patched_chart_class_claims_nothing(tmp_path: Path) -> None:
    assert "GP121" not in codes(tmp_path, _bridge_spec({"name": "a"}))


@pytest.mark.parametrize(
    ("bridge", "chart"),
    [({"name": "a", "source": "chart"}, "0.4.1"), ({"name": "a"}, "25.8.0")],
    ids=["chart-class-is-the-bridge", "chart-before-25.12"],
)
def test_gp121_no_overlap_with_the_chart_class_passes(
    tmp_path: Path, bridge: dict[str, Any], chart: str
) -> None:
    assert "GP121" not in codes(tmp_path, _bridge_spec(bridge, chart=chart))


def test_gp190_nodes_missing_from_the_snapshot(tmp_path: Path) -> None:
    found = [p for p in findings(tmp_path, minimal_spec(), frozenset({"gpu-01"})) if p.code == "GP190"]
    assert [p.loc for p in found] == ["spec.nodePools[1].nodes[0]"]


def test_gp190_all_nodes_present_or_no_snapshot_pass(tmp_path: Path) -> None:
    assert "GP190" not in codes(tmp_path, minimal_spec(), frozenset({"gpu-01", "gpu-02", "other"}))
    assert "GP190" not in codes(tmp_path, minimal_spec())


@pytest.mark.parametrize("engines", [["argocd"], ["flux"]])
def test_gp210_rendered_kubelet_plugin_without_the_pool_taint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engines: list[str]
) -> None:
    # GIVEN a renderer regression that leaves only a foreign toleration on the kubelet plugin
    monkeypatch.setattr(
        helm_values, "tolerations_for", lambda base, taints: [{"key": "other", "operator": "Exists"}]
    )
    doc = minimal_spec()
    doc["spec"]["delivery"]["engines"] = engines
    # WHEN the rules run / THEN every rendered DRA release is reported for the DRA taint
    found = [p for p in findings(tmp_path, doc) if p.code == "GP210"]
    assert {p.loc for p in found} == {"spec.draDriver.values.kubeletPlugin.tolerations"}
    assert any(
        "/00-operators/" in p.message and "gpu-scheduling.lab.example.com/mode=dra:NoSchedule" in p.message
        for p in found
    )


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "gpu-scheduling.lab.example.com/mode", "operator": "Exists"},
        {"key": "gpu-scheduling.lab.example.com/mode", "value": "dra", "effect": "NoSchedule"},
        {"operator": "Exists"},
    ],
)
def test_gp210_tolerated_taint_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toleration: dict[str, Any]
) -> None:
    monkeypatch.setattr(helm_values, "tolerations_for", lambda base, taints: [toleration])
    assert "GP210" not in codes(tmp_path, minimal_spec())


def test_gp210_team_tolerations_are_merged_with_the_pool_taint(tmp_path: Path) -> None:
    doc = minimal_spec()
    doc["spec"]["draDriver"]["values"] = {
        "kubeletPlugin": {"tolerations": [{"key": "other", "operator": "Exists"}]}
    }
    assert "GP210" not in codes(tmp_path, doc)


def _validated_spec() -> dict[str, Any]:
    doc = minimal_spec()
    doc["spec"]["validation"] = {"tenant": "team-a", "claimTemplate": "one-gpu"}
    return doc


def test_gp211_validation_job_without_tolerations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a renderer regression that drops the validation Job's tolerations
    monkeypatch.setattr(validation, "dra_pool_tolerations", lambda platform: [])
    # WHEN / THEN the rendered Job is reported for the DRA pool's taint
    found = [p for p in findings(tmp_path, _validated_spec()) if p.code == "GP211"]
    assert found and {p.loc for p in found} == {"spec.validation"}


def test_gp211_rendered_validation_job_tolerates_every_pool(tmp_path: Path) -> None:
    assert "GP211" not in codes(tmp_path, _validated_spec())
