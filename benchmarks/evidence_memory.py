"""Benchmark: `gpuplatform evidence` on a snapshot of a million pods, whole process; prints JSON.

Run: `BENCH_RUNS=2 .venv/bin/python benchmarks/evidence_memory.py`. The snapshot is the 2,000-node
fleet at its final cutover as `fleet_snapshot.py` writes it (GPU nodes with the GPU Operator's
labels, its operand pods, the device plugin or the DRA kubelet plugin, ResourceSlices, claims, the
bridge probe), plus CPU nodes (110 pods each, the kubelet's default) running Deployment pods until
`BENCH_PODS` pods (default 1,000,000) are listed; each such pod has the fields the API serves for
a one-container pod without volumes or environment (~0.6 KiB), so a million fit in `pods.json`
under the 640 MiB read limit. Goals: the whole process (and the child it forks) peaks at most 3x
the snapshot's size on disk and takes under 30 s; the snapshot is healthy, so exit 0.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any

from harness import FLEET, GPUPLATFORM, load, repeat, report

NODES = 2000
WAVE = "final-cutover"
PODS_PER_CPU_NODE = 110
GOALS = {"secondsBelow": 30, "peakRssTimesSnapshotAtMost": 3}
_STARTED = "2026-12-01T08:00:00Z"


def _cpu_node(name: str) -> dict[str, Any]:
    """A CPU node: no GPU labels or resources, so no gate judges it."""
    resources = {"cpu": "64", "memory": "263705084Ki", "pods": str(PODS_PER_CPU_NODE)}
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-node-{name}",
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
        },
        "status": {"capacity": resources, "allocatable": resources},
    }


def _workload_pod(i: int, node: str) -> str:
    """A Deployment's running pod: the fields the API always serves for one container, no more."""
    app = f"web-{i // 1000:04d}"
    name = f"{app}-6d4cf56db6-{i:07d}"
    uid = f"{i:08x}-0000-4000-8000-000000000000"
    pod = {
        "metadata": {
            "name": name,
            "namespace": f"team-{i // 50000:02d}",
            "uid": uid,
            "creationTimestamp": _STARTED,
            "labels": {"app": app, "pod-template-hash": "6d4cf56db6"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-6d4cf56db6",
                    "uid": f"uid-rs-{app}",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "main", "image": "registry.example.com/web:1.0", "resources": {}}],
        },
        "status": {
            "phase": "Running",
            "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0}],
        },
    }
    return json.dumps(pod)


def _workload_pods(count: int) -> Iterator[str]:
    for i in range(count):
        yield _workload_pod(i, f"cpu-{i // PODS_PER_CPU_NODE:05d}")


def _write_list(path: Path, items: Iterable[str]) -> None:
    """A `v1` List written item by item (a million pods are never held at once)."""
    with path.open("w") as out:
        out.write('{"apiVersion": "v1", "kind": "List", "items": [')
        for n, item in enumerate(items):
            out.write((", " if n else "") + item)
        out.write("]}")


def write_snapshot(folder: Path, pods: int) -> dict[str, int]:
    """The fleet's snapshot with CPU nodes and Deployment pods up to `pods`; pods and bytes written."""
    import fleet_snapshot

    fleet_snapshot.write_apart(WAVE, folder)
    fleet = json.loads((folder / "pods.json").read_text())["items"]
    extra = max(pods - len(fleet), 0)
    cpu_nodes = -(-extra // PODS_PER_CPU_NODE)
    nodes = json.loads((folder / "nodes.json").read_text())["items"]
    nodes += [_cpu_node(f"cpu-{n:05d}") for n in range(cpu_nodes)]
    _write_list(folder / "nodes.json", (json.dumps(node) for node in nodes))
    _write_list(folder / "pods.json", chain((json.dumps(p) for p in fleet), _workload_pods(extra)))
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return {
        "pods": len(fleet) + extra,
        "nodes": len(nodes),
        "podsJsonBytes": (folder / "pods.json").stat().st_size,
        "snapshotBytes": size,
    }


def main() -> None:
    times = int(os.environ.get("BENCH_RUNS", "3"))
    pods = int(os.environ.get("BENCH_PODS", "1000000"))
    os.environ["FLEET_NODES"] = str(NODES)
    start_load = load()
    with tempfile.TemporaryDirectory(prefix="gpuplatform-bench-") as tmp:
        snapshot = Path(tmp) / WAVE
        sizes = write_snapshot(snapshot, pods)
        args = [GPUPLATFORM, "evidence", str(FLEET), "--wave", WAVE, "--snapshot", str(snapshot)]
        result = repeat(args, times, {"FLEET_NODES": str(NODES)})
    snapshot_mib = sizes["snapshotBytes"] / (1 << 20)
    ratio = round(result["peakRssMiB"] / snapshot_mib, 2)
    report(
        "evidence-memory",
        {
            "fleetNodes": NODES,
            "wave": WAVE,
            **sizes,
            "snapshotMiB": round(snapshot_mib, 1),
            "evidence": result,
            "peakRssTimesSnapshot": ratio,
            "goals": GOALS,
            "goalsMetByMinimum": {
                "seconds": result["minSeconds"] < GOALS["secondsBelow"],
                "peakRss": ratio <= GOALS["peakRssTimesSnapshotAtMost"],
                "exitCode": result["exitCodes"] == [0],
                "podsJsonWithinReadLimit": sizes["podsJsonBytes"] <= 640 * 1024 * 1024,
            },
            "loadCoresPaceBeforeAfter": [start_load, load()],
        },
    )


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    main()
