"""Availability is a verdict: a declared workload with nowhere to run, outside its own move, is an
error in `check` and `synth` (GP280, GP290), a violation in `simulate` (`workload-disrupted`) and a
misfit in `capacity`, at the same wave and naming the same workload.

The plans are the issue's (#38): a vLLM Deployment pinned to a pool a drain wave empties and moving
only at the cutover, and a converted workload whose only DRA pool is a Karpenter pool with
`minNodes: 0` (Karpenter adds no node for a pod with claims).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gpuplatform.cli import main
from tests.specs import write_spec


def _run(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code != 70, result.stderr
    return result


def _vllm(moves_in: str, *, pinned: bool = True) -> dict[str, Any]:
    """Two static pools; A100 is drained by a drain wave, then moves; vLLM is pinned to the A100s."""
    doc: dict[str, Any] = {
        "apiVersion": "gpuplatform.dev/v1alpha1",
        "kind": "Platform",
        "metadata": {"name": "lab"},
        "spec": {
            "domain": "lab.example.com",
            "kubernetes": {"version": "1.36.1"},
            "gpuOperator": {"managed": True},
            "delivery": {"repoUrl": "https://git.example.com/lab.git", "engines": ["argocd", "flux"]},
            "draDriver": {"chartRepository": "oci://registry.example.com/charts"},
            "nodePools": [
                {"name": "h100", "nodes": ["h100-01"], "product": "H100-80GB", "migratesIn": "pilot"},
                {"name": "a100", "nodes": ["a100-01"], "product": "A100-40GB", "migratesIn": "move"},
            ],
            "tiers": [{"name": "any-gpu", "deviceType": "gpu"}],
            "tenants": [
                {
                    "name": "research",
                    "tiers": ["any-gpu"],
                    "groups": ["research-ops"],
                    "claimTemplates": [{"name": "one-gpu", "tier": "any-gpu"}],
                }
            ],
            "workloads": [
                {
                    "kind": "Deployment",
                    "namespace": "research",
                    "name": "vllm",
                    "tier": "any-gpu",
                    "movesIn": moves_in,
                }
            ],
            "waves": [
                {"name": "base", "stage": "baseline"},
                {"name": "pilot", "stage": "pilot-pool"},
                {"name": "validate", "stage": "driver-validation"},
                {
                    "name": "claims",
                    "stage": "native-claim-pilot",
                    "tiers": ["any-gpu"],
                    "tenants": ["research"],
                },
                {"name": "drain", "stage": "drain"},
                {"name": "move", "stage": "scale"},
                {"name": "cutover", "stage": "final-cutover"},
            ],
            "activeWave": "pilot",
        },
    }
    if pinned:
        doc["spec"]["workloads"][0]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}
    return doc


def _karpenter(scales_for_claims: bool | None) -> dict[str, Any]:
    """A static A100 pool and a Karpenter L40S pool with no floor; the workload's tier is L40S only."""
    doc = _vllm("apps", pinned=False)
    spec = doc["spec"]
    provisioner: dict[str, Any] = {"kind": "karpenter", "name": "gpu-l40s", "minNodes": 0, "maxNodes": 2}
    if scales_for_claims is not None:
        provisioner["scalesForClaims"] = scales_for_claims
    spec["nodePools"] = [
        {"name": "a100", "nodes": ["a100-01"], "product": "A100-40GB"},
        {
            "name": "l40s",
            "provisioner": provisioner,
            "product": "L40S",
            "gpusPerNode": 4,
            "migratesIn": "pilot",
        },
    ]
    spec["tiers"] = [{"name": "l40s", "productName": "NVIDIA L40S"}]
    spec["tenants"][0] |= {"tiers": ["l40s"], "claimTemplates": [{"name": "one-gpu", "tier": "l40s"}]}
    spec["workloads"][0] |= {"name": "infer", "tier": "l40s"}
    spec["waves"] = [
        {"name": "base", "stage": "baseline"},
        {"name": "pilot", "stage": "pilot-pool"},
        {"name": "validate", "stage": "driver-validation"},
        {"name": "claims", "stage": "native-claim-pilot", "tiers": ["l40s"], "tenants": ["research"]},
        {"name": "apps", "stage": "application"},
        {"name": "cutover", "stage": "final-cutover"},
    ]
    return doc


def _verdicts(spec: str) -> tuple[Result, Result, Result]:
    return _run("check", spec), _run("simulate", spec, "--format", "json"), _run("capacity", spec, "--all")


