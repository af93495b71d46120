"""Benchmark: `gpuplatform capacity --all` of the 2,000-node fleet with its workloads, whole process,
from the spec and from a snapshot of the same cluster; prints JSON.

The snapshot is the fleet in its active wave (`application`): every node with its labels, the
device plugin's allocatable GPUs or the DRA driver's ResourceSlices, and 200 allocated claims of
pods the spec does not name.
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

from gpuplatform.inventory.catalog import slices_for_node
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.nodes import node_labels, pool_taint

STACK = Path(__file__).parent / "capacity_fleet.py"
FOREIGN_CLAIMS = 200


def write_snapshot(folder: Path) -> None:
    """The fleet as `gpuplatform snapshot` would record it in its active wave."""
    platform = build()
    state = plan_platform(platform).wave(platform.active_wave)
    nodes: list[dict[str, Any]] = []
    slices: list[dict[str, Any]] = []
    for pool in platform.node_pools:
        mode = state.pool_modes[pool.name]
        for name in pool.nodes:
            labels = {**node_labels(platform, pool, mode), "nvidia.com/gpu.count": str(pool.gpus_per_node)}
            item: dict[str, Any] = {
                "metadata": {"name": name, "labels": labels},
                "status": {"allocatable": {}},
            }
            if mode == "dra":
                item["spec"] = {"taints": [pool_taint(platform, pool)]}
                slices += slices_for_node(
                    name, pool.product, pool.gpus_per_node, driver_release=platform.dra_driver.chart_version
                )
            else:
                item["status"]["allocatable"]["nvidia.com/gpu"] = str(pool.gpus_per_node)
            nodes.append(item)
    claims = [
        {
            "metadata": {"name": f"foreign-{i}", "namespace": "other"},
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            {
                                "request": "gpu",
                                "driver": "gpu.nvidia.com",
                                "pool": s["spec"]["pool"]["name"],
                                "device": "gpu-0",
                            }
                        ]
                    }
                }
            },
        }
        for i, s in zip(range(FOREIGN_CLAIMS), slices[:: max(1, len(slices) // FOREIGN_CLAIMS)], strict=False)
    ]
    kinds = {"nodes": nodes, "pods": [], "resourceslices": slices, "resourceclaims": claims}
    for kind, items in kinds.items():
        (folder / f"{kind}.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))


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
    with tempfile.TemporaryDirectory() as folder:
        write_snapshot(Path(folder))
        from_snapshot, snapshot_waves = _run(env, "--snapshot", folder)
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
                "snapshot_notes": snapshot_waves[0]["notes"],
                "goal_s": 5.0,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
