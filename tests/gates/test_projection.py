"""Projecting Nodes and Pods to the fields the programs read never changes a verdict."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.evidence.summary import summarise
from gpuplatform.evidence.verdict import jq_input, run_programs
from gpuplatform.gates import EVIDENCE_CHECKS, gate_data, gates_for_wave
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.gate_facts import wave_data
from gpuplatform.render.validation import validation_jobs
from gpuplatform.snapshot import project as projection_module
from gpuplatform.snapshot.project import project, projector
from gpuplatform.snapshot.read import Snapshot
from tests.conftest import REPO

Kinds = dict[str, list[dict[str, Any]]]


def _unready_operand(kinds: Kinds) -> None:
    pod = next(p for p in kinds["pods"] if p["metadata"]["namespace"] == "gpu-operator")
    pod["status"]["containerStatuses"][0]["ready"] = False


def _terminating_claim_holder(kinds: Kinds) -> None:
    pod = next(p for p in kinds["pods"] if p["spec"].get("resourceClaims"))
    pod["metadata"]["deletionTimestamp"] = "2026-12-03T00:00:00Z"
    pod["status"]["phase"] = "Succeeded"


def _device_plugin_on_a_dra_node(kinds: Kinds) -> None:
    plugin = next(
        p for p in kinds["pods"] if p["metadata"]["name"].startswith("dra-driver-nvidia-gpu-kubelet")
    )
    plugin["metadata"]["labels"] = {"app": "nvidia-device-plugin-daemonset"}
    plugin["metadata"]["ownerReferences"][0]["name"] = "nvidia-device-plugin-daemonset"


def _odd_shapes(kinds: Kinds) -> None:
    kinds["pods"][1]["status"]["containerStatuses"] = None
    kinds["pods"][2]["metadata"]["ownerReferences"] = "not a list"
    kinds["pods"][3]["spec"]["nodeName"] = None
    kinds["nodes"][0]["status"] = {"allocatable": {"nvidia.com/gpu": "8", "nvidia.com/mig-1g.10gb": "0"}}


def _healthy(kinds: Kinds) -> None:
    return None


@pytest.mark.parametrize(
    "breaks",
    [_healthy, _unready_operand, _terminating_claim_holder, _device_plugin_on_a_dra_node, _odd_shapes],
)
@pytest.mark.parametrize("wave", ["application", "final-cutover"])
def test_every_gate_says_the_same_on_projected_nodes_and_pods(
    wave: str, breaks: Callable[[Kinds], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the benchmark fleet's snapshot (pods with every field kubectl prints), broken on request
    lines = _verdicts(wave, breaks, tmp_path, monkeypatch)
    # WHEN every gate runs on the whole Nodes and Pods and on their projection
    whole, projected = lines(lambda kind, items: items), lines(project)
    # THEN alike, and a break is seen
    assert projected == whole
    if breaks in (_unready_operand, _terminating_claim_holder, _device_plugin_on_a_dra_node):
        assert any(line.startswith("violation: ") for gate in whole for line in gate)


def test_a_projection_that_drops_a_read_field_changes_a_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an operand pod that is not ready, and a projection that forgets containers' readiness
    lines = _verdicts("final-cutover", _unready_operand, tmp_path, monkeypatch)
    reads = copy.deepcopy(projection_module.READS)
    del reads["pods"]["status"]["containerStatuses"]  # type: ignore[union-attr]
    monkeypatch.setattr(projection_module, "READS", reads)
    # THEN the verdicts differ: the test above would catch such a projection
    assert lines(project) != lines(lambda kind, items: items)


def _verdicts(
    wave: str, breaks: Callable[[Kinds], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[Callable[[str, list[Any]], list[Any]]], list[list[str]]]:
    """Every gate's lines on the fleet snapshot at `wave` (broken by `breaks`), Nodes and Pods
    given through a projection."""
    monkeypatch.setenv("FLEET_NODES", "40")
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import fleet_snapshot

    kinds, logs = fleet_snapshot.build(wave)
    breaks(kinds)
    snapshot = Snapshot(tmp_path, {**kinds}, logs=logs)
    (loaded,) = load_stack(REPO / "benchmarks" / "fleet.py")
    plan = plan_platform(loaded.platform)
    state = plan.wave(wave)
    facts = wave_data(plan, state, validation_jobs(plan, state).data)
    runs = [(g.id, g.kinds, gate_data(g, facts)) for g in [*gates_for_wave(plan, state), *EVIDENCE_CHECKS]]

    def lines(through: Callable[[str, list[Any]], list[Any]]) -> list[list[str]]:
        document: dict[str, Any] = {kind: through(kind, snapshot.items(kind) or []) for kind in kinds}
        document["resourceslices"] = summarise(document["resourceslices"], "resourceslices.json")
        return run_programs(runs, jq_input(document | {"logs": snapshot.runtime_logs()}))

    return lines


def test_the_projection_keeps_the_shape_it_does_not_expect_as_it_is() -> None:
    pods = [
        {
            "metadata": "x",
            "spec": {"nodeName": "n", "containers": [1], "hostNetwork": True},
            "status": {"containerStatuses": 3},
        }
    ]
    assert project("pods", pods) == [
        {"metadata": "x", "spec": {"nodeName": "n", "containers": [1]}, "status": {"containerStatuses": 3}}
    ]
    assert project("resourceclaims", pods) is pods


def test_the_projector_keeps_what_project_keeps_and_holds_equal_values_once() -> None:
    # GIVEN pods with equal labels, owners and statuses, odd shapes, and null or NaN where a value is read
    nan = float("nan")
    owner = {"kind": "ReplicaSet", "name": "web", "uid": "u", "apiVersion": "apps/v1"}
    pods: list[Any] = [
        {
            "metadata": {"name": f"p{i}", "labels": {"app": "web"}, "ownerReferences": [dict(owner)]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "c", "ready": True}]},
        }
        for i in range(3)
    ]
    pods += [
        {"metadata": {"labels": {"app": None}}, "status": {"phase": None}},
        {"metadata": {"labels": {"app": nan}}, "status": {"phase": nan}},
        {"metadata": {"labels": {"app": 1}}, "spec": {"nodeName": True}},
        {"metadata": {"labels": {"app": 1.0}}, "spec": {"nodeName": 1}},
        {"metadata": "x", "spec": ["n1"], "status": 3},
        "not an object",
    ]
    # WHEN projected batch by batch as a snapshot is read, and at once
    keep = projector("pods")
    assert keep is not None
    kept = keep(pods[:4]) + keep(pods[4:])
    # THEN the same values of the same types (null and NaN, 1, 1.0 and true told apart)
    assert repr(kept) == repr(project("pods", pods))
    assert [type(p["metadata"]["labels"]["app"]) for p in kept[3:7]] == [type(None), float, int, float]
    # AND equal values are one object
    assert kept[0]["status"] is kept[1]["status"] and kept[0]["spec"] is kept[2]["spec"]
    assert kept[0]["metadata"]["ownerReferences"] is kept[1]["metadata"]["ownerReferences"]
    assert kept[0]["metadata"] is not kept[1]["metadata"]
    assert projector("resourceclaims") is None
