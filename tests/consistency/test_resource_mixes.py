"""Every command over every mix of device-plugin resources a legacy workload may hold: none crashes.

The device plugin advertises `nvidia.com/gpu`, `nvidia.com/mig-<profile>` (MIG `mixed` strategy),
time-sliced or MPS replicas renamed `nvidia.com/gpu.shared` by default, and any `rename` a team
configured (NVIDIA/k8s-device-plugin `api/config/v1`, `gates/matchers.py`). A workload of each kind
next to the others, on a pool with and without a MIG layout, must give findings, never exit 70.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gpuplatform.cli import main
from gpuplatform.load.stacks import load_stack
from gpuplatform.testing import Cluster, pod, wave_cluster
from tests.specs import minimal_spec, write_spec

RESOURCES = {
    "whole": "nvidia.com/gpu",
    "mig": "nvidia.com/mig-3g.20gb",
    "shared": "nvidia.com/gpu.shared",
    "renamed": "nvidia.com/a100-large",
}
#: Every pair of kinds (each kind once with each other), and all four together.
MIXES = [*combinations(RESOURCES, 2), tuple(RESOURCES)]


def _spec(kinds: tuple[str, ...], mig_pool: bool, bridged: bool) -> dict[str, Any]:
    doc = minimal_spec()
    spec = doc["spec"]
    spec["nodePools"][0]["gpusPerNode"] = 8  # room for every mix's pods once the pilot node is drained
    if mig_pool:
        spec["nodePools"][0]["migLayout"] = ["3g.20gb", "3g.20gb"]
    if bridged:
        spec["bridges"] = [
            {"name": f"bridge-{kind}", "extendedResourceName": RESOURCES[kind]} for kind in kinds
        ]
        spec["waves"].insert(
            3,
            {
                "name": "bridge",
                "stage": "compatibility-bridge",
                "bridges": [b["name"] for b in spec["bridges"]],
            },
        )
    spec["workloads"] = [
        {
            "kind": "Deployment",
            "namespace": "team-a",
            "name": f"uses-{kind}",
            "tier": "full",
            "movesIn": "claims",
            "resource": RESOURCES[kind],
            "replicas": 2,
        }
        for kind in kinds
    ]
    return doc


def _run(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code != 70, f"{' '.join(args[:1])} crashed: {result.stderr}"
    return result


@pytest.mark.parametrize("bridged", [False, True], ids=["", "bridged"])
@pytest.mark.parametrize("mig_pool", [False, True], ids=["whole-pool", "mig-pool"])
@pytest.mark.parametrize("kinds", MIXES, ids=lambda k: "+".join(k))
def test_no_command_crashes_on_a_resource_mix(
    tmp_path: Path, kinds: tuple[str, ...], mig_pool: bool, bridged: bool
) -> None:
    spec = str(write_spec(tmp_path / "lab.yaml", _spec(kinds, mig_pool, bridged)))
    checked = _run("check", spec)
    assert checked.exit_code in (0, 1), checked.stderr
    for wave in ("pilot", "claims"):
        _run("capacity", spec, "--wave", wave)
    _run("capacity", spec, "--all")
    if bridged:
        _run("capacity", spec, "--wave", "bridge")
    _run("plan", spec)
    _run("plan", spec, "--from", "pilot", "--to", "claims")
    _run("synth", spec, "--out", str(tmp_path / "out"))
    _run("diff", spec, "--out", str(tmp_path / "out"))
    _run("diff", spec, "--waves", "pilot", "claims")
    snapshot = _snapshot(Path(spec), kinds).write(tmp_path / "snapshot")
    _run("evidence", spec, "--wave", "claims", "--snapshot", str(snapshot))
    _run("capacity", spec, "--all", "--snapshot", str(snapshot))
    _run("check", spec, "--snapshot", str(snapshot))
    _run("inventory", "register", str(snapshot))
    _run("simulate", spec, "--from", "pilot", "--to", "claims")
    _run("simulate", spec, "--from", "pilot", "--to", "claims", "--snapshot", str(snapshot))


def _snapshot(spec: Path, kinds: tuple[str, ...]) -> Cluster:
    """The platform's healthy cluster in its claims wave, the legacy node advertising every resource
    of the mix and running a pod that holds each."""
    platform = load_stack(spec)[0].platform
    cluster = wave_cluster(platform, "claims")
    legacy = cluster.named("nodes", "gpu-01")
    legacy["status"]["allocatable"] |= {RESOURCES[k]: "4" for k in kinds}
    for kind in kinds:
        held = pod(f"uses-{kind}-0", "team-a", "gpu-01")
        held["spec"]["containers"][0]["resources"] = {"limits": {RESOURCES[kind]: "1"}}
        cluster.list("pods").append(held)
    return cluster
