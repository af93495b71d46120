"""`gpuplatform simulate`: which transitions to replay, under which engines, and the report."""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuplatform.background import forks
from gpuplatform.errors import InputError, Problem
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.plan.transitions import transition
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.render.tree import Tree, render_tree
from gpuplatform.simulate.checkpoints import Checkpoints, prepare_folder
from gpuplatform.simulate.devices import DeviceMatcher
from gpuplatform.simulate.model import Workload
from gpuplatform.simulate.rendered import EntryTrees
from gpuplatform.simulate.replay import TransitionResult, replay_platform
from gpuplatform.simulate.workloads import snapshot_workloads
from gpuplatform.snapshot.read import Snapshot, snapshot_or_pods

__all__ = [
    "PlatformReport",
    "Prepared",
    "accepted_pairs",
    "prepare",
    "replay_reports",
    "report_text",
    "simulate_platforms",
]

ENGINES = ("argocd", "flux")


@dataclass
class PlatformReport:
    """What was replayed for one platform and what broke first."""

    platform: str
    engines: list[str]
    results: list[TransitionResult] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[TransitionResult]:
        return [r for r in self.results if r.violation is not None]

    @property
    def not_replayed(self) -> list[TransitionResult]:
        """Accepted transitions the replay could not reach (their source wave's state was never built)."""
        return [r for r in self.results if r.not_replayed]

    @property
    def proven(self) -> int:
        return len(self.results) - len(self.failed) - len(self.not_replayed)

    @property
    def steps(self) -> int:
        return sum(r.steps for r in self.results)

    @property
    def exit_code(self) -> int:
        """1 when a replay broke an invariant, else 0."""
        return 1 if self.failed else 0

    def text(self) -> str:
        """The terminal page (`report_text`)."""
        return report_text(self)

    def as_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "engines": self.engines,
            "transitions": [
                {
                    "engine": r.engine,
                    "from": r.source,
                    "to": r.target,
                    "operatorLate": r.late,
                    "steps": r.steps,
                    "violation": r.violation.as_dict() if r.violation else None,
                    "notReplayed": r.not_replayed or None,
                    "notes": r.notes,
                }
                for r in self.results
            ],
            "skipped": self.skipped,
            "proven": self.proven,
            "failed": len(self.failed),
            "notReplayed": len(self.not_replayed),
            "steps": self.steps,
        }


def accepted_pairs(plan: Plan) -> tuple[list[tuple[str, str]], list[str]]:
    """Every ordered pair of waves `plan --from/--to` accepts, and the refused ones (as text)."""
    names = [w.name for w in plan.waves]
    pairs, refused = [], []
    for a in names:
        for b in names:
            if a == b:
                continue
            if transition(plan, a, b).refusals:
                refused.append(f"{a} -> {b} (refused by plan)")
            else:
                pairs.append((a, b))
    return pairs, refused


def prepare(
    loaded: LoadedPlatform,
    source: str | None,
    target: str | None,
    engines: Sequence[str],
    tree: Tree | None = None,
    snapshot: Snapshot | None = None,
    checkpoints: tuple[Path, int] | None = None,
) -> Prepared:
    """Replay one transition (or, with no source/target, every accepted one) under each engine:
    `.replay()`, or `replay_reports` for several platforms at once.

    With a `snapshot`, its unmigrated GPU pods replace the default one per legacy pool. With
    `checkpoints` (a folder and the platform's index), the cluster is written at every checkpoint.
    """
    platform = loaded.platform
    plan = plan_platform(platform)
    rendered: list[str] = [e for e in engines if e in platform.delivery.engines]
    report = PlatformReport(platform.name, list(rendered))
    report.skipped += [f"engine {e}: not rendered for this platform" for e in engines if e not in rendered]
    if source is None or target is None:
        pairs, refused = accepted_pairs(plan)
        report.skipped += refused
    else:
        pairs = [(source, target)]
    tree = tree if tree is not None else render_tree(plan)
    matcher = DeviceMatcher(platform)
    observed = None
    if snapshot is not None:
        observed, left = snapshot_workloads(plan, snapshot)
        report.skipped += left
    return Prepared(report, _Replays(plan, tree, pairs, matcher, observed, checkpoints))


