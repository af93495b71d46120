"""The replay's context: the cluster, what the rendered tree declares, the trace, and the settle loop.

Controllers react to what the previous step changed. Reactions are applied in batches, the
reactions that start something (a pod, a registration, a placement) before those that stop
something, which is the most dangerous interleaving of two concurrent controllers (for example the
DRA kubelet plugin registering before the device plugin has left). Invariants are checked after
every batch; what needs a steady state (every declared workload has somewhere to run) once nothing
reacts any more.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from gpuplatform.charts.model import (
    DraDriverOutput,
    OperatorOutput,
    render_dra_driver,
    render_gpu_operator,
)
from gpuplatform.plan.waves import Plan
from gpuplatform.render.helm_values import merge_values
from gpuplatform.render.tree import Tree
from gpuplatform.simulate.devices import DeviceMatcher
from gpuplatform.simulate.model import Cluster, Group, Release

__all__ = ["Reaction", "StepRecord", "Violation", "ViolationFound", "World"]

START, STOP = 0, 1


_CHARTS: dict[str, Any] = {}


def _key(release: Release) -> str:
    return json.dumps([release.chart, release.version, release.values, release.patches], sort_keys=True)


def _dra_output(release: Release) -> DraDriverOutput:
    """The chart rendered once per distinct release (forks copy releases; the output is never mutated)."""
    key = _key(release)
    if key not in _CHARTS:
        _CHARTS[key] = render_dra_driver(release.version, release.values, release.patches)
    out: DraDriverOutput = _CHARTS[key]
    return out


def _operator_output(release: Release) -> OperatorOutput:
    key = _key(release)
    if key not in _CHARTS:
        _CHARTS[key] = render_gpu_operator(release.version, release.values)
    out: OperatorOutput = _CHARTS[key]
    return out


@dataclass(frozen=True)
class Reaction:
    """One controller's response to the current state."""

    priority: int
    text: str
    apply: Callable[[], None]
    delayed: bool = False
    """It happens only after a delay no engine waits for: never between two sync units."""


@dataclass(frozen=True)
class StepRecord:
    """A step of the replay: who did what."""

    index: int
    actor: str
    text: str


@dataclass(frozen=True)
class Violation:
    """The first invariant that broke: at which step, which invariant, the objects involved."""

    step: StepRecord
    invariant: str
    message: str
    objects: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "step": {"index": self.step.index, "actor": self.step.actor, "text": self.step.text},
            "invariant": self.invariant,
            "message": self.message,
            "objects": list(self.objects),
        }


class ViolationFound(Exception):
    """Stops the replay at the first violation."""

    def __init__(self, violation: Violation) -> None:
        super().__init__(violation.message)
        self.violation = violation


