"""The rehearsal's costs, each against issue 35's goal: the control plane's start, one transition of
the reference stack, one of the 200-node benchmark fleet, every transition of the reference stack
under both engines, and the binaries when cached.

Run: `.venv/bin/python benchmarks/rehearse_speed.py [--all]` — prints one JSON object. Without
`--all` the whole-stack walk (minutes) is left out. Needs the binaries (`scripts/build-control-plane`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.rehearse.assets import find_assets
from gpuplatform.rehearse.controlplane import ControlPlane
from gpuplatform.versions import kube_gates

ROOT = Path(__file__).resolve().parent.parent
STACK = ROOT / "stacks" / "reference.py"
FLEET = ROOT / "benchmarks" / "fleet.py"
CRDS = ROOT.parent / "shared" / "reference" / "crds"


def _rehearse(*args: str, stack: Path = STACK, platform: str = "reference") -> tuple[float, int, str]:
    crds = ["--crds", str(CRDS)] if CRDS.is_dir() else []
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuplatform.cli",
            "rehearse",
            str(stack),
            "--platform",
            platform,
            *crds,
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = (done.stdout.strip() or done.stderr.strip() or "-").splitlines()
    return round(time.perf_counter() - start, 1), done.returncode, lines[-1]


def _fleet_transition(nodes: int) -> dict[str, object]:
    """`baseline -> pilot-pool` of the benchmark fleet at `nodes` nodes (`fleet.py`), one engine,
    and the transition's own time as the rehearsal reports it (after the start and the adoption)."""
    with tempfile.TemporaryDirectory(prefix="gpuplatform-fleet-") as out:
        os.environ["FLEET_NODES"] = str(nodes)
        subprocess.run(
            [sys.executable, "-m", "gpuplatform.cli", "synth", str(FLEET), "--out", out],
            capture_output=True,
            check=True,
        )
        args = ("--from", "baseline", "--to", "pilot-pool", "--engine", "flux", "--no-late")
        wall, code, summary = _rehearse(*args, "--tree", f"{out}/fleet", stack=FLEET, platform="fleet")
    return {"nodes": nodes, "wall": wall, "exit": code, "summary": summary, "goal_s": 60}


def main() -> None:
    assets = find_assets("1.36")
    starts = []
    for _ in range(3):
        with ControlPlane(assets, kube_gates("1.36")) as plane:
            starts.append(round(plane.started_in, 2))
    build_start = time.perf_counter()
    subprocess.run([str(ROOT / "scripts" / "build-control-plane")], capture_output=True, check=True)
    cached = round(time.perf_counter() - build_start, 1)
    waves = [w.name for w in plan_platform(load_stack(STACK)[0].platform).waves]
    one = _rehearse("--from", waves[0], "--to", waves[1], "--engine", "flux", "--no-late")
    out: dict[str, object] = {
        "release": str(assets.release),
        "control_plane_start_s": starts,
        "control_plane_goal_s": 10,
        "binaries_cached_s": cached,
        "one_transition_s": {
            "wall": one[0],
            "exit": one[1],
            "summary": one[2],
            "note": "includes start and the walk's adoption",
        },
    }
    out["fleet_200_one_transition_s"] = _fleet_transition(200)
    if "--all" in sys.argv:
        every = _rehearse("--all", "--engine", "both")
        out["reference_all_both_s"] = {"wall": every[0], "exit": every[1], "summary": every[2], "goal_s": 180}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
