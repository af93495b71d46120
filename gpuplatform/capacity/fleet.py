"""The platform's nodes as capacity: per pool and mode, groups of interchangeable nodes.

A node in legacy mode offers the device plugin's extended resources for the pool's MIG layout and
the running GPU Operator's MIG strategy (`inventory.device_plugin`). In DRA mode it offers the
devices the driver publishes, modelled with `inventory.slices_for_node` for one representative node
whose per-node attributes such as `uuid` stand for every node of its group. The modelled fleet has one group per pool and mode; a snapshot
(`capacity.snapshot`) gives one group per distinct kind of real node, with the devices already
allocated on each node as its starting state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gpuplatform.capacity.allocator import DeviceID
from gpuplatform.capacity.growth import Growth, pool_growth
from gpuplatform.errors import InputError, Problem
from gpuplatform.gates.nodes import pool_selector
from gpuplatform.inventory.catalog import lookup_product, slices_for_node
from gpuplatform.inventory.device_plugin import advertised, running_mig_strategy
from gpuplatform.inventory.resource_slices import normalise_slice
from gpuplatform.kube.nodes import INSTANCE_TYPE_LABEL, Node
from gpuplatform.labels import GPU_COUNT_LABEL, GPU_PRODUCT_LABEL
from gpuplatform.model.nodes import NodePool
from gpuplatform.model.platform import Platform
from gpuplatform.render.nodes import node_labels, pool_taint

__all__ = [
    "MODES",
    "Fleet",
    "Group",
    "PoolModel",
    "Shape",
    "State",
    "build_fleet",
    "device_plugin_resources",
    "mode_labels",
    "model_shape",
]

MODES = ("legacy", "dra")
State = tuple[int, ...] | frozenset[DeviceID]
"""A node's use: free units per extended resource (legacy), or the devices taken (DRA)."""


def device_plugin_resources(platform: Platform, pool: NodePool, gpus: int | None = None) -> dict[str, int]:
    """Extended resources one node of the pool (with `gpus` GPUs, default the pool's) advertises
    under the running GPU Operator's MIG strategy (none when the device plugin fails to start)."""
    count = pool.gpus_per_node if gpus is None else gpus
    return advertised(pool.mig_layout, count, running_mig_strategy(platform)) or {}


@dataclass(frozen=True)
class Shape:
    """What each node of a group offers in one mode, and the node placement matches against."""

    key: str
    """Unique in a fleet: the memo key of every allocation on such a node."""
    pool: str
    mode: str
    node: Node
    resources: Mapping[str, int] = field(default_factory=dict)
    slices: tuple[Mapping[str, Any], ...] = ()
    source: str = "model"
    """`model` (from the spec) or `snapshot` (the node's allocatable or ResourceSlices)."""

    @cached_property
    def resource_names(self) -> tuple[str, ...]:
        return tuple(sorted(self.resources))

    @cached_property
    def devices(self) -> tuple[DeviceID, ...]:
        return tuple(
            (str(s["spec"]["driver"]), str(s["spec"]["pool"]["name"]), str(d["name"]))
            for s in self.slices
            for d in s["spec"].get("devices") or ()
        )

    @property
    def capacity(self) -> int:
        """GPUs (or MIG resources) in legacy mode, devices in DRA mode."""
        return sum(self.resources.values()) if self.mode == "legacy" else len(self.devices)

    def empty(self) -> State:
        """The state of a node nothing runs on."""
        if self.mode == "legacy":
            return tuple(self.resources[r] for r in self.resource_names)
        return frozenset()

    def free(self, state: State) -> int:
        if isinstance(state, tuple):
            return sum(state)
        return len(self.devices) - len(state)


@dataclass(frozen=True)
class Group:
    """Nodes of one shape: their starting states and how many nodes are in each."""

    shape: Shape
    nodes: tuple[tuple[State, int], ...]

    @property
    def count(self) -> int:
        return sum(n for _, n in self.nodes)


