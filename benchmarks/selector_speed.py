"""Benchmark: 50 tier selectors against 16,384 catalog devices (2,048 nodes x 8 GPUs); prints JSON."""

from __future__ import annotations

import json
import time
from typing import Any

from gpuplatform.cel import DeviceSelector, DeviceSet
from gpuplatform.inventory import slices_for_node

D = "device.attributes['gpu.nvidia.com']"
C = "device.capacity['gpu.nvidia.com']"
FLEET: list[tuple[str, list[str] | None]] = [
    ("H100-80GB", None),
    ("H100-80GB", ["3g.40gb", "3g.40gb"]),
    ("H100-80GB", ["1g.10gb"] * 7),
    ("A100-80GB", None),
    ("A100-80GB", ["2g.20gb", "2g.20gb", "3g.40gb"]),
    ("A100-40GB", ["1g.5gb"] * 7),
    ("H200-141GB", None),
    ("H200-141GB", ["4g.71gb", "3g.71gb"]),
    ("B200", None),
    ("L40S", None),
    ("L4", None),
]


def fleet_devices() -> list[dict[str, Any]]:
    """2,048 nodes, cycling products and MIG layouts, 8 devices (GPUs or MIG instances) per node."""
    devices: list[dict[str, Any]] = []
    for node in range(2048):
        product, layout = FLEET[node % len(FLEET)]
        gpus = 8 if layout is None else -(-8 // len(layout))
        slice_ = slices_for_node(f"node-{node:04d}", product, gpus, mig_layout=layout)[0]
        devices.extend(slice_["spec"]["devices"][:8])
    return devices


def tiers() -> list[str]:
    """50 realistic tier selectors: product regex, memory, compute capability, MIG profile, architecture."""
    out = [
        f"{D}.type == 'gpu' && {D}.productName.lowerAscii().matches('{p}')"
        for p in ("h100", "a100", "h200", "b200", "l40s", "^nvidia l4$", "a100.*80gb", "a100.*40gb")
    ]
    out += [
        f"{D}.type == 'gpu' && {C}.memory.isGreaterThan(quantity('{m}'))"
        for m in ("16Gi", "40Gi", "79Gi", "100Gi")
    ]
    out += [
        f"{C}.memory.compareTo(quantity('{m}')) >= 0" for m in ("4Gi", "9Gi", "19Gi", "39Gi", "70Gi", "140Gi")
    ]
    out += [
        f"{D}.cudaComputeCapability.isGreaterThan(semver('{v}'))"
        for v in ("7.5.0", "8.0.0", "8.9.0", "9.0.0")
    ]
    out += [f"{D}.cudaComputeCapability == semver('{v}')" for v in ("8.0.0", "9.0.0", "10.0.0")]
    profiles = ("1g.5gb", "1g.10gb", "2g.20gb", "3g.40gb", "4g.71gb", "3g.71gb", "7g.80gb", "1g.20gb")
    out += [f"{D}.type == 'mig' && {D}.profile == '{p}'" for p in profiles]
    out += [f"{D}.architecture == '{a}'" for a in ("Ampere", "Hopper", "Blackwell", "Ada Lovelace")]
    out += [
        f"{D}.type == 'mig' && {C}.multiprocessors.isGreaterThan(quantity('{n}'))"
        for n in ("13", "27", "41", "59")
    ]
    out += [
        f"{D}.architecture in ['Hopper', 'Blackwell'] && {C}.memory.isGreaterThan(quantity('{m}'))"
        for m in ("10Gi", "60Gi", "120Gi")
    ]
    out += [
        f"cel.bind(g, {D}, g.type == 'gpu' && g.brand == 'Nvidia' && g.driverVersion.major() >= {v})"
        for v in (535, 550, 570, 580)
    ]
    out += [f"'profile' in {D} && {D}.profile.startsWith('{p}')" for p in ("1g", "2g", "3g", "4g")]
    out.append(f"{D}.brand == 'Nvidia' && {C}.memory.isGreaterThan(quantity('20Gi'))")
    return out[:50]


def main() -> None:
    devices = fleet_devices()
    selectors = [DeviceSelector(t) for t in tiers()]
    t0 = time.perf_counter()
    table = DeviceSet("gpu.nvidia.com", devices)
    t1 = time.perf_counter()
    counts = [s.count_matches("gpu.nvidia.com", table) for s in selectors]
    t2 = time.perf_counter()
    sample = devices[::64]
    t3 = time.perf_counter()
    naive_sample = [sum(s.matches("gpu.nvidia.com", d) for d in sample) for s in selectors]
    t4 = time.perf_counter()
    naive_estimate = (t4 - t3) * len(devices) / len(sample)
    memo_sample = [s.count_matches("gpu.nvidia.com", sample) for s in [DeviceSelector(t) for t in tiers()]]
    assert memo_sample == naive_sample, "memoised and naive evaluation disagree"
    selector_work = t2 - t1
    print(
        json.dumps(
            {
                "devices": len(devices),
                "selectors": len(selectors),
                "prepare_device_set_s": round(t1 - t0, 4),
                "selector_evaluation_s": round(selector_work, 4),
                "devices_per_s": round(len(devices) * len(selectors) / selector_work),
                "naive_s_estimated": round(naive_estimate, 2),
                "naive_sampled_devices": len(sample),
                "speedup_vs_naive": round(naive_estimate / selector_work, 1),
                "speedup_vs_naive_incl_prepare": round(naive_estimate / (t2 - t0), 1),
                "matches_per_tier": counts,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
