"""The devices a platform's selectors are checked against: modelled from the catalog, or read from slices.

Both are prepared once per `check` as `FleetDevices`: node by node, each device is reduced to what
the platform's selectors read and only one representative per distinct row is kept, so a modelled
fleet of 8,000 nodes never holds its 64,000 device dicts at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gpuplatform.cel import DeviceSet
from gpuplatform.cel.device import Read
from gpuplatform.errors import InputError, Problem
from gpuplatform.inventory.catalog import DRIVER, NODE_SPECIFIC_ATTRIBUTES, slices_for_node
from gpuplatform.inventory.resource_slices import Pool
from gpuplatform.model.platform import Platform
from gpuplatform.policy.selectors import FleetDevices

__all__ = ["INVENTORY_GROUP", "MODELLED_NODE_SUFFIX", "inventory_devices", "modelled_devices"]

#: Provisioner-managed pools have no node names; one representative node is modelled for them.
MODELLED_NODE_SUFFIX = "-modelled-0"
#: The one group of an inventory's devices (owners are ResourceSlice pools).
INVENTORY_GROUP = "inventory"
_FIELDS = {"product": "product", "gpusPerNode": "gpusPerNode", "migLayout": "migLayout"}


def _set_for(sets: dict[str, DeviceSet], driver: str, reads: Iterable[Read]) -> DeviceSet:
    if driver not in sets:
        sets[driver] = DeviceSet(driver, reads)
    return sets[driver]


def _node_specific(reads: Iterable[Read]) -> bool:
    """Whether some read can tell two modelled nodes of one pool apart (then each node is modelled)."""
    for read in reads:
        if read == ("all",) or (read[0] == "attributes" and (read[1] is None or read[2] is None)):
            return True
        if read[0] == "attributes":
            qualified = read[2] if read[1] == DRIVER else f"{read[1]}/{read[2]}"
            if qualified in NODE_SPECIFIC_ATTRIBUTES:
                return True
    return False


def modelled_devices(
    platform: Platform, file: str, reads: Iterable[Read]
) -> tuple[FleetDevices, list[Problem]]:
    """Per node pool, the devices the DRA driver would publish for its nodes, prepared for `reads`.

    Nodes of a pool differ only in `NODE_SPECIFIC_ATTRIBUTES`; unless a selector reads one of them,
    the pool's first node is modelled and the others are recorded as identical to it.
    A pool the catalog cannot model (unknown product or MIG layout) is a GP301 finding.
    """
    reads = tuple(reads)
    every_node = _node_specific(reads)
    sets: dict[str, DeviceSet] = {}
    problems: list[Problem] = []
    for i, pool in enumerate(platform.node_pools):
        nodes = pool.nodes or (f"{pool.name}{MODELLED_NODE_SUFFIX}",)
        try:
            for n, node in enumerate(nodes):
                if n and not every_node:
                    for device_set in sets.values():
                        if (pool.name, nodes[0]) in device_set.owners:
                            device_set.add_like((pool.name, node), (pool.name, nodes[0]))
                    continue
                for item in slices_for_node(
                    node,
                    pool.product,
                    pool.gpus_per_node,
                    driver_release=platform.dra_driver.chart_version,
                    mig_layout=pool.mig_layout or None,
                ):
                    spec = item["spec"]
                    _set_for(sets, spec["driver"], reads).add((pool.name, node), spec["devices"])
        except InputError as exc:
            first = exc.problems[0]
            if first.loc == "driverRelease":
                loc = "spec.draDriver.chartVersion"
            else:
                loc = f"spec.nodePools[{i}].{_FIELDS.get(first.loc, 'product')}"
            problems.append(Problem(file, loc, "GP301", f"cannot model pool {pool.name!r}: {first.message}"))
    groups = [pool.name for pool in platform.node_pools]
    return FleetDevices([sets[d] for d in sorted(sets)], groups), problems


def inventory_devices(pools: Sequence[Pool], reads: Iterable[Read]) -> FleetDevices:
    """An inventory's devices prepared for `reads`; each ResourceSlice pool is one owner."""
    reads = tuple(reads)
    sets: dict[str, DeviceSet] = {}
    for index, pool in enumerate(pools):
        device_set = _set_for(sets, pool.driver, reads)
        for item in pool.slices:
            device_set.add((INVENTORY_GROUP, index), item["spec"].get("devices") or [])
    return FleetDevices([sets[d] for d in sorted(sets)], [INVENTORY_GROUP])
