"""Capacity from a cluster snapshot: its nodes, their allocatable GPUs and ResourceSlices, and the
devices claims already hold.

A pool's nodes are the snapshot's nodes it selects (a static pool's names, a provisioner pool's
labels); its provisioner may add modelled nodes up to its limit. Per mode, a node offers:

- legacy: its `status.allocatable` `nvidia.com/gpu` and `nvidia.com/mig-*` when the device plugin
  advertises them (source `snapshot`); otherwise (the node is in DRA mode in the snapshot) the
  pool's modelled resources for the node's GPU count (GPU Feature Discovery's `nvidia.com/gpu.count`);
- DRA: the ResourceSlices published for it when the GPU driver publishes any (`snapshot`), the
  devices held by claims the spec does not model taken from the start; otherwise modelled devices.

A node keeps its own labels and taints, with the platform's mode labels and the pool's DRA taint as
the moment's mode requires; a cordoned node (`spec.unschedulable`) takes no pod that does not
tolerate `node.kubernetes.io/unschedulable` (the scheduler's NodeUnschedulable filter). GPU nodes
no pool selects keep their snapshot mode in every moment. Nodes alike in all that placement reads
(the labels node selectors name, taints, resources, devices with the attributes selectors read)
form one group, so a 2,000-node snapshot is placed as a few groups. Slices that select nodes by
label or cover all nodes (network-attached devices) are not read.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpuplatform.capacity.allocator import DeviceID
from gpuplatform.capacity.demand import Demand, wave_demands
from gpuplatform.capacity.fields import mapping_at, mappings_at
from gpuplatform.capacity.fleet import MODES, Fleet, Group, PoolModel, Shape, State, build_fleet, model_shape
from gpuplatform.capacity.growth import pool_growth
from gpuplatform.capacity.held import Held
from gpuplatform.capacity.moments import moment_classes
from gpuplatform.capacity.selectors import SelectorCache
from gpuplatform.cel import CelCompileError
from gpuplatform.cel.checker import ALL
from gpuplatform.cel.quantity import QuantityError, parse_quantity
from gpuplatform.errors import InputError, Problem
from gpuplatform.gates.nodes import pool_selector
from gpuplatform.inventory.catalog import DRIVER
from gpuplatform.inventory.resource_slices import normalise_slice
from gpuplatform.kube.nodes import Node
from gpuplatform.labels import (
    DEVICE_PLUGIN_DEPLOY_LABEL,
    DRA_PLUGIN_LABEL,
    GPU_COUNT_LABEL,
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
    VALIDATOR_DEPLOY_LABEL,
)
from gpuplatform.model.nodes import NodePool
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import Plan
from gpuplatform.render.nodes import node_labels, pool_taint
from gpuplatform.snapshot.read import Snapshot

__all__ = ["UNLISTED", "Reads", "RealNode", "plan_reads", "read_nodes", "snapshot_fleet", "snapshot_slices"]

UNLISTED = "(no pool)"
"""Names the pools of a snapshot's GPU nodes that no pool of the spec selects."""
UNSCHEDULABLE = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


@dataclass(frozen=True)
class Reads:
    """What placement reads of a node: the labels node selectors name, and the device attributes
    and capacities selectors read (None: any of them)."""

    labels: frozenset[str]
    attributes: frozenset[str] | None


def plan_reads(plan: Plan, extra: Iterable[Demand], selectors: SelectorCache) -> Reads:
    """The label keys and device attribute names any moment of the plan reads."""
    demands = [*extra]
    expressions: set[str] = set()
    for state in plan.waves:
        demands += wave_demands(plan, state)
        expressions |= {str(e) for c in moment_classes(plan, state).values() for e in c.selectors if e}
    for d in demands:
        for claim in d.claims:
            for q in claim.requests:
                for r in (q.exactly,) if q.exactly else q.first_available:
                    expressions |= {e for e in r.selectors if e}
    names: set[str] = set()
    for expression in sorted(expressions):
        try:
            reads = selectors.compile(expression).reads
        except CelCompileError:
            continue
        for read in reads:
            if read == ALL or (read[0] in ("attributes", "capacity") and read[2] is None):
                return Reads(frozenset(k for d in demands for k in d.node_selector), None)
            if read[0] in ("attributes", "capacity") and read[2] is not None:
                names.add(str(read[2]))
    names |= {
        c.match_attribute.rpartition("/")[2]
        for d in demands
        for cl in d.claims
        for c in cl.constraints
        if c.match_attribute
    }
    return Reads(frozenset(k for d in demands for k in d.node_selector), frozenset(names))