@dataclass(frozen=True)
class _Replays:
    """What every engine replays: the plan, its rendered tree, the pairs and the workload mix."""

    plan: Plan
    tree: Tree
    pairs: list[tuple[str, str]]
    matcher: DeviceMatcher
    observed: list[Workload] | None
    checkpoints: tuple[Path, int] | None = None
    """Where checkpoints are written (`--write-snapshots`) and the platform's index."""

    def observer(self, engine: str) -> Checkpoints | None:
        """The writer of `engine`'s checkpoints (None without `--write-snapshots`)."""
        if self.checkpoints is None:
            return None
        folder, index = self.checkpoints
        return Checkpoints(folder, f"{index:02d}.{ENGINES.index(engine)}")

    def replay(self, engine: str, entries: EntryTrees) -> list[TransitionResult]:
        """Every pair under `engine`."""
        return replay_platform(
            self.plan,
            self.tree,
            engine,
            self.pairs,
            self.matcher,
            self.observed,
            entries,
            self.observer(engine),
        )


@dataclass(frozen=True)
class Prepared:
    """One platform's report, to be filled, and what its engines replay."""

    report: PlatformReport
    replays: _Replays

    def replay(self) -> PlatformReport:
        """This platform's replays (`replay_reports`)."""
        return replay_reports([self])[0]


#: A forked worker's work: (index of the `Prepared`, engine) units, run in order.
_Task = list[tuple[int, str]]
_FORKED: list[Prepared] = []
"""The platforms a forked worker replays (inherited from the parent, never pickled)."""


def replay_reports(prepared: Sequence[Prepared]) -> list[PlatformReport]:
    """Every platform's replays under its engines, their results in each report in engine order.

    With children and the cores (`background.forks`), forked workers share the work; the platforms
    share nothing but the read-only plans and trees. One platform: a worker per engine, in
    parallel. Several: a worker per platform, its engines in turn, so the second engine's gate
    programs meet most of the first's inputs again and are not run twice (`gate_verdict._output`:
    three in four on the reference stack).
    """
    global _FORKED
    tasks = _tasks(prepared)
    if len(tasks) < 2 or not forks():  # one process: every unit in turn, the entry trees shared
        tasks = [[unit for task in tasks for unit in task]]
        done = [_replay_task(prepared, tasks[0])]
    else:
        _FORKED = list(prepared)
        try:
            workers = min(len(tasks), os.cpu_count() or 1)
            with multiprocessing.get_context("fork").Pool(workers, initializer=_ignore_sigint) as pool:
                done = pool.map(_replay_forked, tasks, chunksize=1)
        finally:
            _FORKED = []
    results = {
        unit: unit_results
        for task, task_results in zip(tasks, done, strict=True)
        for unit, unit_results in zip(task, task_results, strict=True)
    }
    for i, p in enumerate(prepared):  # replayed again, a report is filled again, not added to
        p.report.results = [r for engine in p.report.engines for r in results[(i, engine)]]
    return [p.report for p in prepared]


def _tasks(prepared: Sequence[Prepared]) -> list[_Task]:
    """The (platform, engine) units grouped as the workers run them (`replay_reports`)."""
    units = [[(i, engine) for engine in p.report.engines] for i, p in enumerate(prepared)]
    if len(units) == 1:
        return [[unit] for unit in units[0]]
    return [task for task in units if task]


