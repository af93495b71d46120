"""Specs and a runner for simulator tests."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.evidence.evaluate import evaluate_gates, evaluate_wave
from gpuplatform.gates import gates_for_wave
from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render import operators
from gpuplatform.render.tree import render_tree
from gpuplatform.simulate.devices import DeviceMatcher
from gpuplatform.simulate.replay import replay_platform
from gpuplatform.simulate.run import PlatformReport, prepare
from gpuplatform.simulate.snapshot import cluster_snapshot
from gpuplatform.simulate.world import Violation, World
from tests.specs import minimal_spec, write_spec


def sim_spec() -> dict[str, Any]:
    """The minimal spec with its GPU Operator release rendered and both engines."""
    doc = minimal_spec()
    doc["spec"]["gpuOperator"] = {"managed": True}
    doc["spec"]["delivery"]["engines"] = ["argocd", "flux"]
    return doc


def simulate(
    tmp_path: Path,
    doc: dict[str, Any],
    source: str | None = None,
    target: str | None = None,
    engines: tuple[str, ...] = ("argocd", "flux"),
) -> PlatformReport:
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    return prepare(loaded, source, target, engines).replay()


def violations(report: PlatformReport, *, late: bool | None = None) -> list[tuple[str, str, str, Violation]]:
    """(engine, from, to, violation) of every failed replay (`late`: only those variants)."""
    return [
        (r.engine, r.source, r.target, r.violation)
        for r in report.results
        if r.violation is not None and (late is None or r.late == late)
    ]


def without_application_finalizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Render child Applications without the resources finalizer: Argo CD then orphans a release
    whose Application goes (a known failure `simulate` catches as `leftovers`)."""
    original = operators.argocd_application

    def no_finalizer(*args: Any, **kwargs: Any) -> dict[str, Any]:
        app = original(*args, **kwargs)
        app["metadata"].pop("finalizers", None)
        return app

    monkeypatch.setattr(operators, "argocd_application", no_finalizer)


def _judge(world: World, what: str, mismatches: list[str]) -> None:
    """At a checkpoint: a gate's verdict is its program's on the snapshot; a settled cluster passes
    every gate of its wave and every evidence check."""
    plan = world.plan
    state = plan.wave(world.target)
    snapshot = cluster_snapshot(world)
    where = f"{world.engine} {world.transition} step {world.steps} ({what})"
    if what.startswith("gate "):
        _, gate_id, verdict = what.split()
        (gate,) = [g for g in gates_for_wave(plan, state) if g.id == gate_id]
        (result,) = evaluate_gates([gate], plan, state, snapshot)
        if (result.status == "held") != (verdict == "holds"):
            mismatches.append(f"{where}: evidence says {result.status}: {result.findings + result.unknowns}")
        return
    if not what.startswith(("once ", "after ")) or " of " in what:
        return  # a restart's or a driver upgrade's settled state: judged by the operands invariant
    for result in evaluate_wave(plan, state, snapshot):
        # `drained` judges a drain wave once the operator has drained its pools: the runbook's step
        # after that wave's sync, which is no plan step (`plan/steps.py`), so the replay never runs it
        if result.id == "drained":
            continue
        if result.status != "held":
            mismatches.append(f"{where}: {result.id} {result.status}: {result.findings + result.unknowns}")


def replay_judged(loaded: LoadedPlatform) -> None:
    """Replay every adjacent transition, both ways, under each engine: no violation, and at every
    checkpoint evidence agrees with the replay's gate verdicts and every settled state passes."""
    plan = plan_platform(loaded.platform)
    tree = render_tree(plan)
    names = [w.name for w in plan.waves]
    pairs = [*pairwise(names), *((b, a) for a, b in pairwise(names))]
    mismatches: list[str] = []
    # WHEN every transition between adjacent waves is replayed under each engine the platform renders
    for engine in loaded.platform.delivery.engines:
        results = replay_platform(
            plan,
            tree,
            engine,
            pairs,
            DeviceMatcher(loaded.platform),
            observe=lambda world, what: _judge(world, what, mismatches),
        )
        assert [r.violation for r in results if r.violation] == []
    # THEN evidence agrees with every gate verdict of the replay, and every settled state passes
    assert mismatches == []