def snapshot_slices(snapshot: Snapshot) -> list[dict[str, Any]]:
    """The snapshot's ResourceSlices as v1 (InputError naming the file and item)."""
    source = str(snapshot.folder / "resourceslices.json")
    return [
        normalise_slice(item, source, f"items[{i}]")
        for i, item in enumerate(snapshot.items("resourceslices") or ())
    ]


@dataclass(frozen=True)
class RealNode:
    """A snapshot node: what it advertises to each allocator, and the devices claims hold on it."""

    raw: dict[str, Any]
    name: str
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, Any], ...]
    resources: Mapping[str, int]
    slices: tuple[Mapping[str, Any], ...]
    pinned: frozenset[DeviceID] = frozenset()

    @property
    def gpus(self) -> int | None:
        """The node's GPU count: GPU Feature Discovery's label, else its allocatable GPUs."""
        for text in (self.labels.get(GPU_COUNT_LABEL), self.resources.get(GPU_RESOURCE)):
            if text is not None and str(text).isdigit():
                return int(text)
        return None

    @property
    def publishes(self) -> bool:
        return any(s["spec"]["driver"] == DRIVER for s in self.slices)


def _count(value: Any) -> int:
    try:
        return int(parse_quantity(str(value)).value)
    except QuantityError:
        return 0


def read_nodes(snapshot: Snapshot, slices: Sequence[Mapping[str, Any]]) -> list[RealNode]:
    """The snapshot's nodes (InputError naming `nodes.json` and the field of a malformed one)."""
    by_node: dict[str, list[Mapping[str, Any]]] = {}
    for s in slices:
        node = s["spec"].get("nodeName")
        if node:
            by_node.setdefault(str(node), []).append(s)
    out = []
    file = str(snapshot.folder / "nodes.json")
    for i, item in enumerate(snapshot.items("nodes") or ()):
        loc = f"items[{i}]"
        meta, spec = mapping_at(item, "metadata", file, loc), mapping_at(item, "spec", file, loc)
        name = str(meta.get("name", ""))
        allocatable = mapping_at(item, "status.allocatable", file, loc)
        resources = {
            str(k): _count(v)
            for k, v in allocatable.items()
            if k == GPU_RESOURCE or str(k).startswith(MIG_RESOURCE_PREFIX)
        }
        taints = tuple(mappings_at(item, "spec.taints", file, loc))
        if spec.get("unschedulable") and not any(t.get("key") == UNSCHEDULABLE["key"] for t in taints):
            taints += (UNSCHEDULABLE,)
        out.append(
            RealNode(
                item,
                name,
                {str(k): str(v) for k, v in mapping_at(item, "metadata.labels", file, loc).items()},
                taints,
                {k: v for k, v in resources.items() if v > 0},
                tuple(by_node.get(name, ())),
            )
        )
    return out


def _device_key(device: Mapping[str, Any], names: frozenset[str] | None) -> dict[str, Any]:
    out = {k: v for k, v in device.items() if k not in ("attributes", "capacity")}
    for kind in ("attributes", "capacity"):
        values = device.get(kind) or {}
        out[kind] = {k: v for k, v in values.items() if names is None or k.rpartition("/")[2] in names}
    return out


