"""Place a moment's pods on the fleet: first fit decreasing, packing nodes (most allocated first).

Nodes of a group are interchangeable, so a group is a count of nodes per state (free device-plugin
resources, or the set of DRA devices in use) and each pod is tried once per distinct state with
the real allocator (memoised across pods, states, moments and waves). Claim pods go first, then
device-plugin pods; a device-plugin pod that finds no legacy node may be served by the bridge
class of its resource on a DRA node whose taint it tolerates (DRAExtendedResource: the scheduler
creates a claim of that class for the container's count). A pod no existing node can take makes a
provisioner add a node to a pool it would provision for (`growth`), up to the pool's limit.

Node states only fill up within a moment, so a pod that found no room stays without room until a
provisioner adds a node: later pods alike fail without another search. This is a packing
heuristic: "fits" means a placement was found; the default scheduler, which spreads
(LeastAllocated), may fragment where this packs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from gpuplatform.capacity.allocator import AllocationError
from gpuplatform.capacity.answers import Ask, DraPhase, DraState, PlacementCache
from gpuplatform.capacity.claims import Claim, DeviceClass
from gpuplatform.capacity.demand import Demand, claim_for, claims_signature
from gpuplatform.capacity.fleet import MODES, Fleet, PoolModel, Shape, State
from gpuplatform.capacity.outcome import Failure, Outcome, PoolUse

__all__ = ["place"]

LegacyState = tuple[int, ...]


@dataclass
class _Slot:
    """A group of nodes during one moment's placement."""

    index: int
    pool: PoolModel
    shape: Shape
    nodes: Counter[Any]
    version: int = 0

    def move(self, before: State, after: State) -> None:
        self.nodes[before] -= 1
        if not self.nodes[before]:
            del self.nodes[before]
        self.nodes[after] += 1
        self.version += 1


