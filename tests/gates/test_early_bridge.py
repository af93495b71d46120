"""early-bridge: a bridge live before a compatibility-bridge wave enables one, judged by the program
(the jq binding and the jq 1.6 executable) and by its twin alike."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpuplatform.evidence.evaluate import _document, evaluate_gates
from gpuplatform.evidence.verdict import jq_input
from gpuplatform.gates import EVIDENCE_CHECKS, gate_data
from gpuplatform.gates.programs import program
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.gate_facts import wave_data
from gpuplatform.render.validation import validation_jobs
from gpuplatform.snapshot.read import load_snapshot
from gpuplatform.testing import Cluster, pod, wave_cluster
from tests.gates.harness import fleet_doc, load_platform
from tests.gates.test_twins import _assert_alike, _lines

Mutation = Callable[[Cluster], None]
(EARLY_BRIDGE,) = [g for g in EVIDENCE_CHECKS if g.id == "early-bridge"]


@dataclass(frozen=True)
class Case:
    wave: str
    status: str
    finding: str
    mutate: Mutation


def _class_serves(name: str, resource: str = "nvidia.com/gpu") -> Mutation:
    def mutate(cluster: Cluster) -> None:
        cluster.list("deviceclasses").append(
            {"metadata": {"name": name}, "spec": {"extendedResourceName": resource}}
        )

    return mutate


def _bridged(gpus: int = 1, phase: str = "Running") -> Mutation:
    """An unchanged pod on the first DRA node, its `nvidia.com/gpu` served through a bridge claim."""

    def mutate(cluster: Cluster) -> None:
        node = next(n for n in cluster.list("nodes") if n["metadata"]["name"].startswith("l40s"))
        held = pod("unchanged", "team", node["metadata"]["name"], gpus=gpus, phase=phase)
        held["status"]["extendedResourceClaimStatus"] = {"resourceClaimName": "unchanged-gpu-abcde"}
        cluster.list("pods").append(held)

    return mutate


def _both(*mutations: Mutation) -> Mutation:
    def mutate(cluster: Cluster) -> None:
        for m in mutations:
            m(cluster)

    return mutate


def _unread(kind: str) -> Mutation:
    def mutate(cluster: Cluster) -> None:
        cluster.kinds[kind] = None

    return mutate


CASES: dict[str, Case] = {
    "a bridge class serves nvidia.com/gpu in the claims wave": Case(
        "claims",
        "broken",
        "DeviceClass legacy-bridge serves nvidia.com/gpu (spec.extendedResourceName) before a compatibility-bridge",
        _class_serves("legacy-bridge"),
    ),
    "the chart's class keeps extendedResourceName in the pilot wave": Case(
        "pilot", "broken", "DeviceClass gpu.nvidia.com serves nvidia.com/gpu", _class_serves("gpu.nvidia.com")
    ),
    "a pod holds nvidia.com/gpu through a bridge claim in the claims wave": Case(
        "claims", "broken", "holds nvidia.com/gpu through bridge claim unchanged-gpu-abcde", _bridged()
    ),
    "a finished bridged pod holds nothing": Case("claims", "held", "", _bridged(phase="Succeeded")),
    "a bridge claim for another resource is no GPU bridge": Case("claims", "held", "", _bridged(gpus=0)),
    "a class serving another resource is no GPU bridge": Case(
        "claims", "held", "", _class_serves("fpga", "example.com/fpga")
    ),
    "a healthy claims wave has no bridge": Case("claims", "held", "", lambda cluster: None),
    "the bridge wave allows a live bridge": Case(
        "bridge", "held", "", _both(_class_serves("legacy-bridge-live"), _bridged())
    ),
    "pods could not be read": Case("claims", "unknown", "pods could not be read", _unread("pods")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_program_and_its_twin_judge_an_early_bridge_alike(tmp_path: Path, name: str) -> None:
    # GIVEN a healthy fleet snapshot in the case's wave, with or without a live bridge
    case = CASES[name]
    platform = load_platform(tmp_path, fleet_doc())
    cluster = wave_cluster(platform, case.wave)
    case.mutate(cluster)
    snapshot = load_snapshot(cluster.write(tmp_path / "snap"))
    plan = plan_platform(platform)
    state = plan.wave(case.wave)
    # WHEN evidence judges it
    (result,) = evaluate_gates([EARLY_BRIDGE], plan, state, snapshot)
    # THEN the verdict says why, and the twin and the program (jq binding) say the same lines
    assert result.status == case.status, (result.findings, result.unknowns)
    said = result.findings if case.status == "broken" else result.unknowns
    assert not case.finding or any(case.finding in line for line in said), said
    _assert_alike({k: v for k, v in _lines(platform, case.wave, snapshot).items() if k == EARLY_BRIDGE.id})
    # and the jq 1.6 executable the gate image carries runs the program to the same lines
    if shutil.which("jq") is not None:
        data = gate_data(EARLY_BRIDGE, wave_data(plan, state, validation_jobs(plan, state).data))
        document = _document(set(EARLY_BRIDGE.kinds), snapshot)
        done = subprocess.run(
            ["jq", "-r", "--argjson", "data", json.dumps(data), program(EARLY_BRIDGE.id)],
            input=jq_input(document),
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout.splitlines() == _lines(platform, case.wave, snapshot)[EARLY_BRIDGE.id][0]
