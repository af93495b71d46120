"""Hand-built platforms whose capacity answer is known, for the capacity tests."""

from __future__ import annotations

from typing import Any

from gpuplatform.model import (
    ClaimTemplate,
    Delivery,
    DraDriver,
    NodePool,
    Platform,
    Provisioner,
    ServiceTier,
    Tenant,
    Wave,
    Workload,
)

WAVES = [
    Wave(name="base", stage="baseline"),
    Wave(name="pilot", stage="pilot-pool"),
    Wave(name="claims", stage="native-claim-pilot", tiers=["full", "mig"], tenants=["team"]),
    Wave(name="move", stage="application"),
    Wave(name="cutover", stage="final-cutover"),
]


def platform(
    pools: list[NodePool], workloads: list[Workload] = (), templates: list[ClaimTemplate] = (), **extra: Any
) -> Platform:
    """A platform with the five waves above, a full-GPU tier and a MIG tier, one tenant."""
    return Platform(
        name="lab",
        domain="lab.example.com",
        dra_driver=DraDriver(chart_repository="oci://registry.example.com/charts"),
        node_pools=pools,
        tiers=[
            ServiceTier(name="full", device_type="gpu"),
            ServiceTier(name="mig", device_type="mig", mig_profile="3g.40gb"),
        ],
        tenants=[Tenant(name="team", tiers=["full", "mig"], claim_templates=list(templates))],
        workloads=list(workloads),
        waves=WAVES,
        active_wave="base",
        delivery=Delivery(repo_url="https://git.example.com/lab.git"),
        **extra,
    )


def pool(name: str, nodes: int, gpus: int = 8, migrates_in: str | None = None, **extra: Any) -> NodePool:
    return NodePool(
        name=name,
        nodes=[f"{name}-{i:02d}" for i in range(nodes)],
        product=extra.pop("product", "H100-80GB"),
        gpus_per_node=gpus,
        migrates_in=migrates_in,
        **extra,
    )


def workload(name: str, replicas: int, gpus: int, moves_in: str = "cutover", **extra: Any) -> Workload:
    return Workload(
        kind="Deployment",
        namespace="team",
        name=name,
        gpus=gpus,
        replicas=replicas,
        tier="full",
        moves_in=moves_in,
        **extra,
    )


def provisioned(
    name: str,
    kind: str = "karpenter",
    gpus: int = 8,
    migrates_in: str | None = None,
    **provisioner: Any,
) -> NodePool:
    """A pool a provisioner manages (`minNodes` 1 unless given)."""
    cloud = {"cloud": "eks"} if kind == "node-group" else {}
    return NodePool(
        name=name,
        provisioner=Provisioner(kind=kind, name=f"{name}-np", **cloud, **provisioner),
        product="H100-80GB",
        gpus_per_node=gpus,
        migrates_in=migrates_in,
    )