class _Placer:
    def __init__(
        self,
        fleet: Fleet,
        modes: Mapping[str, str],
        classes: Mapping[str, DeviceClass],
        bridges: Mapping[str, str],
        cache: PlacementCache,
        given: Mapping[str, int],
    ) -> None:
        self.fleet, self.modes, self.classes, self.bridges, self.cache = fleet, modes, classes, bridges, cache
        self.given = given
        """Nodes each pool has given to a new group: gone from its groups and from its limit."""
        self._asks: dict[str, Ask] = {}
        self.slots: dict[str, list[_Slot]] = {mode: [] for mode in MODES}
        self.added: Counter[str] = Counter()
        self.grown = 0
        """Nodes added so far: part of every memo of "no room"."""
        for pool in fleet.pools:
            mode = modes.get(pool.name, pool.fixed)
            # nodes given to new groups since the fleet was counted go; given back, they return empty
            gone = given.get(pool.name, 0) - fleet.given.get(pool.name, 0)
            for group in pool.groups.get(mode, ()) if mode in MODES else ():
                nodes = Counter(dict(group.nodes))
                if gone < 0:
                    nodes[group.shape.empty()] -= gone
                    gone = 0
                for state, count in list(nodes.items()):
                    taken = min(gone, count)
                    nodes[state] -= taken
                    gone -= taken
                self._slot(mode, pool, group.shape, +nodes)
        self._eligible: dict[tuple[str, ...], list[_Slot]] = {}
        self._best: dict[tuple[int, str], tuple[int, tuple[int, DraState, DraState] | None]] = {}
        self._best_legacy: dict[tuple[int, str], tuple[int, tuple[int, LegacyState] | None]] = {}
        self._full: set[tuple[str, int]] = set()

    def _slot(self, mode: str, pool: PoolModel, shape: Shape, nodes: Counter[Any]) -> _Slot:
        slot = _Slot(len(self.slots[mode]), pool, shape, nodes)
        self.slots[mode].append(slot)
        return slot

    def eligible(self, mode: str, demand: Demand) -> list[_Slot]:
        """The groups in `mode` the demand's pods may use, in fleet order (a legacy group must
        offer the demand's resource, so the resource is part of the memo key)."""
        key = (mode, demand.placement_key, demand.resource if mode == "legacy" else "", str(self.grown))
        found = self._eligible.get(key)
        if found is None:
            found = [
                s
                for s in self.slots[mode]
                if (mode == "dra" or demand.resource in s.shape.resources)
                and self.cache.admits(s.shape, demand)
            ]
            self._eligible[key] = found
        return found

    def place_legacy(self, demand: Demand, slots: Sequence[_Slot], pods: int = 1) -> int:
        """Place up to `pods` pods, each on the most allocated node with room; how many were placed.

        The node chosen for a pod takes the next ones until it is full, then the other nodes in
        the same state do, as placing them one by one would."""
        best: tuple[int, int, LegacyState, _Slot] | None = None
        what = f"{demand.resource} {demand.per_pod}"
        for slot in slots:
            memo = self._best_legacy.get((slot.index, what))
            found = memo[1] if memo is not None and memo[0] == slot.version else self._legacy_best(slot, what)
            if found is not None and (best is None or (found[0], slot.index, found[1]) < best[:3]):
                best = (found[0], slot.index, found[1], slot)
        if best is None:
            return 0
        free, _, state, slot = best
        column = slot.shape.resource_names.index(demand.resource)
        per_node = free // demand.per_pod
        taken = min(pods, per_node * slot.nodes[state])
        full, rest = divmod(taken, per_node)
        for count, n in ((per_node, full), (rest, 1 if rest else 0)):
            after = tuple(v - count * demand.per_pod if i == column else v for i, v in enumerate(state))
            for _ in range(n):
                slot.move(state, after)
        return taken

    def _legacy_best(self, slot: _Slot, what: str) -> tuple[int, LegacyState] | None:
        """The group's most allocated state with room for one pod of `what` (resource, count):
        (free, state)."""
        resource, _, count = what.rpartition(" ")
        column = slot.shape.resource_names.index(resource)
        candidates = [(state[column], state) for state in slot.nodes if state[column] >= int(count)]
        best = min(candidates) if candidates else None
        self._best_legacy[(slot.index, what)] = (slot.version, best)
        return best

    def allocate(
        self, shape: Shape, state: DraState, claims: Sequence[Claim], signature: str
    ) -> DraState | None:
        """`PlacementCache.allocate` with only the classes the claims name (so the memo holds across
        moments whose other classes differ)."""
        return self.cache.allocate(shape, state, claims, self.ask(claims, signature))

    def ask(self, claims: Sequence[Claim], signature: str) -> Ask:
        """What the claims ask of the allocator in this moment's classes (once per signature)."""
        found = self._asks.get(signature)
        if found is None:
            found = self._asks[signature] = Ask.of(claims, signature, self.classes)
        return found

    def _slot_best(
        self, slot: _Slot, claims: Sequence[Claim], signature: str
    ) -> tuple[int, DraState, DraState] | None:
        """The most allocated state of the group the claims fit in (first such state): (size, state, taken)."""
        key = (slot.index, signature)
        memo = self._best.get(key)
        if memo is not None and memo[0] == slot.version:
            return memo[1]
        allocate = partial(self.allocate, slot.shape, claims=claims, signature=signature)
        best = None
        for state, count in slot.nodes.items():
            if not count or (best is not None and len(state) <= best[0]):
                continue
            taken = allocate(state)
            if taken is not None:
                best = (len(state), state, taken)
        self._best[key] = (slot.version, best)
        return best

    def viable(self, demand: Demand, claims: Sequence[Claim], signature: str) -> list[_Slot]:
        """The DRA groups the demand's pods may use whose empty node can take the claims."""
        key = ("viable", demand.placement_key, signature, str(self.grown))
        found = self._eligible.get(key)
        if found is None:
            ask = self.ask(claims, signature)
            found = [s for s in self.eligible("dra", demand) if self.cache.fits_empty(s.shape, claims, ask)]
            self._eligible[key] = found
        return found

    def place_claims(self, claims: Sequence[Claim], signature: str, slots: Sequence[_Slot]) -> bool:
        best: tuple[int, int, DraState, DraState, _Slot] | None = None
        for slot in slots:
            found = self._slot_best(slot, claims, signature)
            if found is not None and (best is None or (-found[0], slot.index) < best[:2]):
                best = (-found[0], slot.index, found[1], found[2], slot)
        if best is None:
            return False
        _, _, state, taken, slot = best
        slot.move(state, state | taken)
        return True

    def existing(self, pool: PoolModel, mode: str) -> int:
        """The pool's nodes in `mode`, counting those it gave to new groups (they use its limit up)."""
        return sum(sum(s.nodes.values()) for s in self.slots[mode] if s.pool is pool) + self.given.get(
            pool.name, 0
        )

    def grow(self, mode: str, demand: Demand, fits: Callable[[Shape], bool]) -> bool:
        """Add a node for the demand's next pod to the first pool whose provisioner would add one."""
        for pool in self.fleet.pools:
            growth = pool.growth
            if growth is None or self.modes.get(pool.name) != mode:
                continue
            shape = pool.added[mode]
            if growth.headroom(self.existing(pool, mode)) == 0 or self.growth_refusal(pool, mode, demand):
                continue
            if not fits(shape):
                continue
            slot = next((s for s in self.slots[mode] if s.shape.key == shape.key), None)
            if slot is None:
                slot = self._slot(mode, pool, shape, Counter())
            slot.nodes[shape.empty()] += 1
            slot.version += 1
            self.added[pool.name] += 1
            self.grown += 1
            return True
        return False

    def growth_refusal(self, pool: PoolModel, mode: str, demand: Demand) -> str:
        assert pool.growth is not None
        node = pool.added[mode].node
        return pool.growth.refusal(
            mode, node.labels, node.taints, demand.node_selector, demand.tolerations, demand.on_dra
        )

    def claims_phase_key(self, claims: Sequence[Demand], reasons: bool) -> str:
        """What placing the claim pods reads: DRA groups and their states, provisioners that grow
        DRA pools, the claim demands and the classes they name."""
        names = sorted({n for d in claims for n in self.ask(d.claims, d.signature).classes})
        growing = [p.name for p in self.fleet.pools if p.growth and self.modes.get(p.name) == "dra"]
        slots = [(s.shape.key, list(s.nodes.items())) for s in self.slots["dra"]]
        used = [(n, self.classes[n]) for n in names]
        return repr((reasons, slots, growing, used)) + "".join(d.key for d in claims)

    def dra_phase(self, failures: list[Failure]) -> DraPhase:
        """The DRA groups after the claim pods, to start an identical moment from."""
        slots = tuple((s.pool, s.shape, Counter(s.nodes)) for s in self.slots["dra"])
        return DraPhase(slots, Counter(self.added), self.grown, tuple(failures))

    def restore(self, phase: DraPhase) -> list[Failure]:
        """Start from a phase placed before; its failures."""
        self.slots["dra"] = []
        for pool, shape, nodes in phase.slots:
            self._slot("dra", pool, shape, Counter(nodes))
        self.added, self.grown = Counter(phase.added), phase.grown
        return list(phase.failures)

    def full(self, demand: Demand) -> bool:
        """A pod alike found no room since the last node was added."""
        return (demand.pod_key, self.grown) in self._full

    def mark_full(self, demand: Demand) -> None:
        self._full.add((demand.pod_key, self.grown))


