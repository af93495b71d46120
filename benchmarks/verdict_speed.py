"""`gpuplatform check` with the simulation verdict (GP290) included, as whole processes.

Run: `.venv/bin/python benchmarks/verdict_speed.py` — prints one JSON object.

- `check` of each bundled stack, the verdict cache empty (cold: the transitions are replayed by a
  forked child while the parent checks) and filled by the run before (warm): goal < 2 s each.
- `check` of the 2,000-node fleet, simulation included, cold: goal < 10 s; warm: the verdict is
  read from the cache. The machine is shared: CPU seconds and the load are reported beside wall time.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from typing import Any

from harness import FLEET, GPUPLATFORM, ROOT, load, repeat, report

NODES = 2000
GOALS = {"bundledCheckSecondsBelow": 2.0, "fleetCheckColdSecondsBelow": 10.0}


def _cold_and_warm(target: str, times: int, env: dict[str, str]) -> dict[str, dict[str, Any]]:
    cache = tempfile.mkdtemp(prefix="gpuplatform-verdicts-")
    try:
        env = {**env, "GPUPLATFORM_CACHE_DIR": cache}
        args = [GPUPLATFORM, "check", target]
        cold = repeat(args, times, env, before=lambda: shutil.rmtree(cache, ignore_errors=True))
        warm = repeat(args, times, env)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {"cold": cold, "warm": warm}


def _met(result: dict[str, Any], below: float) -> bool:
    return bool(result["minSeconds"] < below and result["exitCodes"] == [0])


def main() -> None:
    times = int(os.environ.get("BENCH_RUNS", "3"))
    start_load = load()
    stacks = {
        path.name: _cold_and_warm(str(path), times, {})
        for path in sorted((ROOT / "stacks").glob("*"))
        if path.suffix in (".py", ".yaml")
    }
    fleet = _cold_and_warm(str(FLEET), max(1, times - 1), {"FLEET_NODES": str(NODES)})
    bundled = GOALS["bundledCheckSecondsBelow"]
    met = {
        "bundledCheckSecondsBelow": all(
            _met(s[phase], bundled) for s in stacks.values() for phase in ("cold", "warm")
        ),
        "fleetCheckColdSecondsBelow": _met(fleet["cold"], GOALS["fleetCheckColdSecondsBelow"]),
    }
    report(
        "verdict",
        {
            "stacks": stacks,
            "fleetNodes": NODES,
            "fleet": fleet,
            "goals": GOALS,
            "goalsMetByMinimum": met,
            "loadCoresPaceBeforeAfter": [start_load, load()],
        },
    )


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    main()