def _slices_key(node: RealNode, names: frozenset[str] | None) -> list[Any]:
    """The node's slices with its own name taken out and unread attributes dropped."""
    out = []
    for s in node.slices:
        spec = s["spec"]
        pool = dict(spec["pool"], name=str(spec["pool"]["name"]).replace(node.name, "\0"))
        devices = [_device_key(d, names) for d in spec.get("devices") or ()]
        rest = {k: v for k, v in spec.items() if k not in ("pool", "devices", "nodeName")}
        out.append({"pool": pool, "devices": devices, **rest})
    return sorted(out, key=lambda x: json.dumps(x, sort_keys=True))


class _Groups:
    """Nodes of one pool and mode, grouped by what placement reads."""

    def __init__(self, pool: str, mode: str) -> None:
        self.pool, self.mode, self.key = pool, mode, f"{pool}:{mode}"
        self.shapes: dict[str, Shape] = {}
        self.states: dict[str, Counter[State]] = {}
        self.real = self.modelled = 0

    def add(self, key: str, build: Callable[[str], Shape], state_of: Callable[[Shape], State]) -> None:
        shape = self.shapes.get(key)
        if shape is None:
            shape = self.shapes[key] = build(f"{self.key}:{len(self.shapes)}")
            self.states[key] = Counter()
        self.states[key][state_of(shape)] += 1

    def groups(self) -> tuple[Group, ...]:
        return tuple(Group(s, tuple(self.states[k].items())) for k, s in self.shapes.items())

    def source(self) -> str:
        if not self.real and not self.modelled:
            return "snapshot: no node found"
        if not self.modelled:
            return "snapshot"
        if not self.real:
            return "snapshot nodes, modelled devices"
        return f"snapshot ({self.modelled} of {self.real + self.modelled} node(s) modelled)"


def _pinned_on(node: RealNode, representative: Shape) -> frozenset[DeviceID]:
    """The node's held devices, named as on the group's representative node."""
    rep = representative.node.name
    return frozenset(
        (driver, pool.replace(node.name, rep), device)
        for driver, pool, device in node.pinned
        if (driver, pool.replace(node.name, rep), device) in representative.devices
    )


class _Builder:
    def __init__(self, platform: Platform, reads: Reads) -> None:
        self.platform, self.reads = platform, reads
        self.managed = {
            platform.mode_label_key,
            DRA_PLUGIN_LABEL,
            DEVICE_PLUGIN_DEPLOY_LABEL,
            VALIDATOR_DEPLOY_LABEL,
        }

    def labels(self, node: RealNode, pool: NodePool | None, mode: str) -> dict[str, str]:
        labels = dict(node.labels)
        if pool is not None:
            labels = {k: v for k, v in labels.items() if k not in self.managed}
            labels |= node_labels(self.platform, pool, "dra" if mode == "dra" else "legacy")
        return {k: v for k, v in sorted(labels.items()) if k in self.reads.labels}

    def taints(self, node: RealNode, pool: NodePool | None, mode: str) -> tuple[Mapping[str, Any], ...]:
        if pool is None:
            return node.taints
        taint = pool_taint(self.platform, pool)
        mine = {"key": taint["key"], "value": taint.get("value", ""), "effect": taint["effect"]}
        kept = tuple(t for t in node.taints if {k: t.get(k, "") for k in mine} != mine)
        return (*kept, taint) if mode == "dra" else kept

    def add(self, groups: _Groups, node: RealNode, pool: NodePool | None, mode: str) -> None:
        labels, taints = self.labels(node, pool, mode), self.taints(node, pool, mode)
        who = json.dumps([labels, list(taints)], sort_keys=True)
        if mode == "legacy" and node.resources:
            groups.real += 1
            key = f"real {who} {sorted(node.resources.items())}"
            shape = Shape(
                "", groups.pool, mode, Node(node.name, labels, taints), node.resources, source="snapshot"
            )
            groups.add(key, lambda k: replace(shape, key=k), Shape.empty)
        elif mode == "dra" and node.publishes:
            groups.real += 1
            key = f"real {who} {json.dumps(_slices_key(node, self.reads.attributes), sort_keys=True)}"
            node_of = Node(node.name, labels, taints)
            shape = Shape("", groups.pool, mode, node_of, slices=node.slices, source="snapshot")
            groups.add(key, lambda k: replace(shape, key=k), lambda s: _pinned_on(node, s))
        elif pool is not None:
            groups.modelled += 1
            gpus = node.gpus or pool.gpus_per_node
            key = f"model {who} {gpus}"

            def build(k: str) -> Shape:
                shape = model_shape(
                    self.platform, pool, mode, key=k, node=node.name, labels=labels, gpus=gpus
                )
                return replace(shape, node=Node(node.name, labels, taints))

            groups.add(key, build, Shape.empty)