def place(
    fleet: Fleet,
    modes: Mapping[str, str],
    classes: Mapping[str, DeviceClass],
    bridges: Mapping[str, str],
    demands: Sequence[Demand],
    cache: PlacementCache,
    tiers: Mapping[str, str] | None = None,
    reasons: bool = True,
    given: Mapping[str, int] | None = None,
) -> Outcome:
    """Place every demand; `modes` per pool is legacy, dra, dra-no-driver or draining; `bridges` maps
    a resource to its class; `tiers` (tier -> class) get their free matching devices counted.
    Without `reasons` only the first failure says why (a verdict needs no more)."""
    placer = _Placer(fleet, modes, classes, bridges, cache, given or {})
    outcome = Outcome()
    order = sorted(range(len(demands)), key=lambda i: (not demands[i].on_dra, -demands[i].per_pod, i))
    claims = [demands[i] for i in order if demands[i].on_dra]
    key = placer.claims_phase_key(claims, reasons)
    phase = cache.claim_phases.get(key)
    if phase is None:
        _place_all(placer, claims, outcome, reasons)
        cache.claim_phases[key] = placer.dra_phase(outcome.failures)
    else:
        outcome.failures = placer.restore(phase)
    _place_all(placer, [demands[i] for i in order if not demands[i].on_dra], outcome, reasons)
    outcome.pools = _pool_use(placer)
    outcome.tiers = {t: _free_matching(placer, placer.slots["dra"], {c})[0] for t, c in (tiers or {}).items()}
    return outcome


