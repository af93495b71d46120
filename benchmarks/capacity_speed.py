"""Benchmark: `gpuplatform capacity --all` of the 2,000-node fleet with its workloads, whole process,
from the spec and from a snapshot of the same cluster; prints JSON.

The snapshot is the model's cluster of the fleet in its active wave (`application`,
`simulate.wave_cluster`): every node, its allocators and ResourceSlices, the workloads and their
claims, written as `gpuplatform snapshot` writes a cluster; plus 200 allocated claims of pods the
spec does not name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from capacity_fleet import build

from gpuplatform.gates.matchers import DRA_DRIVER
from gpuplatform.plan.waves import plan_platform
from gpuplatform.simulate.snapshot import cluster_snapshot
from gpuplatform.simulate.snapshot import write_snapshot as write_model_snapshot
from gpuplatform.simulate.wave_cluster import wave_world
from gpuplatform.snapshot.read import Snapshot

STACK = Path(__file__).parent / "capacity_fleet.py"
FOREIGN_CLAIMS = 200


def write_snapshot(folder: Path) -> None:
    """The fleet in its active wave as the model builds it (`simulate.wave_cluster`, the cluster the
    tests and `simulate --write-snapshots` take), written as `gpuplatform snapshot` writes a cluster,
    with `FOREIGN_CLAIMS` allocated claims of pods the spec does not name on devices nothing holds."""
    platform = build()
    snapshot = cluster_snapshot(wave_world(plan_platform(platform), platform.active_wave))
    claims = snapshot.kinds.get("resourceclaims") or []
    held = {
        (r["pool"], r["device"])
        for c in claims
        for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
    }
    free = [
        (s["spec"]["pool"]["name"], d["name"])
        for s in snapshot.kinds.get("resourceslices") or []
        for d in s["spec"].get("devices") or []
        if (s["spec"]["pool"]["name"], d["name"]) not in held
    ]
    foreign = [
        {
            "metadata": {"name": f"foreign-{i}", "namespace": "other"},
            "status": {
                "allocation": {
                    "devices": {
                        "results": [{"request": "gpu", "driver": DRA_DRIVER, "pool": pool, "device": device}]
                    }
                }
            },
        }
        for i, (pool, device) in enumerate(free[:: max(1, len(free) // FOREIGN_CLAIMS)][:FOREIGN_CLAIMS])
    ]
    kinds = snapshot.kinds | {"resourceclaims": [*claims, *foreign]}
    manifest = {"context": "capacity-fleet", "serverVersion": "v1.36.1"}
    write_model_snapshot(Snapshot(snapshot.folder, kinds, logs=snapshot.logs), folder, manifest)


def _run(env: dict[str, str], *extra: str) -> tuple[float, list[dict[str, Any]]]:
    command = [sys.executable, "-m", "gpuplatform.cli", "capacity", str(STACK), "--all", "--format", "json"]
    t0 = time.perf_counter()
    done = subprocess.run([*command, *extra], capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        sys.exit(f"capacity failed ({done.returncode}): {done.stderr}")
    return elapsed, json.loads(done.stdout)


def main() -> None:
    env = {**os.environ, "FLEET_NODES": os.environ.get("FLEET_NODES", "2000")}
    os.environ.update(env)
    elapsed, waves = _run(env)
    with tempfile.TemporaryDirectory() as parent:
        folder = Path(parent) / "snapshot"
        write_snapshot(folder)
        from_snapshot, snapshot_waves = _run(env, "--snapshot", str(folder))
    moments = [m for w in waves for m in w["moments"]]
    print(
        json.dumps(
            {
                "nodes": int(env["FLEET_NODES"]),
                "waves": len(waves),
                "moments": len(moments),
                "gpus_and_devices_placed": sum(sum(m["demand"].values()) for m in moments),
                "verdicts": {w["wave"]: w["verdict"][:120] for w in waves},
                "peak_demand": max(w["peakDemand"] for w in waves),
                "whole_process_s": round(elapsed, 3),
                "snapshot_whole_process_s": round(from_snapshot, 3),
                "snapshot_verdicts": {w["wave"]: w["verdict"][:120] for w in snapshot_waves},
                "snapshot_notes": snapshot_waves[0]["notes"],
                "goal_s": 5.0,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
