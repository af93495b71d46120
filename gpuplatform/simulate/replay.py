"""Replay transitions: the manual steps of the step sequence around the engine's sync of the rendered
tree, the controllers' reactions after every step, then a node restart and a driver upgrade.

The cluster starts in the first wave (the GPU Operator running, the first wave adopted by the
engine) and walks every wave forward; each rollback starts from the state its forward transition
reached. A transition whose runbook has steps before the merge is replayed a second time with
the operator late (the merge first): the blocking gates must stop the sync and the rendered retry
settings must finish it once the operator has done the steps.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise

from gpuplatform.plan.steps import ARGOCD_APPS, MaintenanceEvent, Step, maintenance_steps, transition_steps
from gpuplatform.plan.sync_order import SYNC_UNITS, unit_of_folder
from gpuplatform.plan.waves import Plan
from gpuplatform.render.operator_handoff import operator_handoff_path
from gpuplatform.render.runbook_steps import argocd_apps_commands
from gpuplatform.render.tree import Tree
from gpuplatform.simulate.apply import RELEASE_KEYS, apply_object
from gpuplatform.simulate.argocd import ArgoEngine
from gpuplatform.simulate.devices import DeviceMatcher
from gpuplatform.simulate.driver_manager import upgrade_driver
from gpuplatform.simulate.flux import FluxEngine
from gpuplatform.simulate.groups import pool_group
from gpuplatform.simulate.invariants import SETTLED_CHECKS, STEP_CHECKS, check_settled
from gpuplatform.simulate.kubelet import kubelet_reactions
from gpuplatform.simulate.manual import apply_manual
from gpuplatform.simulate.mig_manager import mig_manager_reactions
from gpuplatform.simulate.model import Cluster, Group, Workload
from gpuplatform.simulate.operator import gpu_operator_reactions, host_driver
from gpuplatform.simulate.rendered import EngineWave, EntryTrees, engine_wave
from gpuplatform.simulate.scheduler import scheduler_reactions
from gpuplatform.simulate.workloads import workload_mix
from gpuplatform.simulate.world import StepRecord, Violation, ViolationFound, World

__all__ = ["TransitionResult", "declared_modes", "replay_platform", "replays_late"]

Engine = ArgoEngine | FluxEngine


@dataclass
class TransitionResult:
    """One replayed transition under one engine (and its late-operator variant)."""

    engine: str
    source: str
    target: str
    steps: int = 0
    late: bool = False
    """Replayed with the operator late: the merge before the runbook's first steps."""
    violation: Violation | None = None
    notes: list[str] = field(default_factory=list)
    tail: list[StepRecord] = field(default_factory=list)
    """The last steps before the violation."""
    not_replayed: str = ""
    """Why this accepted transition was not replayed ("" when it was): its source wave was never
    reached, because the walk there broke an invariant."""


def declared_modes(plan: Plan, tree: Tree) -> dict[str, dict[str, str]]:
    """wave -> pool -> mode, read from the rendered hand-offs (every pool kind has one)."""
    out: dict[str, dict[str, str]] = {}
    for state in plan.waves:
        modes = {}
        for pool in plan.platform.node_pools:
            content = tree.files.get(f"handoff/{state.dir_name}/nodepoolhandoff_{pool.name}.yaml")
            modes[pool.name] = str(content[0]["spec"]["mode"]) if isinstance(content, list) else "legacy"
            if not state.present(pool.name):  # a group not created yet has no hand-off and no nodes
                modes[pool.name] = state.pool_modes[pool.name]
        out[state.name] = modes
    return out


def _cluster(plan: Plan) -> Cluster:
    """The pools of the first wave; a provisioner pool has the `minNodes` its gates count (at least
    one node to prove anything)."""
    groups = []
    for pool in plan.platform.node_pools:
        if not plan.waves[0].present(pool.name):
            continue
        count = max(1, pool.provisioner.min_nodes) if pool.provisioner is not None else 0
        nodes = list(pool.nodes) or [f"{pool.name}-node-{i}" for i in range(count)]
        group = pool_group(pool, pool.name, nodes)
        group.elastic = pool.provisioner is not None and pool.provisioner.min_nodes == 0
        groups.append(group)
    return Cluster(groups)


def _no_drift_correction(world: World) -> list[str]:
    """Argo CD without `automated.selfHeal`: a drifted object stays drifted until the next sync."""
    return []


