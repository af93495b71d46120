"""`gpuplatform rehearse`: every adjacent transition of a platform, forward then back, on a real control
plane per engine; the report `simulate` prints.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import yaml

from gpuplatform.errors import InputError, Problem
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.plan.steps import transition_steps
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.rehearse.assets import AssetsMissing, find_assets
from gpuplatform.rehearse.cluster import Rehearsal
from gpuplatform.rehearse.crds import read_crds
from gpuplatform.rehearse.runtime import runtime_problem
from gpuplatform.rehearse.upstream import UpstreamMissing, platform_crd_folders
from gpuplatform.rehearse.walk import Walker
from gpuplatform.render.tree import Tree
from gpuplatform.simulate.checkpoints import prepare_folder
from gpuplatform.simulate.replay import TransitionResult
from gpuplatform.simulate.run import PlatformReport
from gpuplatform.versions import parse_release

__all__ = ["RehearsalOptions", "read_tree", "rehearsal_pairs", "rehearse_platform", "rehearse_platforms"]


@dataclass(frozen=True)
class RehearsalOptions:
    """Where the binaries, CRDs and tree come from, what to keep, and who hears of each transition."""

    assets: Path | None = None
    crds: Path | None = None
    """A folder of upstream CRD files; None: the cached CRDs of the releases the platform targets
    (`upstream.platform_crd_folders`)."""
    tree: Path | None = None
    keep: bool = False
    late: bool = True
    """After a transition whose runbook starts with the operator's steps, rehearse it again with the
    operator late (the way back first)."""
    progress: Callable[[str], None] = field(default=lambda line: None, compare=False)
    """Told one line as each transition ends (the CLI prints it to stderr)."""
    snapshots: Path | None = None
    """`--write-snapshots`: a new or empty folder where the product's own `gpuplatform snapshot`
    writes the cluster once the first wave is adopted and after each transition settles."""


def read_tree(folder: Path, platform: str) -> Tree:
    """A rendered platform folder as the engines read it: every YAML file's documents, other files as text."""
    files: dict[str, object] = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        relative = path.relative_to(folder).as_posix()
        text = path.read_text()
        if path.suffix == ".yaml":
            files[relative] = [d for d in yaml.safe_load_all(text) if d is not None]
        else:
            files[relative] = text
    return Tree(platform, files)  # type: ignore[arg-type]


def rehearsal_pairs(plan: Plan, source: str | None, target: str | None) -> list[tuple[str, str]]:
    """The walk: every adjacent pair forward, then back; or the one pair asked for."""
    names = [w.name for w in plan.waves]
    forward = list(pairwise(names))
    walk = forward + [(b, a) for a, b in reversed(forward)]
    if source is None or target is None:
        return walk
    return [(source, target)]


def _walk_to(plan: Plan, source: str) -> list[tuple[str, str]]:
    """The adjacent steps that bring the cluster from the first wave to `source`."""
    names = [w.name for w in plan.waves]
    return list(pairwise(names[: names.index(source) + 1]))


def rehearse_platform(
    loaded: LoadedPlatform,
    stack: str,
    source: str | None,
    target: str | None,
    engines: Sequence[str],
    options: RehearsalOptions,
) -> PlatformReport:
    """Rehearse one platform under each engine it renders; InputError for what cannot be rehearsed."""
    platform = loaded.platform
    plan = plan_platform(platform)
    names = [w.name for w in plan.waves]
    if source is not None and target is not None and abs(names.index(source) - names.index(target)) != 1:
        raise InputError(
            [
                Problem(
                    "--to",
                    "",
                    "",
                    f"{source} -> {target} jumps over waves: only adjacent transitions have a runbook to rehearse",
                )
            ]
        )
    folder = options.tree or Path("dist") / platform.name
    if not (folder / "runbooks").is_dir():
        raise InputError(
            [Problem(str(folder), "", "", "no rendered tree here (run `gpuplatform synth`, or give --tree)")]
        )
    assets = find_assets(parse_release(platform.kubernetes.version).minor, options.assets)
    tree = read_tree(folder, platform.name)
    rendered: list[str] = [e for e in engines if e in platform.delivery.engines]
    report = PlatformReport(platform.name, list(rendered))
    report.skipped += [f"engine {e}: not rendered for this platform" for e in engines if e not in rendered]
    crds = read_crds([options.crds] if options.crds is not None else platform_crd_folders(platform))
    for engine in rendered:
        results, skipped = _rehearse_engine(
            plan, tree, folder, engine, stack, source, target, assets, crds, options, loaded.manifests
        )
        report.results += results
        report.skipped += skipped
    return report