def _place_all(placer: _Placer, demands: Sequence[Demand], outcome: Outcome, reasons: bool) -> None:
    for demand in demands:
        placed = 0
        reason = ""
        try:
            placed = _place_demand(placer, demand, outcome)
        except AllocationError as exc:
            reason = str(exc)
        wanted = 1 if demand.shared else demand.pods
        if placed < wanted:
            if not reason and (reasons or not outcome.failures):
                reason = _why(placer, demand)
            outcome.failures.append(Failure(demand, placed, reason))


def _place_demand(placer: _Placer, demand: Demand, outcome: Outcome) -> int:
    pods = 1 if demand.shared else demand.pods
    if demand.on_dra:
        return _place_claim_pods(placer, demand, pods)
    bridge = placer.bridges.get(demand.resource)
    claims = (claim_for("bridged", "", bridge, demand.per_pod),) if bridge else ()
    signature = claims_signature(claims)

    def fits(shape: Shape) -> bool:
        return shape.resources.get(demand.resource, 0) >= demand.per_pod

    n = 0
    while n < pods:
        if placer.full(demand):
            return n
        placed = placer.place_legacy(demand, placer.eligible("legacy", demand), pods - n)
        if placed:
            n += placed
            continue
        bridge_slots = placer.viable(demand, claims, signature) if bridge else []
        if bridge_slots and placer.place_claims(claims, signature, bridge_slots):
            outcome.bridged += 1
            n += 1
            continue
        placed = placer.grow("legacy", demand, fits) and placer.place_legacy(
            demand, placer.eligible("legacy", demand), pods - n
        )
        if placed:
            n += placed
            continue
        placer.mark_full(demand)
        return n
    return pods


def _place_claim_pods(placer: _Placer, demand: Demand, pods: int) -> int:
    def fits(shape: Shape) -> bool:
        return placer.allocate(shape, frozenset(), demand.claims, demand.signature) is not None

    for n in range(pods):
        if placer.full(demand):
            return n
        if placer.place_claims(
            demand.claims, demand.signature, placer.viable(demand, demand.claims, demand.signature)
        ):
            continue
        if placer.grow("dra", demand, fits) and placer.place_claims(
            demand.claims, demand.signature, placer.viable(demand, demand.claims, demand.signature)
        ):
            continue
        placer.mark_full(demand)
        return n
    return pods


def _growth_tail(placer: _Placer, mode: str, demand: Demand) -> str:
    """Why no provisioner pool in `mode` added a node for the demand."""
    parts = []
    for pool in placer.fleet.pools:
        growth = pool.growth
        if growth is None or placer.modes.get(pool.name) != mode:
            continue
        refusal = placer.growth_refusal(pool, mode, demand)
        if refusal:
            parts.append(f"pool {pool.name}: {refusal}")
        elif growth.headroom(placer.existing(pool, mode)) == 0:
            parts.append(f"pool {pool.name}: {growth.owner} is at its limit of {growth.limit} node(s)")
        else:
            parts.append(f"pool {pool.name}: a new node of {growth.owner} cannot take it either")
    return f"; provisioners: {'; '.join(parts)}" if parts else ""


