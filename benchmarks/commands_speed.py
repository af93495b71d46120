"""`plan`, `diff --waves` and `evidence` on the 2,000-node fleet, each as a whole process.

Run: `.venv/bin/python benchmarks/commands_speed.py` — prints one JSON object.
Goals at 2,000 nodes: `plan` < 1 s, `diff --waves` < 3 s, `evidence` on a snapshot of the fleet
(`fleet_snapshot.py`, written before timing) < 3 s. Exit codes are reported: the snapshot is
healthy, so `evidence` should exit 0.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from harness import FLEET, GPUPLATFORM, load, repeat, report

NODES = 2000
EVIDENCE_WAVES = ("application", "final-cutover")
GOALS = {"planSecondsBelow": 1, "diffWavesSecondsBelow": 3, "evidenceSecondsBelow": 3}
#: The goal each timed command is held to (`plan --from/--to` to plan's).
_GOAL_OF = {
    "plan": "planSecondsBelow",
    "planTransition": "planSecondsBelow",
    "diffWaves": "diffWavesSecondsBelow",
    "evidence": "evidenceSecondsBelow",
}


def main() -> None:
    times = int(os.environ.get("BENCH_RUNS", "5"))
    os.environ["FLEET_NODES"] = str(NODES)
    import fleet_snapshot

    start_load = load()
    env = {"FLEET_NODES": str(NODES)}
    results = {
        "plan": repeat([GPUPLATFORM, "plan", str(FLEET)], times, env),
        "planTransition": repeat(
            [GPUPLATFORM, "plan", str(FLEET), "--from", "nim-non-production", "--to", "scale"], times, env
        ),
        "diffWaves": repeat([GPUPLATFORM, "diff", str(FLEET), "--waves", "application", "scale"], times, env),
    }
    with tempfile.TemporaryDirectory(prefix="gpuplatform-bench-") as tmp:
        for wave in EVIDENCE_WAVES:
            snapshot = fleet_snapshot.write_apart(wave, Path(tmp) / wave)
            args = [GPUPLATFORM, "evidence", str(FLEET), "--wave", wave, "--snapshot", str(snapshot)]
            results[f"evidence:{wave}"] = repeat(args, times, env)
    report(
        "commands",
        {
            "fleetNodes": NODES,
            **results,
            "goals": GOALS,
            "goalsMetByMinimum": {
                name: result["minSeconds"] < GOALS[_GOAL_OF[name.split(":")[0]]]
                and result["exitCodes"] == [1 if name == "diffWaves" else 0]
                for name, result in results.items()
            },
            "loadCoresPaceBeforeAfter": [start_load, load()],
        },
    )


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    main()
