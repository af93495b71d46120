"""`gpuplatform synth benchmarks/fleet.py` as a whole process, against cdk8s for the same objects.

Run: `.venv/bin/python benchmarks/synth_speed.py` — prints one JSON object.

- synth of the 2,000-node fleet into a fresh folder and again over its own output (what a
  re-run after a one-line change costs): import, load, rules, render, validation, write, lock.
- The peer, in the same run: every object synth wrote, through cdk8s ApiObjects in one Chart,
  synthesised to one file per resource, as a whole process (`cdk8s_peer.py`).
  Goal: synth at most 0.1x the peer.
- Linearity: fresh synth at 500, 1,000, 2,000 and 4,000 nodes; seconds per 1,000 nodes should
  stay flat.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import yaml
from harness import FLEET, GPUPLATFORM, fresh, load, repeat, report

NODES = 2000


def _objects(root: Path) -> list[object]:
    """Every YAML document synth wrote under `root`."""
    out: list[object] = []
    for path in sorted(root.rglob("*.yaml")):
        out += [d for d in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader) if d is not None]
    return out


def main() -> None:
    times = int(os.environ.get("BENCH_RUNS", "5"))
    start_load = load()
    with tempfile.TemporaryDirectory(prefix="gpuplatform-bench-") as tmp:
        work = Path(tmp)
        out = work / "synth"
        env = {"FLEET_NODES": str(NODES)}
        synth = [GPUPLATFORM, "synth", str(FLEET), "--out", str(out)]
        first = repeat(synth, times, env, before=fresh(out))
        again = repeat(synth, times, env)
        objects = _objects(out)
        (work / "objects.json").write_text(json.dumps(objects))
        files = sum(1 for p in out.rglob("*") if p.is_file())
        peer_out = work / "cdk8s"
        peer_args = [
            sys.executable,
            str(Path(__file__).with_name("cdk8s_peer.py")),
            str(work / "objects.json"),
        ]
        peer = repeat([*peer_args, str(peer_out)], max(1, times // 2), before=fresh(peer_out))
        peer_files = sum(1 for p in peer_out.rglob("*") if p.is_file())
        scaling = {}
        for nodes in (500, 1000, 2000, 4000):
            target = work / f"synth-{nodes}"
            scaling[str(nodes)] = repeat(
                [GPUPLATFORM, "synth", str(FLEET), "--out", str(target)],
                1,
                {"FLEET_NODES": str(nodes)},
                before=fresh(target),
            )["minSeconds"]
    report(
        "synth",
        {
            "fleetNodes": NODES,
            "objects": len(objects),
            "filesWritten": files,
            "synthFresh": first,
            "synthOverItsOwnOutput": again,
            "peerCdk8sWholeProcess": {**peer, "filesWritten": peer_files},
            "synthOverPeer": round(first["minSeconds"] / peer["minSeconds"], 3),
            "synthOverPeerMedian": round(first["medianSeconds"] / peer["medianSeconds"], 3),
            "freshSecondsByNodes": scaling,
            "secondsPer1000NodesAbove500": round((scaling["4000"] - scaling["500"]) / 3.5, 3),
            "goals": {"synthOverPeerAtMost": 0.1},
            "loadAverageBeforeAfter": [start_load, load()],
        },
    )


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    main()
