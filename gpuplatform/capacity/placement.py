"""Place a moment's pods on the fleet: first fit decreasing, packing nodes (most allocated first).

Nodes of a pool are interchangeable, so a pool is a count of nodes per state (free device-plugin
resources, or the set of DRA devices in use) and each pod is tried once per distinct state with
the real allocator (memoised across pods, states and waves). Claim pods go first, then
device-plugin pods; a device-plugin pod that finds no legacy node may be served by the bridge
class of its resource on a DRA node whose taint it tolerates (DRAExtendedResource: the scheduler
creates a claim of that class for the container's count). This is a packing heuristic: "fits"
means a placement was found; the default scheduler, which spreads (LeastAllocated), may fragment
where this packs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from gpuplatform.capacity.allocator import AllocationError, Allocator, DeviceID
from gpuplatform.capacity.claims import Claim, DeviceClass
from gpuplatform.capacity.demand import Demand, claim_for, claims_signature
from gpuplatform.capacity.fleet import Fleet, PoolModel
from gpuplatform.capacity.nodes import Node, taints_tolerated
from gpuplatform.capacity.selectors import SelectorCache
from gpuplatform.cel import CelCompileError

__all__ = ["Failure", "Outcome", "PlacementCache", "PoolUse", "place"]

S = TypeVar("S")
LegacyState = tuple[int, ...]
DraState = frozenset[DeviceID]


@dataclass(frozen=True)
class Failure:
    """A demand that did not fit, and why."""

    demand: Demand
    placed: int
    reason: str


@dataclass
class PoolUse:
    """A pool after placement: its mode, nodes, and capacity and free units (GPUs or devices)."""

    name: str
    mode: str
    nodes: int
    capacity: int
    free: int


@dataclass
class Outcome:
    """Everything one moment's placement found."""

    failures: list[Failure] = field(default_factory=list)
    pools: list[PoolUse] = field(default_factory=list)
    tiers: dict[str, int] = field(default_factory=dict)
    """Free DRA devices matching each tier's class."""
    bridged: int = 0
    """Device-plugin pods served by a bridge class."""


class PlacementCache:
    """Allocators and allocation outcomes shared by every moment of a run."""

    def __init__(self, kubernetes: str = "1.36") -> None:
        self.selectors = SelectorCache(kubernetes)
        self._allocators: dict[tuple[str, str], Allocator] = {}
        self._outcomes: dict[tuple[str, str, DraState, str], DraState | AllocationError | None] = {}

    def allocator(self, pool: PoolModel, classes: Mapping[str, DeviceClass], classes_key: str) -> Allocator:
        key = (pool.name, classes_key)
        found = self._allocators.get(key)
        if found is None:
            found = self._allocators[key] = Allocator(classes.values(), pool.slices, selectors=self.selectors)
        return found

    def allocate(
        self,
        pool: PoolModel,
        classes: Mapping[str, DeviceClass],
        classes_key: str,
        state: DraState,
        claims: Sequence[Claim],
        signature: str,
    ) -> DraState | None:
        """The devices the claims take on a node of `pool` in `state`; None when they do not fit.

        `classes_key` and `signature` identify the classes and the claims' requests in the memo.
        """
        key = (pool.name, classes_key, state, signature)
        if key not in self._outcomes:
            allocator = self.allocator(pool, classes, classes_key)
            try:
                results = allocator.allocate(Node(pool.representative), claims, state)
                outcome: DraState | AllocationError | None = None
                if results is not None:
                    outcome = frozenset(
                        (r["driver"], r["pool"], r["device"])
                        for res in results
                        for r in res["devices"]["results"]
                    )
            except AllocationError as exc:
                outcome = exc
            self._outcomes[key] = outcome
        found = self._outcomes[key]
        if isinstance(found, AllocationError):
            raise found
        return found

    def matching(self, pool: PoolModel, device_class: DeviceClass) -> frozenset[DeviceID]:
        """Devices of a pool's node that a class selects (errors select nothing)."""
        out = set()
        for item in pool.slices:
            spec = item["spec"]
            verdicts = [True] * len(spec.get("devices") or ())
            for expression in device_class.selectors:
                try:
                    found = self.selectors.verdicts(str(expression), spec)
                except CelCompileError:
                    return frozenset()
                verdicts = [a and b is True for a, b in zip(verdicts, found, strict=True)]
            out |= {
                (spec["driver"], spec["pool"]["name"], str(d["name"]))
                for d, ok in zip(spec.get("devices") or (), verdicts, strict=True)
                if ok
            }
        return frozenset(out)