class Replayer:
    """Walks the waves of one platform under one engine."""

    def __init__(
        self,
        plan: Plan,
        tree: Tree,
        engine: str,
        matcher: DeviceMatcher,
        declared: dict[str, dict[str, str]],
        entries: EntryTrees | None = None,
    ) -> None:
        self.plan, self.tree, self.engine_name = plan, tree, engine
        self.entries = entries if entries is not None else EntryTrees(tree, plan)
        """The tree rendered with each `activeWave`, shared by the engines' replayers."""
        self.world = World(plan, tree, engine, _cluster(plan), matcher, declared)
        self.world.checks = list(STEP_CHECKS)
        self.world.settled_checks = list(SETTLED_CHECKS)
        self.world.reactors = [
            gpu_operator_reactions,
            mig_manager_reactions,
            kubelet_reactions,
            scheduler_reactions,
        ]
        self.engine: Engine = ArgoEngine() if engine == "argocd" else FluxEngine()
        self._waves: dict[str, EngineWave] = {}
        self.observed: list[Workload] | None = None
        """A snapshot's unmigrated pods, replacing the default one per legacy pool."""

    def rendered(self, wave: str) -> EngineWave:
        if wave not in self._waves:
            self._waves[wave] = engine_wave(self.tree, self.plan, wave, self.engine_name, self.entries[wave])
            self._check_order(self._waves[wave])
        return self._waves[wave]

    def _check_order(self, wave: EngineWave) -> None:
        """Flux's rendered chain follows the step sequence's sync order (`SYNC_UNITS`)."""
        rank = {u.id: i for i, u in enumerate(SYNC_UNITS)}
        units = [(rank[unit_of_folder(u.folder).id], u.name) for u in wave.units if u.folder]
        for (before, first), (after, second) in pairwise(units):
            if after < before:
                self.world.fail(
                    "sync-order",
                    f"wave {wave.wave}: Kustomization {second} runs after {first}, against the step sequence",
                    [f"Kustomization/{first}", f"Kustomization/{second}"],
                )

    def bootstrap(self) -> None:
        """The running cluster adopts the first wave (after its runbook applied the operator hand-off)."""
        first = self.plan.waves[0].name
        self.world.target = first
        self.world.transition = f"adopt-{first}"
        self.world.settle()
        if not any(r.chart == "gpu-operator" for r in self.rendered(first).releases.values()):
            self._apply_operator_handoff()
        if host_driver(self.world):
            self.world.notes.add(
                "the NVIDIA driver is the host's (driver.enabled: false): its upgrades are not modelled"
            )
        self._add_workloads(first)
        self._deliver(self.rendered(first))
        outcome = self.engine.sync(self.world, self.rendered(first))
        if outcome:
            self.world.fail("sync-completes", f"adopting {first}: {outcome}", [])
        check_settled(self.world, f"once {first} is adopted")

    def _deliver(self, wave: EngineWave) -> None:
        """The entry's own objects (gate programs, identities), applied before any wave's hooks run."""
        for obj in wave.delivered:
            apply_object(self.world, obj, self.engine_name)
        if wave.delivered:
            self.world.record(
                self.engine_name, f"the entry applies {len(wave.delivered)} object(s) of delivery/"
            )

    def _apply_operator_handoff(self) -> None:
        """The first wave's runbook, before the merge: `helm upgrade --reuse-values` of the running
        operator with the rendered hand-off (`render/operator_handoff.py`); without one, the
        operator keeps `gpuOperator.values` only."""
        path = operator_handoff_path(self.plan)
        text = self.tree.files.get(path) if path is not None else None
        if not isinstance(text, str):
            self.world.notes.add(
                "the GPU Operator release is not rendered (gpuOperator.managed is false) and no "
                "hand-off gives it the migration's settings: modelled with gpuOperator.values only"
            )
            return
        self.world.operator_handoff = json.loads(text)
        self.world.record("runbook", f"helm upgrade --reuse-values the running GPU Operator with {path}")
        self.world.settle()

    def _add_workloads(self, wave: str) -> None:
        have = {w.key for w in self.world.cluster.workloads if w.phase != "done"}
        self.world.cluster.workloads = [w for w in self.world.cluster.workloads if w.phase != "done"]
        fresh = [w for w in workload_mix(self.plan, self.plan.wave(wave), self.observed) if w.key not in have]
        self.world.cluster.workloads += fresh
        for w in self.world.cluster.workloads:
            w.moves = w.converting = False
        if fresh:
            self.world.record("workloads", f"{len(fresh)} workload(s) of {wave} created")
            self.world.settle()

    def _mark_moves(self, source: str, target: str) -> None:
        moving = {p for p, m in self.world.declared[source].items() if self.world.declared[target][p] != m}
        ids = {g.id for g in self.world.cluster.groups if g.pool in moving}
        for w in self.world.cluster.workloads:
            if w.group in ids or moving.intersection(w.pools) or (w.kind == "claim" and w.phase == "pending"):
                w.moves = True

    def _sync(self, wave: EngineWave, late: list[Callable[[], None]], done: Callable[[str], None]) -> None:
        """The engine's sync; with a late operator, the steps come once it is stuck, then the retries.

        A Job that retries by itself holds the sync (Argo CD's operation stays Running, Flux's
        Kustomization stays not Ready) until it holds. A failed Job is re-run only by Argo CD's
        sync retry, whose limited attempts are spent within minutes, before a late operator acts.
        """
        outcome = self.engine.sync(self.world, wave, done)
        if not outcome:
            for action in late:
                action()
            return
        if not late:
            self.world.fail(
                "sync-completes",
                f"with the runbook's order the sync of {wave.wave} does not complete: {outcome}",
                [],
            )
        waiting = "waiting:" in outcome and "failed:" not in outcome
        if not waiting and self.engine_name == "argocd" and wave.retry_limit >= 0:
            for _ in range(wave.retry_limit):
                self.engine.retry(self.world, wave, done)
            for action in late:
                action()
            self.world.fail(
                "sync-completes",
                f"the sync of {wave.wave} failed ({outcome}); its {wave.retry_limit} retries ran out before the "
                "operator's steps, and Argo CD does not retry a failed sync of the same commit again",
                [f"Application/{self.plan.platform.name}"],
            )
        for action in late:
            action()
        outcome = self.engine.retry(self.world, wave, done)
        if outcome:
            why = (
                "Flux never re-runs an unchanged failed Job"
                if self.engine_name == "flux"
                else "the retry fails"
            )
            self.world.fail(
                "sync-completes",
                f"after the operator's steps the sync of {wave.wave} is still stuck ({why}): {outcome}",
                [],
            )

    def transition(self, source: str, target: str, *, late: bool = False) -> None:
        """Replay `source` -> `target` from the current state (`late`: the operator merges first)."""
        world = self.world
        world.target = target
        world.bridge_allowed = self.plan.wave(target).bridge_allowed
        self._add_workloads(source)
        self._mark_moves(source, target)
        steps = transition_steps(self.plan, self.plan.wave(source), self.plan.wave(target))
        merge = [s.kind for s in steps].index("merge")
        before: list[Callable[[], None]] = [
            partial(apply_manual, world, s, source, target) for s in steps[:merge]
        ]
        if not late:
            for action in before:
                action()
        world.record("operator", f"merge: activeWave {source} -> {target}")
        waiting = [s for s in steps[merge + 1 :] if s.kind == "manual" and s.after]
        ran: list[Step] = []

        def done(unit: str) -> None:
            for step in [s for s in waiting if s.after == unit]:
                waiting.remove(step)
                ran.append(step)
                self._manual(step, source, target)

        def resume() -> None:
            """The late operator goes on with the runbook: the steps after a unit that has applied."""
            for step in ran:
                self._manual(step, source, target)

        self._sync(self.rendered(target), [*before, resume] if late else [], done)
        for step in steps[merge + 1 :]:
            if step.kind == "manual" and (not step.after or step in waiting):
                self._manual(step, source, target)
        for w in world.cluster.workloads:  # its own move is over: from now on it must run
            w.converting = False
        for check in world.settled_checks:
            check(world)
        check_settled(world, f"after {source} -> {target}")
        self._check_leftovers(target)
        self._check_synced(target)

    def _manual(self, step: Step, source: str, target: str) -> None:
        """A manual step; syncing Argo CD's `-apps` Application by hand is the engine's to replay."""
        if step.action != ARGOCD_APPS:
            apply_manual(self.world, step, source, target)
        elif isinstance(self.engine, ArgoEngine):
            commands = argocd_apps_commands(self.plan, self.plan.wave(source), self.plan.wave(target))
            self.engine.sync_by_hand(self.world, self.rendered(target), commands)

    def _check_leftovers(self, target: str) -> None:
        """A release the target wave does not render must be gone, not orphaned."""
        wanted = {RELEASE_KEYS.get(r.chart, r.chart) for r in self.rendered(target).releases.values()}
        for key, release in self.world.cluster.releases.items():
            if key not in wanted:
                self.world.fail(
                    "leftovers",
                    f"after the transition to {target} the {release.chart} release is still installed"
                    + (
                        " (orphaned: its Application was deleted without a resources finalizer)"
                        if not release.owner
                        else ""
                    ),
                    [
                        f"HelmRelease/{release.name}"
                        if self.engine_name == "flux"
                        else f"Application/{release.name}"
                    ],
                )

    def _check_synced(self, target: str) -> None:
        """Argo CD: the wave's Application ends Synced, so self-heal does not sync it for ever. (Flux
        skips an object with `kustomize.toolkit.fluxcd.io/prune: disabled` and counts it settled: it
        leaves the inventory and the Kustomization is Ready, fluxcd/kustomize-controller v1.9.4
        `internal/controller/kustomization_controller.go` `prune`, `pruneSurvivors`.)"""
        if not isinstance(self.engine, ArgoEngine):
            return
        for obj in self.engine.out_of_sync(self.rendered(target)):
            kind, name = obj["kind"], obj["metadata"]["name"]
            self.world.fail(
                "ends-synced",
                f"after the transition to {target} the Application stays OutOfSync: {kind} {name} left Git, is "
                "never pruned (Prune=false) and does not carry IgnoreExtraneous",
                [f"{kind}/{name}"],
            )

    def disturb(self) -> None:
        """A node restart and, from the same state, a driver upgrade on one node of each kind of group.

        Each runs on its own copy of the cluster, so neither hides what the other breaks; the walk
        continues from the state before them. The wave's own workloads (its tenants' claims) run first.
        """
        self._add_workloads(self.world.target)
        seen: set[tuple[str, str, bool]] = set()
        for group in list(self.world.cluster.groups):
            kind = (self.world.mode(group), group.provisioner, group.mig_capable)
            if kind in seen:
                continue
            seen.add(kind)
            for event in (self._restart, self._upgrade):
                start, engine = self.world, self.engine
                self.world, self.engine = start.fork(), engine.fork()
                self.world.trace = start.trace
                self.world.disturbance = True
                try:
                    node = self._one_node(next(g for g in self.world.cluster.groups if g.id == group.id))
                    event(node)
                finally:
                    self.world, self.engine = start, engine

    def fork(self) -> tuple[World, Engine]:
        """A copy of the current cluster and engine memory to start other transitions from."""
        return self.world.fork(), self.engine.fork()

    def run(
        self, start: tuple[World, Engine], a: str, b: str, *, late: bool, disturb: bool
    ) -> TransitionResult:
        """Replay `a` -> `b` (and the disturbances) from `start`; leaves the replayer in the end state."""
        self.world, self.engine = start[0].fork(), start[1].fork()
        self.world.transition = f"{a}-to-{b}" + ("-late" if late else "")
        result = TransitionResult(self.engine_name, a, b, late=late)
        try:
            self.transition(a, b, late=late)
            if disturb:
                self.disturb()
        except ViolationFound as exc:
            result.violation = exc.violation
            result.tail = self.world.trace[-8:-1]
        result.steps = self.world.steps
        result.notes = sorted(self.world.notes)
        return result

    def _maintenance(self, group: Group, event: MaintenanceEvent, *, after: bool) -> None:
        """The runbook's node maintenance steps before (or after) the event (on the pool's nodes)."""
        world = self.world
        before, later = maintenance_steps(self.plan, self.plan.wave(world.target), group.pool, event)
        for step in later if after else before:
            apply_manual(world, step, world.target, world.target)

    def _one_node(self, group: Group) -> Group:
        if len(group.nodes) == 1:
            return group
        part = group.split(1, "~1")
        self.world.cluster.groups.insert(self.world.cluster.groups.index(group), part)
        for w in self.world.cluster.workloads:
            if w.group == group.id:
                w.group = part.id
        return part

    def _restart(self, group: Group) -> None:
        world = self.world
        group.markers.clear()
        group.validator_started = False
        group.device_plugin_registered = False
        group.operands = {n: "waiting" if p != "unschedulable" else p for n, p in group.operands.items()}
        group.driver_loaded = "driver" in group.operands or host_driver(world)
        if "driver" in group.operands:
            group.operands["driver"] = "running"
        if group.kubelet_plugin == "running":
            group.kubelet_plugin, group.published_layout = "absent", None
        for w in world.cluster.workloads:
            if w.group == group.id and w.phase == "running":
                w.phase = "restarting"
        world.record(
            "node", f"{group.name} restarts: /run is empty, every pod runs its init containers again"
        )
        world.settle()
        self._maintenance(group, "restart", after=True)
        check_settled(world, f"after a restart of {group.name}")

    def _upgrade(self, group: Group) -> None:
        """A driver upgrade: unattended (`autoUpgrade`, the chart default) nobody runs the runbook's
        steps before it, only the upgrade controller acts; by hand, the runbook's maintenance steps."""
        world = self.world
        if host_driver(world):  # no driver DaemonSet, no driver manager: the host's own procedure
            return
        unattended = world.operator().auto_upgrade
        if not unattended:
            self._maintenance(group, "driver-upgrade", after=False)
        heals = self.rendered(world.target).self_heal
        upgrade_driver(world, group, self.engine.correct_drift if heals else _no_drift_correction)
        if unattended:  # k8s-operator-libs `ProcessUncordonRequiredNodes`
            group.cordoned = False
            world.record("gpu-operator upgrade controller", f"uncordons {group.name}")
            world.settle()
        self._maintenance(group, "driver-upgrade", after=True)
        check_settled(world, f"after a driver upgrade of {group.name}")