def snapshot_fleet(
    platform: Platform,
    snapshot: Snapshot,
    found: Sequence[RealNode],
    held: Held,
    reads: Reads,
    file: str,
    given: Mapping[str, int] | None = None,
) -> Fleet:
    """The fleet as the snapshot shows it; the modelled fleet with a note when it has no nodes.
    `given`: the nodes each pool had given to new groups when the snapshot was taken (its active
    wave's, `Plan.given_all`)."""
    if snapshot.items("nodes") is None:
        fleet = build_fleet(platform, file)
        return replace(
            fleet, notes=("the snapshot has no nodes: capacity is modelled from the spec", *held.notes)
        )
    nodes = [replace(n, pinned=held.pinned.get(n.name, frozenset())) for n in found]
    builder = _Builder(platform, reads)
    taken: set[str] = set()
    pools, problems = [], []
    for i, pool in enumerate(platform.node_pools):
        selector = pool_selector(pool)
        members = [n for n in nodes if n.name not in taken and selector.matches(n.raw)]
        taken |= {n.name for n in members}
        try:
            pools.append(_snapshot_pool(platform, pool, members, builder))
        except InputError as exc:
            message = f"cannot model pool {pool.name!r}: {exc.problems[0].message}"
            problems.append(Problem(file, f"spec.nodePools[{i}]", "", message))
    if problems:
        raise InputError(problems)
    others = [n for n in nodes if n.name not in taken and (n.resources or n.publishes)]
    pools += _unlisted(others, builder)
    notes = [note for p in pools for note in p.notes]
    if snapshot.items("resourceslices") is None:
        notes.append("the snapshot has no ResourceSlices: DRA devices are modelled")
    return Fleet(platform, tuple(pools), (*notes, *held.notes), dict(given or {}))


def _snapshot_pool(
    platform: Platform, pool: NodePool, members: list[RealNode], builder: _Builder
) -> PoolModel:
    groups, sources = {}, {}
    for mode in MODES:
        found = _Groups(pool.name, mode)
        for node in members:
            builder.add(found, node, pool, mode)
        groups[mode], sources[mode] = found.groups(), found.source()
    growth = pool_growth(platform, pool)
    added = {}
    if growth is not None:
        added = {m: model_shape(platform, pool, m, key=f"{pool.name}:{m}:added") for m in MODES}
    notes = []
    missing = [n for n in pool.nodes if n not in {m.name for m in members}]
    if missing:
        notes.append(f"pool {pool.name}: node(s) {', '.join(missing)} are not in the snapshot (not counted)")
    return PoolModel(pool.name, pool, groups, growth, added, sources, tuple(notes))


def _unlisted(nodes: list[RealNode], builder: _Builder) -> list[PoolModel]:
    """GPU nodes no pool selects, in the mode the snapshot shows (legacy when they advertise GPUs)."""
    out = []
    for mode, label in (("legacy", "device plugin"), ("dra", "DRA")):
        found = _Groups(f"{UNLISTED}, {label}", mode)
        chosen = [n for n in nodes if bool(n.resources) == (mode == "legacy")]
        for node in chosen:
            builder.add(found, node, None, mode)
        if not chosen:
            continue
        names = ", ".join(n.name for n in chosen[:5]) + (", ..." if len(chosen) > 5 else "")
        note = f"{len(chosen)} {label} node(s) no pool selects keep that mode in every wave: {names}"
        groups = {mode: found.groups()}
        out.append(PoolModel(found.pool, None, groups, sources={mode: "snapshot"}, notes=(note,), fixed=mode))
    return out
