"""The platform's nodes as capacity: device-plugin resources in legacy mode, DRA devices in DRA mode.

Nodes of one pool are interchangeable: the DRA driver publishes the same devices on each (modelled
with `inventory.slices_for_node` for one representative node, whose per-node attributes such as
`uuid` stand for all of them) and the GPU Operator's device plugin advertises `nvidia.com/gpu: <gpus>`,
or one `nvidia.com/mig-<profile>` per MIG device of the pool's layout (the operator's `mixed`
MIG strategy). Provisioner-managed pools list no nodes and contribute no capacity.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuplatform.errors import InputError, Problem
from gpuplatform.inventory.catalog import lookup_product, slices_for_node
from gpuplatform.inventory.resource_slices import normalise_slice
from gpuplatform.model.nodes import NodePool
from gpuplatform.model.platform import Platform
from gpuplatform.render.nodes import node_labels, pool_taint

__all__ = ["Fleet", "PoolModel", "build_fleet", "device_plugin_resources"]

PRODUCT_LABEL = "nvidia.com/gpu.product"


def device_plugin_resources(pool: NodePool) -> dict[str, int]:
    """Extended resources one node of the pool advertises through the device plugin."""
    if not pool.mig_layout:
        return {"nvidia.com/gpu": pool.gpus_per_node}
    counts = Counter(f"nvidia.com/mig-{profile}" for profile in pool.mig_layout)
    return {name: n * pool.gpus_per_node for name, n in sorted(counts.items())}


@dataclass(frozen=True)
class PoolModel:
    """One node pool, reduced to what placement needs."""

    pool: NodePool
    nodes: int
    legacy_labels: Mapping[str, str]
    dra_labels: Mapping[str, str]
    taint: Mapping[str, str]
    resources: Mapping[str, int]
    representative: str
    slices: tuple[Mapping[str, Any], ...]

    @property
    def name(self) -> str:
        return self.pool.name

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(str(d["name"]) for s in self.slices for d in s["spec"].get("devices") or ())


@dataclass(frozen=True)
class Fleet:
    """Every pool of a platform, modelled once and reused by every wave."""

    platform: Platform
    pools: tuple[PoolModel, ...]


def _labels(platform: Platform, pool: NodePool, mode: str, product: str) -> dict[str, str]:
    labels = node_labels(platform, pool, "dra" if mode == "dra" else "legacy")
    labels[PRODUCT_LABEL] = product.replace(" ", "-")
    labels["nvidia.com/gpu.count"] = str(pool.gpus_per_node)
    return labels


def build_fleet(platform: Platform, file: str = "<spec>") -> Fleet:
    """Model every pool; an unknown product or MIG layout is an InputError at its spec path."""
    pools, problems = [], []
    for i, pool in enumerate(platform.node_pools):
        representative = pool.nodes[0] if pool.nodes else f"{pool.name}-modelled-0"
        try:
            product = lookup_product(pool.product).product_name
            slices = tuple(
                normalise_slice(s)
                for s in slices_for_node(
                    representative,
                    pool.product,
                    pool.gpus_per_node,
                    driver_release=platform.dra_driver.chart_version,
                    mig_layout=pool.mig_layout or None,
                )
            )
        except InputError as exc:
            problems.append(
                Problem(
                    file,
                    f"spec.nodePools[{i}]",
                    "",
                    f"cannot model pool {pool.name!r}: {exc.problems[0].message}",
                )
            )
            continue
        pools.append(
            PoolModel(
                pool=pool,
                nodes=len(pool.nodes),
                legacy_labels=_labels(platform, pool, "legacy", product),
                dra_labels=_labels(platform, pool, "dra", product),
                taint=pool_taint(platform, pool),
                resources=device_plugin_resources(pool),
                representative=representative,
                slices=slices,
            )
        )
    if problems:
        raise InputError(problems)
    return Fleet(platform, tuple(pools))