def _replay_task(prepared: Sequence[Prepared], task: _Task) -> list[list[TransitionResult]]:
    """The units of one task, in order; a platform's engines share its entry trees and, in one
    process, the gate runs' memo."""
    entries: dict[int, EntryTrees] = {}
    out = []
    for index, engine in task:
        replays = prepared[index].replays
        if index not in entries:
            entries[index] = EntryTrees(replays.tree, replays.plan)
        out.append(replays.replay(engine, entries[index]))
    return out


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent, which stops them and exits 130."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _replay_forked(task: _Task) -> list[list[TransitionResult]]:
    return _replay_task(_FORKED, task)


def simulate_platforms(
    loaded: Sequence[LoadedPlatform],
    source: str | None,
    target: str | None,
    engines: Sequence[str],
    snapshot: Path | None = None,
    write_snapshots: Path | None = None,
) -> list[PlatformReport]:
    """`prepare` and replay every loaded platform; InputError for an unknown wave or an engine
    a platform does not render (it would prove "0 of 0").

    `write_snapshots`: a new or empty folder, which gets one snapshot folder per checkpoint.
    """
    problems = []
    for lp in loaded:
        names = [w.name for w in lp.platform.waves]
        for option, wave in (("--from", source), ("--to", target)):
            if wave is not None and wave not in names:
                message = f"platform {lp.platform.name!r} has no wave {wave!r} (waves: {', '.join(names)})"
                problems.append(Problem(option, "", "", message))
        rendered = lp.platform.delivery.engines
        if not set(engines) & set(rendered):
            message = (
                f"platform {lp.platform.name!r} renders no {' or '.join(engines)} entry points "
                f"(delivery.engines: {', '.join(rendered)}): nothing to replay"
            )
            problems.append(Problem("--engine", "", "", message))
    if problems:
        raise InputError(problems)
    observed = snapshot_or_pods(snapshot) if snapshot is not None else None
    if write_snapshots is not None:
        prepare_folder(write_snapshots)
    return replay_reports(
        [
            prepare(
                lp,
                source,
                target,
                engines,
                snapshot=observed,
                checkpoints=(write_snapshots, i + 1) if write_snapshots is not None else None,
            )
            for i, lp in enumerate(loaded)
        ]
    )


def report_text(report: PlatformReport) -> str:
    """The terminal page: the first violation with its step and objects, or what was proven."""
    lines = [f"platform {report.platform} ({', '.join(report.engines) or 'no engine'})"]
    for result in report.results:
        late = " (operator late)" if result.late else ""
        what = f"  {result.engine:6} {result.source} -> {result.target}{late}"
        if result.not_replayed:
            lines.append(f"{what}: not replayed: {result.not_replayed}")
            continue
        verdict = "ok" if result.violation is None else f"VIOLATION {result.violation.invariant}"
        lines.append(f"{what}: {result.steps} steps, {verdict}")
    first = next(iter(report.failed), None)
    if first is not None and first.violation is not None:
        v = first.violation
        late = " with the operator late" if first.late else ""
        lines += [
            "",
            f"first violation: {first.engine}, {first.source} -> {first.target}{late}",
            f"  at step {v.step.index} [{v.step.actor}]: {v.step.text}",
            f"  invariant {v.invariant}: {v.message}",
            f"  objects: {', '.join(v.objects) or '-'}",
            "  the steps before it:",
        ]
        lines += [f"    {s.index}. [{s.actor}] {s.text}" for s in first.tail]
    notes = sorted({n for r in report.results for n in r.notes})
    lines += [f"  note: {n}" for n in notes]
    refused = [s for s in report.skipped if s.endswith("(refused by plan)")]
    lines += [f"  skipped: {s}" for s in report.skipped if s not in refused]
    if refused:
        lines.append(f"  not replayed: {len(refused)} transition(s) plan refuses (see `plan --from/--to`)")
    counts = [f"{report.proven} of {len(report.results)} transition replays proven"]
    counts += [f"{len(report.failed)} violated"] * bool(report.failed)
    counts += [f"{len(report.not_replayed)} not replayed"] * bool(report.not_replayed)
    lines.append(f"{', '.join(counts)}, {report.steps} steps")
    return "\n".join(lines)