def _why(placer: _Placer, demand: Demand) -> str:
    pods = 1 if demand.shared else demand.pods
    need = f"{pods} pod(s) x {demand.per_pod}"
    if demand.on_dra:
        slots = placer.eligible("dra", demand)
        tail = _growth_tail(placer, "dra", demand)
        if not slots:
            return f"{need} device(s) through claims, but no DRA node it may use (none in DRA mode, or their taint or labels keep it off){tail}"
        classes = {r.exactly.class_name for c in demand.claims for r in c.requests if r.exactly}
        free, best = _free_matching(placer, slots, classes)
        what = ", ".join(sorted(classes))
        if free < demand.total:
            return f"{need} device(s) of class {what}, but only {free} matching device(s) are free on DRA nodes{tail}"
        return f"{need} device(s) of class {what}: {free} matching device(s) are free, but at most {best} on one node (fragmented){tail}"
    slots = placer.eligible("legacy", demand)
    bridge = placer.bridges.get(demand.resource)
    tail = ""
    if bridge and not placer.eligible("dra", demand):
        tail = f"; the bridge class {bridge} cannot serve it: it tolerates no DRA pool's taint"
    elif bridge:
        tail = f"; the bridge class {bridge} found no room either"
    else:
        tail = f"; no bridge class serves {demand.resource} in this wave"
    tail += _growth_tail(placer, "legacy", demand)
    if not slots:
        return f"{need} {demand.resource}, but no device-plugin node offers it to this pod (no legacy pool, or labels differ){tail}"
    free = sum(
        state[s.shape.resource_names.index(demand.resource)] * n
        for s in slots
        for state, n in s.nodes.items()
    )
    if free < demand.per_pod:
        return f"{need} {demand.resource}, but only {free} free on device-plugin nodes{tail}"
    return f"{need} {demand.resource}: {free} free on device-plugin nodes, but no node has {demand.per_pod} free (fragmented){tail}"


def _free_matching(placer: _Placer, slots: Sequence[_Slot], classes: set[str]) -> tuple[int, int]:
    free = best = 0
    for slot in slots:
        matching = frozenset().union(
            *(placer.cache.matching(slot.shape, placer.classes[c]) for c in classes if c in placer.classes)
        )
        if not matching:
            continue
        for state, n in slot.nodes.items():
            left = len(matching - state)
            free += left * n
            best = max(best, left)
    return free, best


def _pool_use(placer: _Placer) -> list[PoolUse]:
    out = []
    for pool in placer.fleet.pools:
        mode = placer.modes.get(pool.name, pool.fixed)
        slots = [s for s in placer.slots.get(mode, ()) if s.pool is pool]
        nodes = capacity = free = 0
        if mode not in (*MODES, "absent"):
            nodes = max(pool.nodes(m) for m in MODES) - placer.given.get(pool.name, 0)
        for slot in slots:
            for state, n in slot.nodes.items():
                nodes += n
                capacity += slot.shape.capacity * n
                free += slot.shape.free(state) * n
        use = PoolUse(pool.name, mode, nodes, capacity, free, pool.sources.get(mode, "model"))
        use.added, use.limit, use.ceiling = placer.added[pool.name], nodes, capacity
        if pool.growth is not None and mode in MODES:
            gave = placer.given.get(pool.name, 0)
            use.limit = None if pool.growth.limit is None else max(0, pool.growth.limit - gave)
            use.ceiling = None
            if use.limit is not None:
                use.ceiling = capacity + max(0, use.limit - nodes) * pool.added[mode].capacity
            use.caveat = pool.growth.caveat
        out.append(use)
    return out
