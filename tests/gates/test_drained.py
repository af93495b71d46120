"""The drain check holds a pod to every way it may hold a GPU: any `nvidia.com/*` resource, a claim.

One definition (`holds_gpu` in the gates' jq prelude) is run three ways: by the runbook's drain and
rollback commands (`kubectl get pods ... | jq`), by the `drained` evidence check of a drain wave,
and by that check's Python twin. A pod holding a MIG slice, a time-sliced or renamed resource, an
init container's GPU or a resource claim blocks each of them; a pod with only cpu passes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jq
import pytest

from gpuplatform.evidence.evaluate import evaluate_wave
from gpuplatform.load.stacks import load_stack
from gpuplatform.model.platform import Platform
from gpuplatform.plan.steps import transition_steps
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.runbook_pools import GPU_PODS, HOLDS_GPU_JQ, pool_actions
from gpuplatform.snapshot.read import load_snapshot
from gpuplatform.testing import Cluster, pod, wave_cluster
from tests.gates.test_twins import _lines
from tests.specs import minimal_spec, write_spec


def _platform(tmp_path: Path) -> Platform:
    """The minimal spec with a drain wave that empties pool `old` (A100, MIG) before the cutover."""
    doc = minimal_spec()
    doc["spec"]["nodePools"][0]["migLayout"] = ["1g.5gb"] * 7
    doc["spec"]["waves"].insert(3, {"name": "drain", "stage": "drain"})
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    return loaded.platform


def _holding(name: str, resources: dict[str, str], *, init: bool = False, **spec: Any) -> dict[str, Any]:
    held = pod(name, "team-a", "gpu-01", **spec)
    container = {"name": "main", "image": "busybox", "resources": {"limits": resources}}
    if init:
        held["spec"]["initContainers"] = [container]
    else:
        held["spec"]["containers"] = [container]
    return held


HOLDERS = {
    "mig": _holding("mig", {"nvidia.com/mig-1g.5gb": "1"}),
    "shared": _holding("shared", {"nvidia.com/gpu.shared": "2"}),
    "renamed": _holding("renamed", {"nvidia.com/a100-large": "1"}),
    "whole-init": _holding("whole-init", {"nvidia.com/gpu": "1"}, init=True),
    "claim": _holding("claim", {"cpu": "1"}, resourceClaims=[{"name": "gpu", "resourceClaimName": "c"}]),
}
PASSERS = {
    "cpu": _holding("cpu", {"cpu": "1", "memory": "1Gi"}),
    "zero": _holding("zero", {"nvidia.com/gpu": "0"}),
    "finished": _holding("finished", {"nvidia.com/mig-1g.5gb": "1"}, phase="Succeeded"),
}


def _runbook_jq(pods: list[dict[str, Any]]) -> list[str]:
    """What the runbook's check prints for these pods (kubectl's field selector drops finished pods)."""
    live = [p for p in pods if p["status"]["phase"] not in ("Succeeded", "Failed")]
    return [str(line) for line in jq.compile(HOLDS_GPU_JQ).input_value({"items": live}).all()]


def _drained(platform: Platform) -> Cluster:
    """The model's cluster of the drain wave: the replay drains pool `old` after the wave's sync as the
    runbook says (`drain-pools`), so the runbook's check finds no GPU pod on the pool's node."""
    cluster = wave_cluster(platform, "drain")
    assert _runbook_jq(cluster.pods_on("gpu-01")) == []
    return cluster


@pytest.mark.parametrize("name", sorted(HOLDERS))
def test_a_pod_holding_any_nvidia_resource_or_a_claim_blocks_the_drain(tmp_path: Path, name: str) -> None:
    platform = _platform(tmp_path)
    cluster = _drained(platform)
    cluster.list("pods").append(HOLDERS[name])
    assert _runbook_jq([HOLDERS[name]]) == [f"team-a/{name}"]
    lines = _lines(platform, "drain", load_snapshot(cluster.write(tmp_path / "snap")))
    twin, by_jq = lines["drained"]
    assert twin == by_jq
    assert [line for line in twin if line.startswith("violation: ")] == [
        f"violation: pod team-a/{name} on node gpu-01 of pool old, which this wave drains, holds "
        + {
            "mig": "nvidia.com/mig-1g.5gb",
            "shared": "nvidia.com/gpu.shared",
            "renamed": "nvidia.com/a100-large",
            "whole-init": "nvidia.com/gpu",
            "claim": "a resource claim",
        }[name]
    ]


def test_pods_with_only_cpu_a_zero_count_or_finished_pass_the_drain(tmp_path: Path) -> None:
    platform = _platform(tmp_path)
    cluster = _drained(platform)
    cluster.list("pods").extend(PASSERS.values())
    assert _runbook_jq(list(PASSERS.values())) == []
    twin, by_jq = _lines(platform, "drain", load_snapshot(cluster.write(tmp_path / "snap")))["drained"]
    assert (
        twin
        == by_jq
        == [
            "proof: pool old: no live pod on its 1 node(s) holds an nvidia.com/* resource or a resource claim"
        ]
    )


def test_the_drained_check_belongs_to_drain_waves_only(tmp_path: Path) -> None:
    platform = _platform(tmp_path)
    cluster = wave_cluster(platform, "claims")
    cluster.list("pods").append(HOLDERS["mig"])
    plan = plan_platform(platform)
    snapshot = load_snapshot(cluster.write(tmp_path / "snap"))
    assert "drained" not in [r.id for r in evaluate_wave(plan, plan.wave("claims"), snapshot)]
    drained = [r for r in evaluate_wave(plan, plan.wave("drain"), snapshot) if r.id == "drained"]
    assert [r.status for r in drained] == ["broken"]


def test_the_runbook_drain_and_rollback_checks_run_the_same_definition(tmp_path: Path) -> None:
    plan = plan_platform(_platform(tmp_path))
    claims, drain, cutover = plan.wave("claims"), plan.wave("drain"), plan.wave("cutover")
    commands = [
        c
        for step in transition_steps(plan, claims, drain)
        if step.action == "drain-pools"
        for a in pool_actions(plan, claims, drain, step)
        for c in a.commands
    ]
    back = [
        c
        for step in transition_steps(plan, cutover, drain)
        if step.action == "release-claims"
        for a in pool_actions(plan, cutover, drain, step)
        for c in a.commands
    ]
    for found in (commands, back):
        assert any(GPU_PODS in c for c in found), found
