"""The model's cluster in one wave, as that wave's gates read it: the one healthy cluster of a wave.

The replay adopts the first wave and walks forward, wave after wave, to the one asked for (no late
operator, no disturbance). The cluster is taken where the wave's gates judge it: at the first gate
that reads the wave's validation probes, while they run and hold what they were given (the gate
removes them once read, `jobs.py`); a wave without probes is taken settled, after its transition.
`tests/evidence/builders.py` and `benchmarks/fleet_snapshot.py` build their snapshots from it, as
`simulate --write-snapshots` writes its checkpoints from the same replay.
"""

from __future__ import annotations

from itertools import pairwise

from gpuplatform.plan.waves import Plan
from gpuplatform.render.tree import Tree, render_tree
from gpuplatform.simulate.devices import DeviceMatcher
from gpuplatform.simulate.replay import Replayer, declared_modes
from gpuplatform.simulate.world import ViolationFound, World

__all__ = ["wave_world"]


def wave_world(plan: Plan, wave: str, *, engine: str = "", tree: Tree | None = None) -> World:
    """The model's cluster in `wave` as its gates read it, under `engine` (default: the first the
    platform renders); ViolationFound when the replay breaks an invariant on the way."""
    tree = tree if tree is not None else render_tree(plan)
    engine = engine or plan.platform.delivery.engines[0]
    names = [w.name for w in plan.waves]
    last = f"adopt-{names[0]}" if wave == names[0] else f"{names[names.index(wave) - 1]}-to-{wave}"
    read: list[World] = []

    def observe(world: World, what: str) -> None:
        probing = any(w.probe and w.phase == "running" for w in world.cluster.workloads)
        if not read and world.transition == last and what.startswith("gate ") and probing:
            read.append(world.fork())

    replayer = Replayer(plan, tree, engine, DeviceMatcher(plan.platform), declared_modes(plan, tree))
    replayer.world.observe = observe
    replayer.bootstrap()
    for a, b in pairwise(names[: names.index(wave) + 1]):
        result = replayer.run(replayer.fork(), a, b, late=False, disturb=False)
        if result.violation is not None:
            raise ViolationFound(result.violation)
    world = read[0] if read else replayer.world
    world.observe = None
    return world
