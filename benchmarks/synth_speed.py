"""`gpuplatform synth benchmarks/fleet.py` as a whole process, against cdk8s for the same objects.

Run: `.venv/bin/python benchmarks/synth_speed.py` — prints one JSON object.

- synth of the 2,000-node fleet into a fresh folder and again over its own output (what a
  re-run after a one-line change costs): import, load, rules, render, validation, write, lock.
- The peer, in the same run: every object synth wrote, through cdk8s ApiObjects in one Chart,
  synthesised to one file per resource, as a whole process (`cdk8s_peer.py`).
  Goal: synth at most 0.1x the peer.
- Linearity: fresh synth at 500, 1,000, 2,000 and 4,000 nodes; CPU seconds per 1,000 nodes
  should stay flat.
- The disk's phase before and after: seconds to create 2,000 empty files (`creation_probe`).
  Timing starts once the disk is steady (`steady_disk`: the probe at most
  BENCH_DISK_PROBE_SECONDS, 0.15 s by default, waiting up to 5 minutes); the wait and every
  probe are printed. The benchmark's own clean-up deletes ~200,000 files, which puts a run
  started right after it into the slow phase.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml
from harness import FLEET, GPUPLATFORM, load, repeat, report

NODES = 2000
GOAL_RATIO = 0.1


def _files(root: Path) -> dict[str, list[object]]:
    """Every YAML file synth wrote under `root`, relative path -> its documents."""
    return {
        path.relative_to(root).as_posix(): [
            d for d in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader) if d is not None
        ]
        for path in sorted(root.rglob("*.yaml"))
    }


def creation_probe(folder: Path, files: int = 2000) -> float:
    """Seconds to create `files` empty files in a new folder under `folder`: the disk's phase.

    This VM's ext4 creates files 5-20x slower for minutes after many were deleted; synth creates
    25,563 files and cdk8s spends most of its time elsewhere, so the phase moves the ratio."""
    probe = Path(tempfile.mkdtemp(prefix="probe-", dir=folder))
    start = time.perf_counter()
    for n in range(files):
        os.close(os.open(probe / f"f{n}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    return round(time.perf_counter() - start, 3)


def steady_disk(folder: Path, patience: float = 300.0) -> dict[str, object]:
    """Probe `folder` every 15 s until creating 2,000 files takes at most BENCH_DISK_PROBE_SECONDS
    (or `patience` seconds passed): the probes, the seconds waited, and whether it got there."""
    limit = float(os.environ.get("BENCH_DISK_PROBE_SECONDS", "0.15"))
    start = time.perf_counter()
    probes = [creation_probe(folder)]
    while probes[-1] > limit and time.perf_counter() - start < patience:
        time.sleep(15)
        probes.append(creation_probe(folder))
    waited = round(time.perf_counter() - start, 1)
    return {
        "probeLimitSeconds": limit,
        "probesSeconds": probes,
        "waitedSeconds": waited,
        "steady": probes[-1] <= limit,
    }


def main() -> None:
    times = int(os.environ.get("BENCH_RUNS", "5"))
    with tempfile.TemporaryDirectory(prefix="gpuplatform-bench-") as tmp:
        work = Path(tmp)
        disk = steady_disk(work)
        start_load = load()
        env = {"FLEET_NODES": str(NODES)}

        def synth(n: int) -> list[str]:
            return [GPUPLATFORM, "synth", str(FLEET), "--out", str(work / f"synth-{n}")]

        # A new folder per run: deleting a tree makes the next file creations on it slow on some
        # file systems for half a minute (ext4 without a journal skips recently freed inodes).
        first = repeat(synth, times, env)
        again = repeat(lambda n: synth(0), times, env)
        files = _files(work / "synth-0")
        (work / "files.json").write_text(json.dumps(files))
        objects = sum(len(docs) for docs in files.values())
        peer_args = [sys.executable, str(Path(__file__).with_name("cdk8s_peer.py")), str(work / "files.json")]
        peer = repeat(lambda n: [*peer_args, str(work / f"cdk8s-{n}")], max(1, times // 2))
        scaling = {
            str(nodes): repeat(
                [GPUPLATFORM, "synth", str(FLEET), "--out", str(work / f"scale-{nodes}")],
                1,
                {"FLEET_NODES": str(nodes)},
            )["minCpuSeconds"]
            for nodes in (500, 1000, 2000, 4000)
        }
        probe_after = creation_probe(work)
    report(
        "synth",
        {
            "fleetNodes": NODES,
            "objects": objects,
            "filesWritten": len(files) + 1,
            "synthFresh": first,
            "synthOverItsOwnOutput": again,
            "peerCdk8sWholeProcess": peer,
            "synthOverPeer": round(first["minSeconds"] / peer["minSeconds"], 3),
            "synthOverPeerMedian": round(first["medianSeconds"] / peer["medianSeconds"], 3),
            "synthOverPeerCpu": round(first["minCpuSeconds"] / peer["minCpuSeconds"], 3),
            "freshCpuSecondsByNodes": scaling,
            "cpuSecondsPer1000NodesFrom500To4000": round((scaling["4000"] - scaling["500"]) / 3.5, 3),
            "goals": {"synthOverPeerAtMost": GOAL_RATIO},
            "goalsMetByMinimum": {
                "synthOverPeerAtMost": first["minSeconds"] / peer["minSeconds"] <= GOAL_RATIO
                and first["exitCodes"] == [0]
                and peer["exitCodes"] == [0]
            },
            "loadCoresPaceBeforeAfter": [start_load, load()],
            "diskBeforeTiming": disk,
            "create2000EmptyFilesSecondsAfter": probe_after,
        },
    )


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    main()
