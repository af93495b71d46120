"""Benchmark: `gpuplatform capacity --all` of the 2,000-node fleet with its workloads, whole process; prints JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

STACK = Path(__file__).parent / "capacity_fleet.py"


def main() -> None:
    env = {**os.environ, "FLEET_NODES": os.environ.get("FLEET_NODES", "2000")}
    command = [sys.executable, "-m", "gpuplatform.cli", "capacity", str(STACK), "--all", "--format", "json"]
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        sys.exit(f"capacity failed ({done.returncode}): {done.stderr}")
    waves = json.loads(done.stdout)
    moments = [m for w in waves for m in w["moments"]]
    print(
        json.dumps(
            {
                "nodes": int(env["FLEET_NODES"]),
                "waves": len(waves),
                "moments": len(moments),
                "gpus_and_devices_placed": sum(sum(m["demand"].values()) for m in moments),
                "verdicts": {w["wave"]: w["verdict"] for w in waves},
                "peak_demand": max(w["peakDemand"] for w in waves),
                "whole_process_s": round(elapsed, 3),
                "goal_s": 5.0,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
