"""Every transition of the fleet under both engines, timed as the whole `gpuplatform simulate` process.

Run: `FLEET_NODES=2000 .venv/bin/python benchmarks/simulate_speed.py` — prints one JSON object.
Goal (issue 11): all transitions `plan` accepts of the 2,000-node fleet (forward, back and with the
operator late), under Argo CD and Flux, in under 10 s of one process on the 2-core machine. The
machine is shared, so both the wall time and the CPU time of the process are reported.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

FLEET = Path(__file__).resolve().parent / "fleet.py"


def main() -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuplatform.cli",
            "simulate",
            str(FLEET),
            "--all",
            "--engine",
            "both",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr)
    [report] = json.loads(done.stdout)
    print(
        json.dumps(
            {
                "nodes": int(os.environ.get("FLEET_NODES", "2000")),
                "engines": report["engines"],
                "replays": len(report["transitions"]),
                "proven": report["proven"],
                "steps": report["steps"],
                "exit": done.returncode,
                "wall_s": round(wall, 2),
                "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
                "goal_s": 10,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
