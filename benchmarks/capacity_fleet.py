"""The benchmark fleet (`benchmarks/fleet.py`) with GPU workloads, for `gpuplatform capacity`.

When the fleet declares no workloads, each of its 100 tenants gets three legacy Deployments
(8 pods x 1 GPU, 4 x 4, 2 x 8: 4,000 GPUs in all) that move to claims in the application, scale
and final-cutover waves, on top of one claim per tenant template.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from fleet import build as build_fleet

from gpuplatform.model import Platform, Workload

SHAPES = ((8, 1), (4, 4), (2, 8))
MOVES = ("application", "scale", "final-cutover")


def build() -> Platform:
    """The fleet, with synthetic workloads unless it already has some."""
    platform = build_fleet()
    if platform.workloads:
        return platform
    workloads = [
        Workload(
            kind="Deployment",
            namespace=tenant.ns,
            name=f"job-{k}",
            replicas=replicas,
            gpus=gpus,
            tier=tenant.tiers[0],
            moves_in=MOVES[(t + k) % len(MOVES)],
        )
        for t, tenant in enumerate(platform.tenants)
        for k, (replicas, gpus) in enumerate(SHAPES)
    ]
    return platform.model_copy(update={"workloads": tuple(workloads)})
