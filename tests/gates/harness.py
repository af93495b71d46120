"""One scenario, judged twice: by the gate Job's script (dash, a fake kubectl, real jq) and offline."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from gpuplatform.evidence.evaluate import evaluate_gate
from gpuplatform.evidence.verdict import GateResult
from gpuplatform.gates import GATES
from gpuplatform.labels import GATE_LABEL
from gpuplatform.load.stacks import load_stack
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.gate_jobs import (
    FACTS_FILE,
    FACTS_PATH,
    PROGRAMS_PATH,
    gate_programs,
    render_gate_jobs,
)
from gpuplatform.snapshot.read import load_snapshot
from gpuplatform.testing import Cluster
from tests.specs import write_spec

FAKE = Path(__file__).with_name("fake_kubectl.py")

#: A mixed fleet: a static legacy pool, a Karpenter pool and an EKS node group that move to DRA.
FLEET: dict[str, Any] = {
    "apiVersion": "gpuplatform.dev/v1alpha1",
    "kind": "Platform",
    "metadata": {"name": "fleet"},
    "spec": {
        "domain": "fleet.example.com",
        "draDriver": {"chartRepository": "oci://registry.example.com/charts"},
        "delivery": {"engines": ["argocd", "flux"], "repoUrl": "https://git.example.com/fleet.git"},
        "nodePools": [
            {"name": "a100", "nodes": ["a100-01", "a100-02"], "product": "A100-80GB", "gpusPerNode": 8},
            {
                "name": "l40s",
                "provisioner": {"kind": "karpenter", "name": "gpu-l40s"},
                "product": "L40S",
                "gpusPerNode": 4,
                "migratesIn": "pilot",
            },
            {
                "name": "h100",
                "provisioner": {"kind": "node-group", "name": "h100-ng", "cloud": "eks"},
                "product": "H100-80GB",
                "gpusPerNode": 8,
                "migratesIn": "app",
            },
        ],
        "tiers": [
            {"name": "ada", "architecture": "Ada Lovelace"},
            {"name": "hopper", "architecture": "Hopper", "minMemory": "79Gi"},
        ],
        "bridges": [{"name": "legacy-bridge"}],
        "tenants": [
            {
                "name": "pilot",
                "tiers": ["ada", "hopper"],
                "groups": ["pilot-ops"],
                "claimTemplates": [{"name": "one-ada", "tier": "ada"}],
            }
        ],
        "validation": {"tenant": "pilot", "claimTemplate": "one-ada"},
        "waves": [
            {"name": "base", "stage": "baseline"},
            {"name": "pilot", "stage": "pilot-pool"},
            {"name": "validate", "stage": "driver-validation"},
            {"name": "claims", "stage": "native-claim-pilot", "tiers": ["ada"], "tenants": ["pilot"]},
            {"name": "bridge", "stage": "compatibility-bridge", "bridges": ["legacy-bridge"]},
            {"name": "app", "stage": "application", "tiers": ["hopper"]},
            {"name": "cutover", "stage": "final-cutover"},
        ],
        "activeWave": "claims",
    },
}


def fleet_doc() -> dict[str, Any]:
    return copy.deepcopy(FLEET)


def load_platform(tmp_path: Path, doc: dict[str, Any]) -> Platform:
    path = write_spec(tmp_path / f"{doc['metadata']['name']}.yaml", doc)
    return load_stack(path)[0].platform


def offline(platform: Platform, wave: str, gate_id: str, cluster: Cluster, folder: Path) -> GateResult:
    plan = plan_platform(platform)
    gate = next(g for g in GATES if g.id == gate_id)
    return evaluate_gate(gate, plan, plan.wave(wave), load_snapshot(cluster.write(folder)))


def in_cluster(
    platform: Platform, wave: str, gate_id: str, cluster: Cluster, folder: Path, *, stuck: bool = False
) -> subprocess.CompletedProcess[str]:
    """The gate Job as rendered, one attempt, against `cluster` served by the fake kubectl: its
    program from the platform's programs ConfigMap, its facts from its own, its environment."""
    plan = plan_platform(platform)
    objects = render_gate_jobs(plan, plan.wave(wave))
    [job] = [o for o in objects if o["kind"] == "Job" and o["metadata"]["labels"].get(GATE_LABEL) == gate_id]
    [facts] = [
        o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == job["metadata"]["name"]
    ]
    container = job["spec"]["template"]["spec"]["containers"][0]
    script = gate_programs(plan, wave)["data"][container["command"][1].removeprefix(PROGRAMS_PATH + "/")]
    for slow, quick in (("sleep 10", ":"), ("sleep 5", ":"), ("+ 300 ))", "+ 0 ))")):
        assert slow in script
        script = script.replace(slow, quick)
    cluster.write(folder)
    (folder / "gate.sh").write_text(script)
    (folder / FACTS_FILE).write_text(facts["data"][FACTS_FILE])
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "kubectl").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    (bin_dir / "kubectl").chmod(0o755)
    job_env = {e["name"]: e["value"] for e in container["env"]}
    assert job_env["DATA_FILE"] == f"{FACTS_PATH}/{FACTS_FILE}"
    env = {
        **os.environ,
        **job_env,
        "DATA_FILE": str(folder / FACTS_FILE),
        "TIMEOUT": "0",
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_CLUSTER": str(folder),
        "TMPDIR": str(folder),
    }
    if stuck:
        env["FAKE_CLAIM_STUCK"] = "1"
    return subprocess.run(
        ["dash", str(folder / "gate.sh")], env=env, capture_output=True, text=True, timeout=60
    )
