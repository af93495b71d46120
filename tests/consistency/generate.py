"""A seeded generator of platforms across the dimensions the one-verdict promise covers.

Each dimension of n values is dealt in rounds of n cases, every round a seeded permutation of its
values: any round holds every value, and the dimensions combine independently. Same seed, same corpus.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from tests.specs import minimal_spec

DIMENSIONS: dict[str, tuple[Any, ...]] = {
    "pool": ("static", "karpenter", "node-group"),
    "mig": (False, True),
    "kubernetes": ("1.34.2", "1.35.1", "1.36.1"),
    "managed": (True, False),
    "engines": (("argocd",), ("flux",), ("argocd", "flux")),
    "chart": ("0.4.1", "25.12.0"),
    "computeDomains": (False, True),
    "externalNfd": (False, True),
    "hostDriver": (False, True),
    "bridge": (False, True),
}


@dataclass(frozen=True)
class Case:
    """One generated platform: its dimension values and its spec document."""

    name: str
    values: dict[str, Any]
    doc: dict[str, Any]


def corpus(count: int, seed: int = 30) -> list[Case]:
    """`count` platforms covering every value of every dimension (given enough cases)."""
    rng = random.Random(seed)
    rounds = {d: [rng.sample(range(len(v)), len(v)) for _ in range(count)] for d, v in DIMENSIONS.items()}
    cases = []
    for i in range(count):
        values = {d: v[rounds[d][i // len(v)][i % len(v)]] for d, v in DIMENSIONS.items()}
        cases.append(Case(f"case-{i:02d}", values, _spec(values)))
    return cases


def _spec(v: dict[str, Any]) -> dict[str, Any]:
    doc = minimal_spec()
    spec = doc["spec"]
    gates = {"DRAExtendedResource": True} if v["bridge"] and v["kubernetes"] != "1.36.1" else {}
    spec["kubernetes"] = {"version": v["kubernetes"], "featureGates": gates}
    values: dict[str, Any] = {}
    if v["externalNfd"]:
        values["nfd"] = {"enabled": False}
    if v["hostDriver"]:
        values["driver"] = {"enabled": False}
    spec["gpuOperator"] = {"managed": v["managed"], "values": values}
    spec["draDriver"] |= {"chartVersion": v["chart"], "computeDomains": v["computeDomains"]}
    if v["hostDriver"]:
        spec["draDriver"]["nvidiaDriverRoot"] = "/"
    spec["delivery"]["engines"] = list(v["engines"])
    new = spec["nodePools"][1]
    if v["pool"] != "static":
        del new["nodes"]
        new["provisioner"] = {"kind": v["pool"], "name": "gpu-h100", "maxNodes": 2}
        if v["pool"] == "node-group":
            new["provisioner"]["cloud"] = "eks"
    if v["mig"]:
        new["migLayout"] = ["3g.40gb", "3g.40gb"]
        spec["tiers"].append({"name": "mig", "deviceType": "mig", "migProfile": "3g.40gb"})
        spec["tenants"][0]["tiers"].append("mig")
    if v["bridge"]:
        spec["bridges"] = [{"name": "legacy-bridge"}]
        spec["waves"].insert(
            3, {"name": "bridge", "stage": "compatibility-bridge", "bridges": ["legacy-bridge"]}
        )
    return doc
