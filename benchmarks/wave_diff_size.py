"""Lines of every adjacent wave diff of the bundled stacks, as `gpuplatform diff --waves` prints them.

Run: `.venv/bin/python benchmarks/wave_diff_size.py`. Prints JSON: per platform, per adjacent pair of
waves, the lines of the unified diff and how many of them carry a line of a gate program (goal:
none), and issue 29's measure, the reference platform's native-claim-pilot -> compatibility-bridge
(goal: under 400 lines).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from gpuplatform.commands.synth import render_files
from gpuplatform.commands.wave_diff import diff_waves
from gpuplatform.gates import GATES, gate_script
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform

STACKS = Path(__file__).resolve().parents[1] / "stacks"
PROGRAM = {
    line.strip() for gate in GATES for line in gate_script(gate).splitlines() if len(line.strip()) >= 30
}


def sizes() -> dict[str, list[dict[str, object]]]:
    """Platform -> one entry per adjacent pair of waves: lines, and lines of program text."""
    found: dict[str, list[dict[str, object]]] = {}
    for stack in sorted(STACKS.glob("*.py")) + sorted(STACKS.glob("*.yaml")):
        for loaded in load_stack(stack):
            files = render_files(loaded)
            plan = plan_platform(loaded.platform)
            rows: list[dict[str, object]] = []
            for a, b in itertools.pairwise(plan.waves):
                lines = diff_waves(files, loaded.platform.name, a, b).unified().splitlines()
                program = sum(1 for line in lines if line[:1] in "+-" and line[1:].strip() in PROGRAM)
                rows.append({"from": a.name, "to": b.name, "lines": len(lines), "programLines": program})
            found[loaded.platform.name] = rows
    return found


def main() -> None:
    found = sizes()
    bridge = next(
        r["lines"]
        for r in found["reference"]
        if (r["from"], r["to"]) == ("native-claim-pilot", "compatibility-bridge")
    )
    program = sum(int(str(r["programLines"])) for rows in found.values() for r in rows)
    goals = {"referenceBridgeDiffLines": "< 400", "programLinesInWaveDiffs": "== 0"}
    print(
        json.dumps(
            {
                "waveDiffs": found,
                "referenceBridgeDiffLines": bridge,
                "programLinesInWaveDiffs": program,
                "goals": goals,
                "goalsMet": int(str(bridge)) < 400 and program == 0,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