@dataclass
class _Pools:
    legacy: dict[str, Counter[LegacyState]]
    dra: dict[str, Counter[DraState]]


def _selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


class _Placer:
    def __init__(
        self,
        fleet: Fleet,
        modes: Mapping[str, str],
        classes: Mapping[str, DeviceClass],
        bridges: Mapping[str, str],
        cache: PlacementCache,
    ) -> None:
        self.fleet, self.modes, self.classes, self.bridges, self.cache = fleet, modes, classes, bridges, cache
        self.classes_key = repr(sorted(classes.items()))
        self.by_name = {p.name: p for p in fleet.pools}
        self.resources = {p.name: sorted(p.resources) for p in fleet.pools}
        self.state = _Pools(
            legacy={
                p.name: Counter({tuple(p.resources[r] for r in self.resources[p.name]): p.nodes})
                for p in fleet.pools
                if modes[p.name] == "legacy" and p.nodes
            },
            dra={
                p.name: Counter({frozenset(): p.nodes})
                for p in fleet.pools
                if modes[p.name] == "dra" and p.nodes
            },
        )

    def legacy_pools(self, demand: Demand) -> list[PoolModel]:
        return [
            self.by_name[n]
            for n in self.state.legacy
            if demand.resource in self.by_name[n].resources
            and _selects(demand.node_selector, self.by_name[n].legacy_labels)
        ]

    def dra_pools(self, demand: Demand) -> list[PoolModel]:
        return [
            self.by_name[n]
            for n in self.state.dra
            if taints_tolerated([self.by_name[n].taint], demand.tolerations)
            and _selects(demand.node_selector, self.by_name[n].dra_labels)
        ]

    def place_legacy(self, demand: Demand, pools: Sequence[PoolModel]) -> bool:
        best: tuple[int, int, str, LegacyState] | None = None
        for order, pool in enumerate(pools):
            column = self.resources[pool.name].index(demand.resource)
            for state, count in self.state.legacy[pool.name].items():
                if count and state[column] >= demand.per_pod:
                    candidate = (state[column], order, pool.name, state)
                    best = candidate if best is None or candidate < best else best
        if best is None:
            return False
        _, _, name, state = best
        column = self.resources[name].index(demand.resource)
        after = tuple(v - demand.per_pod if i == column else v for i, v in enumerate(state))
        self._move(self.state.legacy[name], state, after)
        return True

    def place_claims(self, claims: Sequence[Claim], signature: str, pools: Sequence[PoolModel]) -> bool:
        best: tuple[int, int, str, DraState, DraState] | None = None
        for order, pool in enumerate(pools):
            allocate = partial(
                self.cache.allocate, pool, self.classes, self.classes_key, claims=claims, signature=signature
            )
            if allocate(frozenset()) is None:
                continue
            for state, count in self.state.dra[pool.name].items():
                if not count:
                    continue
                taken = allocate(state)
                if taken is not None:
                    candidate = (-len(state), order, pool.name, state, taken)
                    best = candidate if best is None or candidate[:2] < best[:2] else best
        if best is None:
            return False
        _, _, name, state, taken = best
        self._move(self.state.dra[name], state, state | taken)
        return True

    @staticmethod
    def _move(counter: Counter[S], before: S, after: S) -> None:
        counter[before] -= 1
        if not counter[before]:
            del counter[before]
        counter[after] += 1


def place(
    fleet: Fleet,
    modes: Mapping[str, str],
    classes: Mapping[str, DeviceClass],
    bridges: Mapping[str, str],
    demands: Sequence[Demand],
    cache: PlacementCache,
    tiers: Mapping[str, str] | None = None,
) -> Outcome:
    """Place every demand; `modes` per pool is legacy, dra or draining; `bridges` maps a resource to
    its class; `tiers` (tier -> class) get their free matching devices counted."""
    placer = _Placer(fleet, modes, classes, bridges, cache)
    outcome = Outcome()
    order = sorted(range(len(demands)), key=lambda i: (not demands[i].on_dra, -demands[i].per_pod, i))
    for i in order:
        demand = demands[i]
        placed = 0
        reason = ""
        try:
            placed = _place_demand(placer, demand, outcome)
        except AllocationError as exc:
            reason = str(exc)
        wanted = 1 if demand.shared else demand.pods
        if placed < wanted:
            outcome.failures.append(Failure(demand, placed, reason or _why(placer, demand)))
    outcome.pools = _pool_use(placer)
    dra = [placer.by_name[n] for n in placer.state.dra]
    outcome.tiers = {t: _free_matching(placer, dra, {c})[0] for t, c in (tiers or {}).items()}
    return outcome