def _rehearse_engine(
    plan: Plan,
    tree: Tree,
    folder: Path,
    engine: str,
    stack: str,
    source: str | None,
    target: str | None,
    assets: object,
    crds: dict[tuple[str, str], dict[str, object]],
    options: RehearsalOptions,
    manifests: Mapping[str, str],
) -> tuple[list[TransitionResult], list[str]]:
    """One engine's walk on its own control plane: the results, and the pairs not rehearsed (why)."""
    pairs = rehearsal_pairs(plan, source, target)
    lead = _walk_to(plan, pairs[0][0]) if source is not None else []
    with Rehearsal(plan, assets, keep=options.keep) as cluster:  # type: ignore[arg-type]
        if options.keep:
            options.progress(f"{plan.platform.name} {engine}: the rehearsal's folder is {cluster.folder}")
        walker = Walker(
            cluster, plan, tree, folder, engine, stack, crds, snapshots=options.snapshots, manifests=manifests
        )
        start = walker.bootstrap()
        if start.violation is not None:
            return [start], [
                f"{engine} {a} -> {b}: not rehearsed, the first wave was not adopted" for a, b in pairs
            ]
        results: dict[tuple[str, str, bool], TransitionResult] = {}
        skipped: list[str] = []
        stopped = ""
        walk = _with_late(plan, pairs) if options.late else [(a, b, False) for a, b in pairs]
        for a, b, late in [(a, b, False) for a, b in lead] + walk:
            wanted = (a, b) in pairs
            if stopped:
                if wanted and (a, b, late) not in results:
                    skipped.append(
                        f"{engine} {a} -> {b}{' (operator late)' if late else ''}: not rehearsed, {stopped}"
                    )
                continue
            began = time.monotonic()
            result = walker.transition(plan.wave(a), plan.wave(b), late=late)
            verdict = "ok" if result.violation is None else f"VIOLATION {result.violation.invariant}"
            options.progress(
                f"{plan.platform.name} {engine} {a} -> {b}{' (operator late)' if late else ''}: {verdict} "
                f"({result.steps} steps, {time.monotonic() - began:.0f} s)"
            )
            if result.violation is not None or (wanted and (a, b, late) not in results):
                results[(a, b, late)] = result  # a violation stands even where an earlier run held
            if result.violation is not None:
                stopped = f"the cluster was left broken by {a} -> {b}{' (operator late)' if late else ''}"
        return list(results.values()), skipped


def _with_late(plan: Plan, pairs: list[tuple[str, str]]) -> list[tuple[str, str, bool]]:
    """Each pair, and after one whose runbook starts with the operator's steps, the way back and the
    same pair again with the operator late (as `simulate` replays it)."""
    out = []
    for a, b in pairs:
        out.append((a, b, False))
        steps = transition_steps(plan, plan.wave(a), plan.wave(b))
        if steps and steps[0].kind == "manual":
            out += [(b, a, False), (a, b, True)]
    return out


def rehearse_platforms(
    loaded: Sequence[LoadedPlatform],
    stack: str,
    source: str | None,
    target: str | None,
    engines: Sequence[str],
    options: RehearsalOptions,
) -> list[PlatformReport]:
    """`rehearse_platform` for each platform; InputError for unknown waves, missing binaries, a
    machine that cannot run the programs, or several platforms given one `--tree`."""
    problems = []
    for lp in loaded:
        names = [w.name for w in lp.platform.waves]
        for option, wave in (("--from", source), ("--to", target)):
            if wave is not None and wave not in names:
                problems.append(
                    Problem(
                        option,
                        "",
                        "",
                        f"platform {lp.platform.name!r} has no wave {wave!r} (waves: {', '.join(names)})",
                    )
                )
    if options.tree is not None and len(loaded) > 1:
        problems.append(Problem("--tree", "", "", "one tree is one platform's: pick it with --platform"))
    why = runtime_problem()
    if why:
        problems.append(
            Problem("rehearse", "", "", f"the shipped programs cannot run on this machine: {why}")
        )
    if problems:
        raise InputError(problems)
    if options.snapshots is not None:
        prepare_folder(options.snapshots)
    path = str(Path(stack).resolve())
    try:
        with _interrupted_by_sigterm():
            return [rehearse_platform(lp, path, source, target, engines, options) for lp in loaded]
    except AssetsMissing as exc:
        raise InputError([Problem("--assets", "", "", str(exc))]) from None
    except UpstreamMissing as exc:
        raise InputError([Problem("--crds", "", "", str(exc))]) from None


@contextmanager
def _interrupted_by_sigterm() -> Iterator[None]:
    """SIGTERM ends a rehearsal as Ctrl-C does: the control plane and every program are stopped on
    the way out (the `with` blocks run), and the command exits 130."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
