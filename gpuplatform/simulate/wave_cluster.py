"""The model's cluster in one wave, as that wave's gates read it: the one healthy cluster of a wave.

The replay adopts the first wave and walks forward, wave after wave, to the one asked for (no late
operator, no disturbance). The cluster is taken where the wave's gates judge it: at the first of
the wave's gates that holds while its validation probes run and hold what they were given (the gate
that reads them removes them, `jobs.py`); a wave without probes is taken settled, after its
transition.
`gpuplatform.testing.wave_cluster` and `benchmarks/fleet_snapshot.py` build their snapshots from it, as
`simulate --write-snapshots` writes its checkpoints from the same replay.
"""

from __future__ import annotations

from itertools import pairwise

from gpuplatform.plan.waves import Plan
from gpuplatform.render.tree import render_tree
from gpuplatform.simulate.devices import DeviceMatcher
from gpuplatform.simulate.replay import Replayer, declared_modes
from gpuplatform.simulate.world import ViolationFound, World

__all__ = ["wave_world"]


def wave_world(plan: Plan, wave: str) -> World:
    """The model's cluster in `wave` as its gates read it, under the first engine the platform
    renders; ViolationFound when the replay breaks an invariant on the way."""
    tree = render_tree(plan)
    names = [w.name for w in plan.waves]
    last = f"adopt-{names[0]}" if wave == names[0] else f"{names[names.index(wave) - 1]}-to-{wave}"
    read: list[World] = []

    def observe(world: World, what: str) -> None:
        """Keep the cluster at the first gate of the wave's transition that holds on running probes."""
        if read or world.transition != last or not (what.startswith("gate ") and what.endswith(" holds")):
            return
        if any(w.probe and w.phase == "running" for w in world.cluster.workloads):
            read.append(world.fork())

    engine = plan.platform.delivery.engines[0]
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