def _place_demand(placer: _Placer, demand: Demand, outcome: Outcome) -> int:
    pods = 1 if demand.shared else demand.pods
    if demand.on_dra:
        pools = placer.dra_pools(demand)
        for n in range(pods):
            if not placer.place_claims(demand.claims, demand.signature, pools):
                return n
        return pods
    legacy = placer.legacy_pools(demand)
    bridge = placer.bridges.get(demand.resource)
    bridge_pools = placer.dra_pools(demand) if bridge else []
    claims = (claim_for("bridged", "", bridge, demand.per_pod),) if bridge else ()
    signature = claims_signature(claims)
    for n in range(pods):
        if placer.place_legacy(demand, legacy):
            continue
        if bridge_pools and placer.place_claims(claims, signature, bridge_pools):
            outcome.bridged += 1
            continue
        return n
    return pods


def _why(placer: _Placer, demand: Demand) -> str:
    pods = 1 if demand.shared else demand.pods
    need = f"{pods} pod(s) x {demand.per_pod}"
    if demand.on_dra:
        pools = placer.dra_pools(demand)
        if not pools:
            return f"{need} device(s) through claims, but no DRA node it may use (none in DRA mode, or their taint or labels keep it off)"
        classes = {r.exactly.class_name for c in demand.claims for r in c.requests if r.exactly}
        free, best = _free_matching(placer, pools, classes)
        what = ", ".join(sorted(classes))
        if free < demand.total:
            return (
                f"{need} device(s) of class {what}, but only {free} matching device(s) are free on DRA nodes"
            )
        return f"{need} device(s) of class {what}: {free} matching device(s) are free, but at most {best} on one node (fragmented)"
    pools = placer.legacy_pools(demand)
    bridge = placer.bridges.get(demand.resource)
    tail = ""
    if bridge and not placer.dra_pools(demand):
        tail = f"; the bridge class {bridge} cannot serve it: it tolerates no DRA pool's taint"
    elif bridge:
        tail = f"; the bridge class {bridge} found no room either"
    if not pools:
        return f"{need} {demand.resource}, but no device-plugin node offers it to this pod (no legacy pool, or labels differ){tail}"
    free = sum(
        state[placer.resources[p.name].index(demand.resource)] * n
        for p in pools
        for state, n in placer.state.legacy[p.name].items()
    )
    if free < demand.per_pod:
        return f"{need} {demand.resource}, but only {free} free on device-plugin nodes{tail}"
    return f"{need} {demand.resource}: {free} free on device-plugin nodes, but no node has {demand.per_pod} free (fragmented){tail}"


def _free_matching(placer: _Placer, pools: Sequence[PoolModel], classes: set[str]) -> tuple[int, int]:
    free = best = 0
    for pool in pools:
        matching = frozenset().union(
            *(placer.cache.matching(pool, placer.classes[c]) for c in classes if c in placer.classes)
        )
        for state, n in placer.state.dra[pool.name].items():
            left = len(matching - state)
            free += left * n
            best = max(best, left)
    return free, best


def _pool_use(placer: _Placer) -> list[PoolUse]:
    out = []
    for pool in placer.fleet.pools:
        mode = placer.modes[pool.name]
        if pool.name in placer.state.legacy:
            capacity = sum(pool.resources.values()) * pool.nodes
            free = sum(sum(state) * n for state, n in placer.state.legacy[pool.name].items())
        elif pool.name in placer.state.dra:
            capacity = len(pool.devices) * pool.nodes
            free = sum(
                (len(pool.devices) - len(state)) * n for state, n in placer.state.dra[pool.name].items()
            )
        else:
            capacity = free = 0
        out.append(PoolUse(pool.name, mode, pool.nodes, capacity, free))
    return out