def replay_platform(
    plan: Plan,
    tree: Tree,
    engine: str,
    pairs: list[tuple[str, str]],
    matcher: DeviceMatcher,
    observed: list[Workload] | None = None,
    entries: EntryTrees | None = None,
    observe: Callable[[World, str], None] | None = None,
) -> list[TransitionResult]:
    """Replay every (source, target) pair under `engine`, each from the state its source wave reached.

    The waves are walked forward from the first; a pair whose runbook starts with manual steps is
    replayed again with the operator late. The disturbances (a restart, a driver upgrade) run after
    the transitions between adjacent waves, forward and back: every wave's state is disturbed
    whichever way it is reached, and a jump over waves ends in one of those states. Once the walk
    breaks an invariant, the waves after it have no state to start from: each pair from them is
    listed as not replayed, with why, so that every accepted transition has an outcome.
    """
    declared = declared_modes(plan, tree)
    names = [w.name for w in plan.waves]
    replayer = Replayer(plan, tree, engine, matcher, declared, entries)
    replayer.observed = observed
    replayer.world.observe = observe
    try:
        replayer.bootstrap()
    except ViolationFound as exc:
        adopted = TransitionResult(
            engine, names[0], names[0], steps=replayer.world.steps, violation=exc.violation
        )
        why = f"the first wave {names[0]} was not adopted ({exc.violation.invariant})"
        return [adopted, *_not_replayed(plan, engine, pairs, why)]
    states = {names[0]: replayer.fork()}
    results: list[TransitionResult] = []
    broken = ""
    furthest = max((max(names.index(a), names.index(b)) for a, b in pairs), default=0)
    for i in range(furthest):
        a, b = names[i], names[i + 1]
        result = replayer.run(states[a], a, b, late=False, disturb=True)
        if (a, b) in pairs:
            results.append(result)
        if result.violation is not None:
            if (a, b) not in pairs:
                results.append(result)
            broken = f"the walk to it broke at {a} -> {b} ({result.violation.invariant})"
            break
        states[b] = replayer.fork()
    for a, b in pairs:
        if a not in states:
            results += _not_replayed(plan, engine, [(a, b)], f"wave {a} was never reached: {broken}")
            continue
        if names.index(b) != names.index(a) + 1:
            adjacent = abs(names.index(b) - names.index(a)) == 1
            results.append(replayer.run(states[a], a, b, late=False, disturb=adjacent))
        if replays_late(plan, a, b):
            results.append(replayer.run(states[a], a, b, late=True, disturb=False))
    return results


def replays_late(plan: Plan, a: str, b: str) -> bool:
    """Whether `a` -> `b` is replayed again with the operator late (its runbook starts with manual steps)."""
    steps = transition_steps(plan, plan.wave(a), plan.wave(b))
    return bool(steps) and steps[0].kind == "manual"


def _not_replayed(plan: Plan, engine: str, pairs: list[tuple[str, str]], why: str) -> list[TransitionResult]:
    """The results of `pairs` (and their late-operator variants) that could not be replayed, with why."""
    out = []
    for a, b in pairs:
        out.append(TransitionResult(engine, a, b, not_replayed=why))
        if replays_late(plan, a, b):
            out.append(TransitionResult(engine, a, b, late=True, not_replayed=why))
    return out
