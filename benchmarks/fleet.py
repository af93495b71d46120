"""A synthetic fleet for benchmarks: `FLEET_NODES` nodes (default 2000), 8 GPUs each, pools of 100,
40 tiers, 100 tenants, 8 waves. Usable as a stack: `gpuplatform synth benchmarks/fleet.py --out DIR`.
"""

from __future__ import annotations

import os

from gpuplatform.model import (
    ClaimTemplate,
    Delivery,
    DraDriver,
    GpuOperator,
    NodePool,
    Platform,
    ServiceTier,
    Tenant,
    Wave,
)

PRODUCTS = ("H100-80GB", "A100-80GB", "H200-141GB", "L40S", "B200")
ARCHITECTURES = ("Hopper", "Ampere", "Hopper", "Ada Lovelace", "Blackwell")
WAVES = (
    ("baseline", "baseline"),
    ("pilot-pool", "pilot-pool"),
    ("driver-validation", "driver-validation"),
    ("native-claim-pilot", "native-claim-pilot"),
    ("compatibility-bridge", "compatibility-bridge"),
    ("application", "application"),
    ("scale", "scale"),
    ("final-cutover", "final-cutover"),
)


def _migrates_in(index: int, pools: int) -> str | None:
    """Pool 0 is the pilot; half the fleet moves in `scale`, the rest at the final cutover.

    Pools never move in a wave that also changes claims (tiers, tenants), so no drain wave is needed.
    """
    if index == 0:
        return "pilot-pool"
    if index <= pools // 2:
        return "scale"
    return None


def build() -> Platform:
    """The fleet, sized by the environment variable FLEET_NODES."""
    nodes = int(os.environ.get("FLEET_NODES", "2000"))
    pool_count = max(1, (nodes + 99) // 100)
    pools = [
        NodePool(
            name=f"pool-{i:03d}",
            nodes=[f"gpu-{i:03d}-{j:03d}" for j in range(min(100, nodes - i * 100))],
            product=PRODUCTS[i % len(PRODUCTS)],
            gpus_per_node=8,
            migrates_in=_migrates_in(i, pool_count),
        )
        for i in range(pool_count)
    ]
    tiers = [
        ServiceTier(
            name=f"tier-{k:02d}",
            architecture=ARCHITECTURES[k % len(ARCHITECTURES)],
            min_memory=f"{16 * (1 + k % 5)}Gi",
        )
        for k in range(40)
    ]
    tenants = [
        Tenant(
            name=f"team-{t:03d}",
            tiers=[tiers[t % 40].name, tiers[(t + 1) % 40].name],
            groups=[f"team-{t:03d}-ops"],
            claim_templates=[
                ClaimTemplate(name="one-gpu", tier=tiers[t % 40].name, count=1),
                ClaimTemplate(name="four-gpus", tier=tiers[(t + 1) % 40].name, count=4),
            ],
        )
        for t in range(100)
    ]
    waves = [
        Wave(
            name=name,
            stage=stage,  # type: ignore[arg-type]
            tiers=[t.name for t in tiers] if stage == "native-claim-pilot" else [],
            tenants=[t.name for t in tenants[:10]]
            if stage == "native-claim-pilot"
            else [t.name for t in tenants[10:]]
            if stage == "application"
            else [],
        )
        for name, stage in WAVES
    ]
    return Platform(
        name="fleet",
        domain="fleet.example.com",
        gpu_operator=GpuOperator(managed=True),
        dra_driver=DraDriver(chart_repository="oci://registry.example.com/charts"),
        node_pools=pools,
        tiers=tiers,
        tenants=tenants,
        waves=waves,
        active_wave="application",
        delivery=Delivery(engines=["argocd", "flux"], repo_url="https://git.example.com/fleet.git"),
    )
