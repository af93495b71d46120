"""The lab platform of `tests/specs.py`, built through the SDK (the way a Python stack builds one)."""

from __future__ import annotations

from typing import Any

from gpuplatform.model import (
    ClaimTemplate,
    Delivery,
    DraDriver,
    NodePool,
    Platform,
    ServiceTier,
    Tenant,
    Wave,
)


def lab_platform_fields() -> dict[str, Any]:
    """The keyword arguments of the lab Platform (lists, so that a test can change one item)."""
    return {
        "name": "lab",
        "domain": "lab.example.com",
        "dra_driver": DraDriver(chart_repository="oci://registry.example.com/charts"),
        "delivery": Delivery(repo_url="https://git.example.com/lab.git"),
        "node_pools": [
            NodePool(name="old", nodes=["gpu-01"], product="A100-40GB", gpus_per_node=4),
            NodePool(name="new", nodes=["gpu-02"], product="H100-80GB", migrates_in="pilot"),
        ],
        "tiers": [ServiceTier(name="full", device_type="gpu")],
        "tenants": [
            Tenant(
                name="team-a",
                tiers=["full"],
                groups=["team-a-ops"],
                claim_templates=[ClaimTemplate(name="one-gpu", tier="full")],
            )
        ],
        "waves": [
            Wave(name="base", stage="baseline"),
            Wave(name="pilot", stage="pilot-pool"),
            Wave(name="claims", stage="native-claim-pilot", tiers=["full"], tenants=["team-a"]),
            Wave(name="cutover", stage="final-cutover"),
        ],
        "active_wave": "pilot",
    }


def lab_platform(**changes: Any) -> Platform:
    """The lab Platform, with `changes` to its fields."""
    return Platform(**(lab_platform_fields() | changes))