@dataclass(frozen=True)
class PoolModel:
    """One node pool as capacity, per mode, and how its provisioner adds nodes."""

    name: str
    pool: NodePool | None
    """The spec's pool; None for a snapshot's GPU nodes that no pool names."""
    groups: Mapping[str, tuple[Group, ...]]
    """Mode -> the pool's nodes in that mode."""
    growth: Growth | None = None
    added: Mapping[str, Shape] = field(default_factory=dict)
    """Mode -> a node the provisioner adds (pools with `growth`)."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """Mode -> where its numbers come from: `model`, `snapshot`, or `snapshot nodes, modelled devices`."""
    notes: tuple[str, ...] = ()
    fixed: str = ""
    """The mode of a pool the spec does not move (a snapshot's unnamed GPU nodes) in every moment."""

    def nodes(self, mode: str) -> int:
        return sum(g.count for g in self.groups.get(mode, ()))


@dataclass(frozen=True)
class Fleet:
    """Every pool of a platform, modelled once and reused by every wave and moment."""

    platform: Platform
    pools: tuple[PoolModel, ...]
    notes: tuple[str, ...] = ()
    """What the numbers rest on (a snapshot's missing kinds, devices held by foreign claims)."""
    given: Mapping[str, int] = field(default_factory=dict)
    """Nodes each pool had already given to new groups (`takesOverFrom`) when its nodes were
    counted: none for the spec's pools, those of the active wave for a snapshot's."""


def mode_labels(platform: Platform, pool: NodePool, mode: str, product: str, gpus: int) -> dict[str, str]:
    """Labels of a pool's node in `mode`: the platform's, the provisioner's, and GPU Feature
    Discovery's product and count."""
    labels = node_labels(platform, pool, "dra" if mode == "dra" else "legacy")
    labels.update(pool_selector(pool).member_labels())
    if pool.instance_type is not None:  # the other well-known labels name the node, never its pool
        labels[INSTANCE_TYPE_LABEL] = pool.instance_type
    labels[GPU_PRODUCT_LABEL] = product.replace(" ", "-")
    labels[GPU_COUNT_LABEL] = str(gpus)
    return labels


def _modelled_slices(
    platform: Platform, pool: NodePool, node: str, gpus: int
) -> tuple[Mapping[str, Any], ...]:
    return tuple(
        normalise_slice(s)
        for s in slices_for_node(
            node,
            pool.product,
            gpus,
            driver_release=platform.dra_driver.chart_version,
            mig_layout=pool.mig_layout or None,
        )
    )


def model_shape(
    platform: Platform,
    pool: NodePool,
    mode: str,
    *,
    key: str = "",
    node: str = "",
    labels: Mapping[str, str] | None = None,
    gpus: int | None = None,
) -> Shape:
    """A node of `pool` as the spec describes it (InputError for a product the catalog lacks).

    `node`, `labels` and `gpus` replace the modelled name, labels and GPU count (a real node
    whose devices are modelled).
    """
    count = pool.gpus_per_node if gpus is None else gpus
    name = node or f"{pool.name}-modelled-0"
    product = lookup_product(pool.product).product_name
    found = dict(mode_labels(platform, pool, mode, product, count) if labels is None else labels)
    key = key or f"{pool.name}:{mode}:model"
    if mode == "legacy":
        return Shape(key, pool.name, mode, Node(name, found), device_plugin_resources(platform, pool, count))
    taint = pool_taint(platform, pool)
    slices = _modelled_slices(platform, pool, name, count)
    return Shape(key, pool.name, mode, Node(name, found, (taint,)), slices=slices)


def _model_pool(platform: Platform, pool: NodePool) -> PoolModel:
    growth = pool_growth(platform, pool)
    count = len(pool.nodes) if growth is None else growth.floor
    node = pool.nodes[0] if pool.nodes else ""
    groups: dict[str, tuple[Group, ...]] = {}
    shapes = {mode: model_shape(platform, pool, mode, node=node) for mode in MODES}
    for mode, shape in shapes.items():
        groups[mode] = (Group(shape, ((shape.empty(), count),)),) if count else ()
    added = shapes if growth is not None else {}
    return PoolModel(pool.name, pool, groups, growth, added, dict.fromkeys(MODES, "model"))


def build_fleet(platform: Platform, file: str = "<spec>") -> Fleet:
    """Model every pool from the spec; an unknown product or MIG layout is an InputError at its path."""
    pools, problems = [], []
    for i, pool in enumerate(platform.node_pools):
        try:
            pools.append(_model_pool(platform, pool))
        except InputError as exc:
            message = f"cannot model pool {pool.name!r}: {exc.problems[0].message}"
            problems.append(Problem(file, f"spec.nodePools[{i}]", "", message))
    if problems:
        raise InputError(problems)
    return Fleet(platform, tuple(pools))
