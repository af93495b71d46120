"""Answers kept for a whole run: allocations, class matchings, admissions, wave demands, moments.

Every moment asks the same questions of the same kinds of node (can these claims take devices of
a node in this state; which devices does this class select; may this pod run there); the answers
are kept for the run, keyed by what decides them: the node's kind and state, and the claims with
each class replaced by its selectors, so tiers that select alike share answers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpuplatform.capacity.allocator import AllocationError, Allocator, DeviceID
from gpuplatform.capacity.claims import Claim, DeviceClass, Request
from gpuplatform.capacity.demand import Demand, wave_demands
from gpuplatform.capacity.fleet import PoolModel, Shape
from gpuplatform.capacity.outcome import Failure, Outcome
from gpuplatform.capacity.selectors import SelectorCache
from gpuplatform.cel import CelCompileError
from gpuplatform.kube.nodes import taints_tolerated
from gpuplatform.plan.waves import Plan, WaveState

__all__ = ["Ask", "DraPhase", "DraState", "PlacementCache"]

DraState = frozenset[DeviceID]


def _selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


class PlacementCache:
    """Allocators, allocation outcomes and verdicts shared by every moment of a run (of one plan
    on one fleet)."""

    def __init__(self, kubernetes: str = "1.36") -> None:
        self.selectors = SelectorCache(kubernetes)
        self.moments: dict[str, Outcome] = {}
        """Outcome per moment key: a moment identical to one already placed is not placed again."""
        self._demands: dict[str, tuple[Demand, ...]] = {}
        self.claim_phases: dict[str, DraPhase] = {}
        """Claim pods placed on the same DRA groups are placed once (a drain moment's are its
        source wave's)."""
        self._allocators: dict[tuple[str, str], Allocator] = {}
        self._outcomes: dict[tuple[str, str, DraState], DraState | AllocationError | None] = {}
        self._matching: dict[tuple[str, tuple[str | None, ...]], tuple[frozenset[DeviceID], bool]] = {}
        self._admits: dict[tuple[str, str], bool] = {}
        self._empty: dict[tuple[str, str], bool] = {}

    def demands(self, plan: Plan) -> Callable[[WaveState], tuple[Demand, ...]]:
        """A wave's demand, computed once per run (a drain moment runs the previous wave's)."""

        def of(state: WaveState) -> tuple[Demand, ...]:
            if state.name not in self._demands:
                self._demands[state.name] = tuple(wave_demands(plan, state))
            return self._demands[state.name]

        return of

    def allocator(self, shape: Shape, classes: Mapping[str, DeviceClass], classes_key: str) -> Allocator:
        key = (shape.key, classes_key)
        found = self._allocators.get(key)
        if found is None:
            found = self._allocators[key] = Allocator(
                classes.values(), shape.slices, selectors=self.selectors
            )
        return found

    def allocate(self, shape: Shape, state: DraState, claims: Sequence[Claim], ask: Ask) -> DraState | None:
        """The devices the claims take on a node of `shape` in `state`; None when they do not fit.

        The memo is keyed by what the allocator reads (`ask.meaning`: class selectors, not class
        names), so tiers that select alike share answers; an error is recomputed under the
        claims' own class names, whose messages name them. A class that leaves too few free
        devices for a plain request skips the allocator (a necessary condition, used only where
        no selector fails).
        """
        shared = (shape.key, ask.meaning, state)
        found = self._outcomes.get(shared)
        if shared not in self._outcomes or isinstance(found, AllocationError):
            exact = (shape.key, ask.exact, state)
            if exact not in self._outcomes:
                self._outcomes[exact] = self._allocate(shape, state, claims, ask)
            found = self._outcomes[shared] = self._outcomes[exact]
        if isinstance(found, AllocationError):
            raise found
        return found

    def _allocate(
        self, shape: Shape, state: DraState, claims: Sequence[Claim], ask: Ask
    ) -> DraState | AllocationError | None:
        for name, count in ask.counted:
            matching = self.matching_exactly(shape, ask.classes[name])
            if matching is not None and len(matching - state) < count:
                return None
        allocator = self.allocator(shape, ask.classes, ask.classes_key)
        try:
            return allocator.devices(shape.node, claims, state)
        except AllocationError as exc:
            return exc

    def fits_empty(self, shape: Shape, claims: Sequence[Claim], ask: Ask) -> bool:
        """Whether an empty node of `shape` can take the claims (the question every moment asks
        of every group, answered once)."""
        key = (shape.key, ask.meaning)
        found = self._empty.get(key)
        if found is None:
            found = self._empty[key] = self.allocate(shape, frozenset(), claims, ask) is not None
        return found

    def admits(self, shape: Shape, demand: Demand) -> bool:
        """Whether the pod may run on such a node: it tolerates the node's taints and selects its labels."""
        key = (shape.key, demand.placement_key)
        found = self._admits.get(key)
        if found is None:
            node = shape.node
            found = taints_tolerated(node.taints, demand.tolerations) and _selects(
                demand.node_selector, node.labels
            )
            self._admits[key] = found
        return found

    def matching(self, shape: Shape, device_class: DeviceClass) -> frozenset[DeviceID]:
        """Devices of such a node that a class selects (errors select nothing)."""
        return self._match(shape, device_class)[0]

    def matching_exactly(self, shape: Shape, device_class: DeviceClass) -> frozenset[DeviceID] | None:
        """The devices a class selects, or None when a selector fails on this node (only the
        allocator can say what then happens)."""
        found, clean = self._match(shape, device_class)
        return found if clean else None

    def _match(self, shape: Shape, device_class: DeviceClass) -> tuple[frozenset[DeviceID], bool]:
        key = (shape.key, device_class.selectors)
        found = self._matching.get(key)
        if found is not None:
            return found
        out: set[DeviceID] = set()
        clean = True
        for item in shape.slices:
            spec = item["spec"]
            verdicts = [True] * len(spec.get("devices") or ())
            for expression in device_class.selectors:
                try:
                    results = self.selectors.verdicts(str(expression), spec)
                except CelCompileError:
                    self._matching[key] = (frozenset(), False)
                    return self._matching[key]
                clean = clean and all(isinstance(b, bool) for b in results)
                verdicts = [a and b is True for a, b in zip(verdicts, results, strict=True)]
            out |= {
                (spec["driver"], spec["pool"]["name"], str(d["name"]))
                for d, ok in zip(spec.get("devices") or (), verdicts, strict=True)
                if ok
            }
        found = self._matching[key] = (frozenset(out), clean)
        return found


@dataclass(frozen=True)
class Ask:
    """What claims ask of the allocator: the classes they name, and the memo keys of an answer."""

    classes: Mapping[str, DeviceClass]
    classes_key: str
    exact: str
    """The claims with their class names: the key of an answer that names them (errors)."""
    meaning: str
    """The claims with each class replaced by its selectors: what decides which devices they get."""
    counted: tuple[tuple[str, int], ...]
    """(class, count) of each plain request (ExactCount, no admin access)."""

    @classmethod
    def of(cls, claims: Sequence[Claim], signature: str, known: Mapping[str, DeviceClass]) -> Ask:
        names = {
            r.class_name
            for c in claims
            for q in c.requests
            for r in ((q.exactly,) if q.exactly else q.first_available)
        }
        classes = {n: known[n] for n in sorted(names) if n in known}

        def request(r: Request) -> tuple[Any, ...]:
            found = classes.get(r.class_name)
            target = found.selectors if found is not None else ("missing", r.class_name)
            return (r.name, target, r.mode, r.count, r.admin_access, r.selectors, r.tolerations)

        meaning = repr(
            [
                (
                    [
                        (q.name, request(q.exactly) if q.exactly else [request(r) for r in q.first_available])
                        for q in c.requests
                    ],
                    c.constraints,
                )
                for c in claims
            ]
        )
        counted = tuple(
            (r.class_name, r.count)
            for c in claims
            for q in c.requests
            if (r := q.exactly) is not None
            and r.mode == "ExactCount"
            and not r.wants_admin
            and r.class_name in classes
        )
        classes_key = repr(sorted(classes.items()))
        return cls(classes, classes_key, classes_key + signature, meaning, counted)


@dataclass(frozen=True)
class DraPhase:
    """DRA groups after a moment's claim pods were placed, and the claims that failed."""

    slots: tuple[tuple[PoolModel, Shape, Counter[Any]], ...]
    added: Counter[str]
    grown: int
    failures: tuple[Failure, ...]
