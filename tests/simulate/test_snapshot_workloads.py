"""The model's snapshot shows each spec workload as its controller runs it: a pod per replica, owned
as the controller owns it, so the register and `capacity --snapshot` find each workload once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuplatform.capacity.run import stack_capacity
from gpuplatform.evidence.register import workload_rows
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.simulate.snapshot import cluster_snapshot, write_snapshot
from gpuplatform.simulate.wave_cluster import wave_world
from gpuplatform.snapshot.read import load_snapshot
from tests.simulate.helpers import sim_spec
from tests.specs import write_spec


def _workloads_spec() -> dict[str, Any]:
    doc = sim_spec()
    doc["spec"]["nodePools"][0]["gpusPerNode"] = 16
    common = {"namespace": "team-a", "gpus": 1, "tier": "full", "movesIn": "cutover"}
    doc["spec"]["workloads"] = [
        {"kind": "Deployment", "name": "serve", "replicas": 2, **common},
        {"kind": "StatefulSet", "name": "db", "replicas": 2, **common},
        {"kind": "CronJob", "name": "nightly", **common},
        {"kind": "Job", "name": "train", **common},
    ]
    return doc


def test_the_register_of_the_models_snapshot_finds_each_spec_workload_once(tmp_path: Path) -> None:
    # GIVEN the model's cluster in pilot, written as `gpuplatform snapshot` writes a cluster
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", _workloads_spec()))
    folder = tmp_path / "snapshot"
    write_snapshot(cluster_snapshot(wave_world(plan_platform(loaded.platform), "pilot")), folder, {})
    # THEN the register resolves every pod to its workload, with as many pods as it has replicas
    rows = {(r.kind, r.name): r.pods for r in workload_rows(load_snapshot(folder)) if r.namespace == "team-a"}
    assert rows == {
        ("Deployment", "serve"): 2,
        ("StatefulSet", "db"): 2,
        ("CronJob", "nightly"): 1,
        ("Job", "train"): 1,
    }
    # AND capacity on that snapshot counts them as the spec's workloads, not a second time (the
    # model's own unmigrated pods in gpu-legacy are what a cluster runs beside the spec: counted)
    (wave,) = stack_capacity([loaded], "pilot", False, str(folder))
    names = {d.name for m in wave.moments for d in m.demands}
    assert not [n for n in names if n.startswith("snapshot workload") and "team-a/" in n], names
    assert {"workload team-a/serve", "workload team-a/db", "workload team-a/nightly"} <= names
    assert wave.fits