@dataclass
class World:
    """Everything one replay reads and writes."""

    plan: Plan
    tree: Tree
    engine: str
    cluster: Cluster
    matcher: DeviceMatcher
    declared: dict[str, dict[str, str]]
    """wave -> pool -> `legacy` | `dra`, as the rendered tree declares it (Node mode labels, hand-offs)."""
    target: str = ""
    bridge_allowed: bool = False
    disturbance: bool = False
    trace: list[StepRecord] = field(default_factory=list)
    notes: set[str] = field(default_factory=set)
    checks: list[Callable[[World], None]] = field(default_factory=list)
    settled_checks: list[Callable[[World], None]] = field(default_factory=list)
    """Checked once the controllers have nothing left to do (a pod between eviction and its new node is
    not judged mid-way)."""
    reactors: list[Callable[[World], list[Reaction]]] = field(default_factory=list)
    observe: Callable[[World, str], None] | None = None
    """Called at every checkpoint (a gate Job judged, the cluster settled) with what it is."""
    transition: str = ""
    """The replay under way, as checkpoints name it (`A-to-B`, `-late`; `adopt-A`)."""
    pending_failure: tuple[str, str, list[str]] | None = None
    """A violation a controller noticed while acting (raised once its step is recorded)."""
    lagging: bool = False
    """Node labels changed: the pods they stop are still terminating when the engine applies the
    next units (`settle_unit`)."""
    operator_handoff: dict[str, Any] | None = None
    """The values of the operator hand-off once the first wave's runbook applied it (an unmanaged release)."""
    _operator: tuple[Release | dict[str, Any] | None, OperatorOutput] | None = None
    _dra: tuple[Release, DraDriverOutput] | None = None

    @property
    def steps(self) -> int:
        return len(self.trace)

    def record(self, actor: str, text: str) -> StepRecord:
        step = StepRecord(len(self.trace) + 1, actor, text)
        self.trace.append(step)
        if self.pending_failure is not None:
            invariant, message, objects = self.pending_failure
            self.pending_failure = None
            self.fail(invariant, message, objects)
        for check in self.checks:
            check(self)
        return step

    def fail(self, invariant: str, message: str, objects: list[str]) -> None:
        step = self.trace[-1] if self.trace else StepRecord(0, "start", "initial state")
        if self.observe is not None:
            self.observe(self, f"violation {invariant}")
        raise ViolationFound(Violation(step, invariant, message, tuple(objects)))

    def mode(self, group: Group, wave: str | None = None) -> str:
        """The allocator mode the wave declares for the group's pool."""
        return self.declared.get(wave or self.target, {}).get(group.pool, "legacy")

    def operator(self) -> OperatorOutput:
        """The ClusterPolicy of the installed GPU Operator release.

        When the spec does not render the release (`gpuOperator.managed` is false), the operator is
        modelled as installed outside gpuplatform with the spec's `gpuOperator.values`, and the
        migration's settings only once the first wave's runbook has applied the hand-off.
        """
        release = self.cluster.releases.get("gpu-operator")
        source = release if release is not None else self.operator_handoff
        if self._operator is None or self._operator[0] is not source:
            spec = self.plan.platform.gpu_operator
            if release is None:
                values = merge_values(dict(spec.values), self.operator_handoff or {})
                out = render_gpu_operator(spec.version, values)
            else:
                out = _operator_output(release)
            self._operator = (source, out)
        return self._operator[1]

    def dra(self) -> DraDriverOutput | None:
        """The installed DRA driver release as rendered (None when it is not installed or its namespace is gone)."""
        release = self.cluster.releases.get("dra-driver")
        if release is None or not release.alive:
            return None
        if self._dra is None or self._dra[0] is not release:
            self._dra = (release, _dra_output(release))
        return self._dra[1]

    def settle_unit(self) -> None:
        """The controllers between the engine's sync units.

        The engine goes on once what the unit applied is healthy (Argo CD: a completed Job, a
        Healthy child Application, whose DaemonSets count no terminating pod; Flux: a Ready
        Kustomization), which none of them makes wait for a pod's graceful termination. After
        changed Node labels (`lagging`), the pods the labels stop still run while the next units
        apply and their controllers start pods: the stops wait until something waits for them (a
        Job that checks the cluster, an operator's step). What happens only after a delay
        (`Reaction.delayed`) never happens between two units."""
        self.settle(stops=not self.lagging, delayed=False)

    def fork(self) -> World:
        """A copy sharing the rendered tree and the plan, with its own cluster and an empty trace."""
        return replace(
            self, cluster=self.cluster.fork(), trace=[], notes=set(self.notes), pending_failure=None
        )

    def settle(
        self,
        limit: int = 100,
        *,
        stops: bool = True,
        delayed: bool = True,
        until: Callable[[], bool] | None = None,
    ) -> None:
        """Run the controllers until nothing changes, starts before stops, checking after each batch;
        without `stops`, only until nothing starts (what stops has not happened yet); with `until`,
        only until it holds (a Job that waits goes on at once); without
        `delayed`, the reactions that wait out a delay do not happen."""
        self.lagging = self.lagging and not stops
        for _ in range(limit):
            if until is not None and until():
                return
            reactions = [
                r
                for reactor in self.reactors
                for r in reactor(self)
                if (stops or r.priority == START) and (delayed or not r.delayed)
            ]
            if not reactions:
                if stops:
                    for check in self.settled_checks:
                        check(self)
                return
            first = min(r.priority for r in reactions)
            batch = [r for r in reactions if r.priority == first]
            for reaction in batch:
                reaction.apply()
            self.record("controllers", "; ".join(dict.fromkeys(r.text for r in batch)))
        self.fail(
            "settles", "the controllers never reach a steady state", [g.name for g in self.cluster.groups]
        )
