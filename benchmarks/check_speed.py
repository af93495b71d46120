"""`gpuplatform check benchmarks/fleet.py` as a whole process, against device-by-device evaluation.

Run: `.venv/bin/python benchmarks/check_speed.py` — prints one JSON object.

- `check` of the fleet at 2,048 nodes (16,384 GPUs; MIG instances make it more devices) with
  every tier, bridge, claim template and NIM selector: goal < 1.5 s, exit code 0.
- Peak RSS of `check` at 8,000 nodes: goal < 300 MiB.
- The peer, in the same run: the platform's distinct selector chains (a claim template that only
  uses its tier's selector is the tier's chain: deduplicating favours the peer) evaluated device
  by device with cel-python's evaluator (`celpy_peer.py`), timed on every 4th device of one node
  per pool and extrapolated to every device of every node; its verdicts are compared with
  gpuplatform's on the sample. Goal: check at least 50x faster.
"""

from __future__ import annotations

import os
import sys

from harness import FLEET, GPUPLATFORM, load, repeat, report

NODES = 2048
BIG = 8000
SAMPLE_EVERY = 4


def _peer() -> dict[str, object]:
    os.environ["FLEET_NODES"] = str(NODES)
    import celpy_peer

    from gpuplatform.cel import DeviceSelector
    from gpuplatform.inventory import slices_for_node
    from gpuplatform.load.stacks import load_stack
    from gpuplatform.policy.targets import selector_targets

    (loaded,) = load_stack(FLEET)
    platform = loaded.platform
    targets = [t for t in selector_targets(platform) if not t.refused]
    distinct = list(dict.fromkeys(tuple(e for _, e in t.expressions) for t in targets))
    programs, kept = celpy_peer.compile_chains(distinct)
    ours = [[DeviceSelector(e) for e in chain] for chain in kept]
    total = sampled = 0
    estimate = sample_seconds = 0.0
    agree = compared = 0
    for pool in platform.node_pools:
        nodes = pool.nodes or (f"{pool.name}-modelled-0",)
        devices = slices_for_node(
            nodes[0], pool.product, pool.gpus_per_node, mig_layout=pool.mig_layout or None
        )[0]["spec"]["devices"]
        sample = devices[::SAMPLE_EVERY]
        seconds, verdicts = celpy_peer.timed_sample(programs, "gpu.nvidia.com", sample)
        total += len(devices) * len(nodes)
        sampled += len(sample)
        sample_seconds += seconds
        estimate += seconds / len(sample) * len(devices) * len(nodes)
        for device, row in zip(sample, verdicts, strict=True):
            for chain, verdict in zip(ours, row, strict=True):
                agree += all(s.matches("gpu.nvidia.com", device) for s in chain) == bool(verdict)
                compared += 1
    return {
        "targets": len(targets),
        "distinctChainsEvaluated": len(kept),
        "distinctChainsCelPythonCannotRun": len(distinct) - len(kept),
        "devices": total,
        "sampledDevices": sampled,
        "sampleSeconds": round(sample_seconds, 2),
        "estimatedSeconds": round(estimate, 1),
        "verdictsAgreeing": f"{agree}/{compared}",
    }


GOALS = {"checkSecondsBelow": 1.5, "speedupAtLeast": 50, "peakRssMiB8000NodesBelow": 300}


def main() -> None:
    times = int(os.environ.get("BENCH_RUNS", "5"))
    start_load = load()
    check = repeat([GPUPLATFORM, "check", str(FLEET)], times, {"FLEET_NODES": str(NODES)})
    big = repeat([GPUPLATFORM, "check", str(FLEET)], max(1, times // 2), {"FLEET_NODES": str(BIG)})
    peer = _peer()
    speedup = float(str(peer["estimatedSeconds"])) / check["minSeconds"]
    report(
        "check",
        {
            "fleetNodes": NODES,
            "gpus": NODES * 8,
            "check": check,
            "check8000Nodes": big,
            "peerCelPythonDeviceByDevice": peer,
            "speedupOverPeer": round(speedup, 1),
            "goals": GOALS,
            "goalsMetByMinimum": {
                "checkSecondsBelow": check["minSeconds"] < GOALS["checkSecondsBelow"]
                and check["exitCodes"] == [0],
                "speedupAtLeast": speedup >= GOALS["speedupAtLeast"],
                "peakRssMiB8000NodesBelow": big["peakRssMiB"] < GOALS["peakRssMiB8000NodesBelow"]
                and big["exitCodes"] == [0],
            },
            "loadCoresPaceBeforeAfter": [start_load, load()],
        },
    )


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    main()
