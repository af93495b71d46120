"""Gate definitions: which gates a wave has, and their scripts run against a fake kubectl."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.gates import gate_reads, gate_script, gates_for_wave
from gpuplatform.model import Platform
from gpuplatform.plan.waves import Plan, plan_platform

pytestmark = pytest.mark.skipif(shutil.which("jq") is None, reason="the gate scripts need jq")


def test_every_wave_has_the_gates_its_state_calls_for(reference: Platform) -> None:
    plan = plan_platform(reference)
    for state in plan.waves:
        ids = {g.id for g in gates_for_wave(plan, state)}
        assert ("rollback-safety" in ids) == bool(state.legacy_pools), state.name
        assert ("allocator-exclusivity" in ids) == (state.driver_installed and bool(state.dra_pools)), (
            state.name
        )
        assert ("inventory" in ids) == (state.driver_installed and bool(state.dra_pools)), state.name
        assert ("claim-pilot" in ids) == state.validation, state.name
        phases = [g.phase for g in gates_for_wave(plan, state)]
        assert phases == sorted(phases, key=lambda p: p != "pre")


def test_gate_reads_are_read_only_resources() -> None:
    from gpuplatform.gates import GATES

    reads = {r for g in GATES for r in gate_reads(g)}
    assert reads == {
        ("", "nodes"),
        ("", "pods"),
        ("", "pods/log"),
        ("resource.k8s.io", "deviceclasses"),
        ("resource.k8s.io", "resourceclaims"),
        ("resource.k8s.io", "resourceslices"),
    }


def _fake_kubectl(tmp_path: Path, answers: dict[str, Any], logs: str = "") -> dict[str, str]:
    """A kubectl on PATH that answers `get <kind>` from `answers` and `logs` with `logs`."""
    data = tmp_path / "answers.json"
    data.write_text(json.dumps(answers))
    (tmp_path / "logs.txt").write_text(logs)
    script = tmp_path / "kubectl"
    script.write_text(
        "#!/bin/sh\n"
        f'DATA="{data}"\n'
        'case "$1" in\n'
        f'  logs) cat "{tmp_path / "logs.txt"}"; exit 0;;\n'
        "  get) kind=$2;;\n"
        "  *) exit 2;;\n"
        "esac\n"
        'if [ "$kind" = deviceclass ]; then jq -e --arg n "$3" \'.deviceclasses | index($n)\' "$DATA" >/dev/null; exit $?; fi\n'
        'if [ "$kind" = pod ] || [ "$kind" = resourceclaim ]; then jq --arg k "$kind" --arg n "$5" \'.[$k][$n]\' "$DATA"; exit 0; fi\n'
        'jq --arg k "$kind" \'{items: (.[$k] // [])}\' "$DATA"\n'
    )
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}


def _run(plan: Plan, wave: str, gate_id: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    state = plan.wave(wave)
    gate = next(g for g in gates_for_wave(plan, state) if g.id == gate_id)
    script = gate_script(gate, plan, state).replace("sleep 10", "deadline=0")  # no waiting in tests
    return subprocess.run(["dash", "-c", script], env=env, capture_output=True, text=True, timeout=30)


def _node(name: str, gpus: str | None) -> dict[str, Any]:
    allocatable = {"cpu": "64"} | ({"nvidia.com/gpu": gpus} if gpus is not None else {})
    return {"metadata": {"name": name}, "status": {"allocatable": allocatable}}


def _pod(name: str, node: str, namespace: str, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": {"nodeName": node},
        "status": {"phase": "Running"},
    }


KUBELET_PLUGIN = {"ownerReferences": [{"kind": "DaemonSet", "name": "dra-driver-nvidia-gpu-kubelet-plugin"}]}
DEVICE_PLUGIN = {"labels": {"app": "nvidia-device-plugin-daemonset"}}


@pytest.mark.parametrize(
    ("gpus", "pods", "holds", "message"),
    [
        ("0", [_pod("kp", "gpu-dra-01", "nvidia-dra-driver-gpu", **KUBELET_PLUGIN)], True, ""),
        (None, [_pod("kp", "gpu-dra-01", "nvidia-dra-driver-gpu", **KUBELET_PLUGIN)], True, ""),
        (
            "8",
            [_pod("kp", "gpu-dra-01", "nvidia-dra-driver-gpu", **KUBELET_PLUGIN)],
            False,
            "advertises nvidia.com/gpu=8",
        ),
        (
            "0",
            [
                _pod("kp", "gpu-dra-01", "nvidia-dra-driver-gpu", **KUBELET_PLUGIN),
                _pod("dp", "gpu-dra-01", "gpu-operator", **DEVICE_PLUGIN),
            ],
            False,
            "runs a device-plugin pod",
        ),
        ("0", [], False, "runs no DRA kubelet plugin"),
    ],
)
def test_allocator_exclusivity_script(
    reference: Platform, tmp_path: Path, gpus: str | None, pods: list[Any], holds: bool, message: str
) -> None:
    env = _fake_kubectl(
        tmp_path, {"nodes": [_node("gpu-dra-01", gpus), _node("gpu-legacy-01", "8")], "pods": pods}
    )
    result = _run(plan_platform(reference), "pilot-pool", "allocator-exclusivity", env)
    assert (result.returncode == 0) == holds, result.stderr
    assert message in result.stderr


def _claim(node: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "c1", "namespace": "team"},
        "status": {
            "allocation": {
                "devices": {"results": [{"driver": "gpu.nvidia.com", "pool": node, "device": "gpu-0"}]}
            }
        },
    }


@pytest.mark.parametrize(("node", "holds"), [("gpu-dra-01", True), ("gpu-legacy-01", False)])
def test_rollback_safety_script(reference: Platform, tmp_path: Path, node: str, holds: bool) -> None:
    env = _fake_kubectl(tmp_path, {"resourceclaims": [_claim(node)]})
    result = _run(plan_platform(reference), "driver-validation", "rollback-safety", env)
    assert (result.returncode == 0) == holds, result.stderr
    if not holds:
        assert "claim team/c1 is allocated on legacy node gpu-legacy-01" in result.stderr


@pytest.mark.parametrize(
    ("slices", "holds"),
    [([{"spec": {"driver": "gpu.nvidia.com", "nodeName": "gpu-dra-01"}}], True), ([], False)],
)
def test_inventory_script(reference: Platform, tmp_path: Path, slices: list[Any], holds: bool) -> None:
    env = _fake_kubectl(
        tmp_path,
        {"resourceslices": slices, "deviceclasses": ["nvidia-hopper-large-memory.platform.example.com"]},
    )
    result = _run(plan_platform(reference), "native-claim-pilot", "inventory", env)
    assert (result.returncode == 0) == holds, result.stderr


@pytest.mark.parametrize(
    ("logs", "holds"),
    [
        ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1234)\n", True),
        ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-9999)\n", False),
    ],
)
def test_claim_pilot_script_compares_runtime_and_slice_uuid(
    reference: Platform, tmp_path: Path, logs: str, holds: bool
) -> None:
    pod = {
        "metadata": {"name": "v-1"},
        "status": {
            "phase": "Succeeded",
            "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "v-1-gpu-x"}],
        },
    }
    answers = {
        "pods": [pod],
        "pod": {"v-1": pod},
        "resourceclaim": {"v-1-gpu-x": _claim("gpu-dra-01")},
        "resourceslices": [
            {
                "spec": {
                    "pool": {"name": "gpu-dra-01"},
                    "devices": [{"name": "gpu-0", "attributes": {"uuid": {"string": "GPU-1234"}}}],
                }
            }
        ],
    }
    result = _run(
        plan_platform(reference), "native-claim-pilot", "claim-pilot", _fake_kubectl(tmp_path, answers, logs)
    )
    assert (result.returncode == 0) == holds, result.stderr