@pytest.mark.parametrize(
    ("doc", "wave", "workload"),
    [
        (_vllm("cutover"), 4, "research/vllm"),  # pending from the drain wave to the cutover
        (_karpenter(None), 4, "research/infer"),  # converted in apps; Karpenter adds no node for it
    ],
    ids=["vllm-pinned-to-a-drained-pool", "karpenter-min-nodes-0"],
)
def test_a_workload_with_nowhere_to_run_is_refused_by_every_command(
    tmp_path: Path, doc: dict[str, Any], wave: int, workload: str
) -> None:
    # GIVEN a plan that leaves a declared workload with nowhere to run from one wave on
    spec = str(write_spec(tmp_path / "lab.yaml", doc))
    # WHEN check, simulate and capacity judge it
    checked, simulated, capacity = _verdicts(spec)
    # THEN all three exit 1, at the same wave, naming the same workload
    assert (checked.exit_code, simulated.exit_code, capacity.exit_code) == (1, 1, 1)
    errors = [line for line in checked.stderr.splitlines() if line.startswith("error:")]
    assert any(f"spec.waves[{wave}]: GP280" in e and f"workload {workload}" in e for e in errors), errors
    assert any(f"spec.waves[{wave}]: GP290" in e and f"workload {workload}" in e for e in errors), errors
    report = json.loads(simulated.stdout)[0]
    name = doc["spec"]["waves"][wave]["name"]
    found = [t["violation"] for t in report["transitions"] if t["violation"] and t["to"] == name]
    assert found and {v["invariant"] for v in found} == {"workload-disrupted"}
    assert all(f"workload {workload} has nowhere to run" in v["message"] for v in found)
    assert f"wave {name}: does not fit at" in capacity.stdout and f"workload {workload}:" in capacity.stdout
    # AND synth refuses it (nothing written) unless the codes are allowed, which the lock records
    out = tmp_path / "out"
    assert _run("synth", spec, "--out", str(out)).exit_code == 1 and not out.exists()
    allowed = _run("synth", spec, "--out", str(out), "--allow", "GP280", "--allow", "GP290")
    assert allowed.exit_code == 0, allowed.stderr
    lock = json.loads((out / "lab" / "gpuplatform.lock.json").read_text())
    assert lock["overrides"] == ["GP280", "GP290"]


@pytest.mark.parametrize(
    "doc",
    [_vllm("claims", pinned=False), _karpenter(True)],
    ids=["vllm-unpinned-moves-before-the-drain", "karpenter-scales-for-claims"],
)
def test_the_same_plans_made_safe_pass_every_command(tmp_path: Path, doc: dict[str, Any]) -> None:
    # GIVEN the same plans with the workload free to run anywhere and converted before the drain, or a
    # Karpenter pool that adds nodes for claim pods
    spec = str(write_spec(tmp_path / "lab.yaml", doc))
    # WHEN check, simulate and capacity judge them THEN none refuses
    checked, simulated, capacity = _verdicts(spec)
    assert (checked.exit_code, simulated.exit_code, capacity.exit_code) == (0, 0, 0), checked.stderr


def _instance_type(declared: bool) -> dict[str, Any]:
    """vLLM pinned by `node.kubernetes.io/instance-type` to two A100 pools of one instance type: legacy on
    the one that moves last, converted once the other is on DRA; the pools declare their instance
    type or not (#38 item 9)."""
    doc = _vllm("claims", pinned=False)
    spec = doc["spec"]
    spec["workloads"][0]["nodeSelector"] = {"node.kubernetes.io/instance-type": "p4d.24xlarge"}
    spec["nodePools"] = [
        {"name": "a100-a", "nodes": ["a100-01"], "product": "A100-40GB", "migratesIn": "pilot"},
        {"name": "a100-b", "nodes": ["a100-02"], "product": "A100-40GB", "migratesIn": "move"},
    ]
    if declared:
        for pool in spec["nodePools"]:
            pool["instanceType"] = "p4d.24xlarge"
    spec["waves"] = [w for w in spec["waves"] if w["name"] != "drain"]
    return doc


def test_an_instance_type_selector_places_pods_on_the_pool_of_that_type(tmp_path: Path) -> None:
    # GIVEN vLLM pinned to an instance type, and the pool of that type declaring it
    spec = str(write_spec(tmp_path / "lab.yaml", _instance_type(True)))
    # THEN check, simulate and capacity place it there in every wave
    checked, simulated, capacity = _verdicts(spec)
    assert (checked.exit_code, simulated.exit_code, capacity.exit_code) == (0, 0, 0), checked.stderr
    # AND without the declared type no modelled node carries the label: all three say so, at the first wave
    undeclared = str(write_spec(tmp_path / "undeclared.yaml", _instance_type(False)))
    checked, simulated, capacity = _verdicts(undeclared)
    assert (checked.exit_code, simulated.exit_code, capacity.exit_code) == (1, 1, 1)
    assert "spec.waves[0]: GP280" in checked.stderr and "workload research/vllm" in checked.stderr
