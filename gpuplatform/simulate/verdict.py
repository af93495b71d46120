"""The simulation verdict `check` and `synth` include (GP290): what `simulate --all --engine both`
proves, as findings located at the spec's waves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpuplatform.inventory.catalog import known_product
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.render.tree import Tree
from gpuplatform.simulate.replay import TransitionResult
from gpuplatform.simulate.run import ENGINES, PlatformReport, prepare, replay_reports
from gpuplatform.snapshot.read import Snapshot

__all__ = ["Refusal", "simulation_verdict", "simulation_verdicts"]


@dataclass(frozen=True)
class Refusal:
    """One transition whose replay breaks an invariant: where (the target wave), what, the command to see it."""

    loc: str
    message: str
    hint: str


def simulation_verdict(
    loaded: LoadedPlatform, tree: Tree | None = None, snapshot: Snapshot | None = None
) -> tuple[Refusal, ...]:
    """Every transition `plan` accepts, replayed under each rendered engine (with the `snapshot`'s
    workloads when given): one Refusal per (source, target) whose replay breaks an invariant. None
    for a platform with a pool the catalog cannot model: the model has no devices for it, and
    `check` refuses it already (GP301)."""
    trees = {loaded.platform.name: tree} if tree is not None else {}
    return simulation_verdicts([loaded], trees, snapshot)[loaded.platform.name]


def simulation_verdicts(
    loaded: Sequence[LoadedPlatform], trees: Mapping[str, Tree], snapshot: Snapshot | None = None
) -> dict[str, tuple[Refusal, ...]]:
    """`simulation_verdict` of each platform (by name), their replays shared among the workers
    (`simulate.run.replay_reports`)."""
    modelled = [lp for lp in loaded if all(known_product(pool.product) for pool in lp.platform.node_pools)]
    prepared = [
        prepare(lp, None, None, ENGINES, tree=trees.get(lp.platform.name), snapshot=snapshot)
        for lp in modelled
    ]
    verdicts: dict[str, tuple[Refusal, ...]] = {lp.platform.name: () for lp in loaded}
    for lp, report in zip(modelled, replay_reports(prepared), strict=True):
        verdicts[lp.platform.name] = _refusals(lp, report)
    return verdicts


def _refusals(loaded: LoadedPlatform, report: PlatformReport) -> tuple[Refusal, ...]:
    index = {w.name: i for i, w in enumerate(loaded.platform.waves)}
    first: dict[tuple[str, str], list[TransitionResult]] = {}
    for result in report.failed:
        first.setdefault((result.source, result.target), []).append(result)
    return tuple(_refusal(loaded.source, index[b], results) for (_, b), results in first.items())


def _refusal(source: str, target_index: int, results: list[TransitionResult]) -> Refusal:
    head = results[0]
    assert head.violation is not None
    v = head.violation
    engines = ", ".join(dict.fromkeys(r.engine for r in results))
    late = " (operator late)" if head.late else ""
    what = f"{head.source} -> {head.target}{late}"
    hint = f"gpuplatform simulate {source} --from {head.source} --to {head.target} --engine {head.engine}"
    if head.source == head.target:  # the running cluster adopting the first wave
        what, hint = f"adopting {head.target}", f"gpuplatform simulate {source} --engine {head.engine}"
    message = (
        f"simulate proves {what} unsafe ({engines}): "
        f"invariant {v.invariant} at step {v.step.index} [{v.step.actor}]: {v.message}"
    )
    return Refusal(f"spec.waves[{target_index}]", message, hint)
