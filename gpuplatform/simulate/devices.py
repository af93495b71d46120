"""How many of a pool's devices a DeviceClass selects: the catalog's modelled slices and the CEL engine.

The scheduler's structured allocator (kubernetes/dynamic-resource-allocation `structured`) allocates
a device for a request when every selector of the class and of the request evaluates to true; a
runtime error makes the device unusable, never a match.
"""

from __future__ import annotations

from typing import Any

from gpuplatform.cel import CelCompileError, DeviceSelector
from gpuplatform.errors import InputError
from gpuplatform.inventory.catalog import DRIVER, slices_for_node
from gpuplatform.inventory.resource_slices import normalise_slice
from gpuplatform.model.nodes import NodePool
from gpuplatform.model.platform import Platform
from gpuplatform.versions import cluster_gates, parse_release

__all__ = ["DeviceMatcher"]


def _devices(platform: Platform, pool: NodePool, layout: tuple[str, ...]) -> list[dict[str, Any]]:
    """The devices one node of `pool` publishes with MIG `layout` (none when the catalog cannot model it)."""
    try:
        slices = slices_for_node(
            f"{pool.name}-0",
            pool.product,
            pool.gpus_per_node,
            driver_release=platform.dra_driver.chart_version,
            mig_layout=layout or None,
        )
    except InputError:
        return []
    return [d for s in slices for d in normalise_slice(s)["spec"].get("devices") or []]


class DeviceMatcher:
    """Counts, per node of a pool, the devices a class's selectors select (memoised)."""

    def __init__(self, platform: Platform) -> None:
        self._platform = platform
        self._pools = {pool.name: pool for pool in platform.node_pools}
        self._devices: dict[tuple[str, tuple[str, ...]], list[dict[str, Any]]] = {}
        self._minor = parse_release(platform.kubernetes.version).minor
        self._features = cluster_gates(platform.kubernetes.feature_gates, self._minor)
        self._compiled: dict[str, DeviceSelector | None] = {}
        self._counts: dict[tuple[tuple[str, ...], str, tuple[str, ...]], int] = {}

    def _selector(self, expression: str) -> DeviceSelector | None:
        if expression not in self._compiled:
            try:
                self._compiled[expression] = DeviceSelector(
                    expression, kubernetes=self._minor, new_expression=False, features=self._features
                )
            except CelCompileError:
                self._compiled[expression] = None
        return self._compiled[expression]

    def _of(self, pool: str, layout: tuple[str, ...]) -> list[dict[str, Any]]:
        spec = self._pools.get(pool)
        if spec is None:
            return []
        if (pool, layout) not in self._devices:
            self._devices[pool, layout] = _devices(self._platform, spec, layout)
        return self._devices[pool, layout]

    def count(self, expressions: tuple[str, ...], pool: str, layout: tuple[str, ...] | None = None) -> int:
        """Devices of one node of `pool` (MIG `layout`, default the spec's) that every expression selects."""
        spec = self._pools.get(pool)
        layout = layout if layout is not None else (spec.mig_layout if spec else ())
        key = (expressions, pool, layout)
        if key not in self._counts:
            devices = self._of(pool, layout)
            selected = [True] * len(devices)
            for expression in expressions:
                selector = self._selector(expression)
                outcomes = selector.verdicts(DRIVER, devices) if selector else [False] * len(devices)
                selected = [s and o is True for s, o in zip(selected, outcomes, strict=True)]
            self._counts[key] = sum(selected)
        return self._counts[key]
