"""The verbs of a Platform built in Python (`platform.plan()`, `.synth(out)`, ...): each runs the
command the CLI runs, on that platform, and returns the command's typed report.

A platform given without its stack file is named `<python>` in errors and in the lock file, and
the manifests its workloads name are read from the working directory; `source=__file__` names
the stack instead. The verbs fork nothing and keep no cache unless asked (`fork=`, `cache=`);
under `runtime.using(...)` they take that runtime's choices.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from gpuplatform.commands.capacity import CapacityReport, capacity_platforms
from gpuplatform.commands.check import CheckReport, check_platforms
from gpuplatform.commands.plan import PlanReport, TransitionReport, plan_platforms, plan_transitions
from gpuplatform.commands.render import RenderReport, render_platforms
from gpuplatform.commands.synth import SynthReport, synth_command
from gpuplatform.errors import InputError
from gpuplatform.load.stacks import PYTHON_SOURCE, loaded_platform
from gpuplatform.model.platform import Platform
from gpuplatform.rehearse.run import RehearsalOptions, rehearse_platforms
from gpuplatform.runtime import current, using
from gpuplatform.simulate.run import ENGINES, PlatformReport, simulate_platforms

__all__ = ["capacity", "check", "plan", "rehearse", "render", "simulate", "synth", "transition"]

Source = str | Path


@contextmanager
def _asked(fork: bool | None, cache: Path | None) -> Iterator[None]:
    """The current runtime, with the side effects the caller asked for."""
    now = current()
    with using(replace(now, fork=now.fork if fork is None else fork, cache=cache or now.cache)):
        yield


def plan(platform: Platform, *, source: Source = PYTHON_SOURCE) -> PlanReport:
    """`gpuplatform plan`: each wave's pools, classes, tenants and changes."""
    return plan_platforms([loaded_platform(platform, source)])[0]


def transition(
    platform: Platform, from_wave: str, to_wave: str, *, source: Source = PYTHON_SOURCE
) -> TransitionReport:
    """`gpuplatform plan --from --to`: one transition's steps, hand-offs, refusals and capacity."""
    return plan_transitions([loaded_platform(platform, source)], from_wave, to_wave)[0]


def render(platform: Platform, *, source: Source = PYTHON_SOURCE) -> RenderReport:
    """Every file `synth` would write for the platform, validated, in memory."""
    return render_platforms([loaded_platform(platform, source)])[0]


def synth(
    out: Source,
    *platforms: Platform,
    source: Source = PYTHON_SOURCE,
    allow: Sequence[str] = (),
    fork: bool | None = None,
    cache: Path | None = None,
    recover: bool = False,
) -> SynthReport:
    """`gpuplatform synth --out OUT`: render, judge and write every platform into `out/<name>/`,
    all or nothing; nothing else is written (no cache, no state key) unless asked. `recover`: a
    killed run's folders are recovered from what they hold (`synth --recover`): a library call's
    state key is its process's, so another process's record never verifies."""
    if not platforms:
        raise InputError.single("synth", "", "name at least one platform to write")
    loaded = [loaded_platform(p, source) for p in platforms]
    with _asked(fork, cache):
        return synth_command(
            loaded, Path(os.path.abspath(out)), shown=Path(out), overrides=allow, recover=recover
        )


def check(
    platform: Platform,
    *,
    source: Source = PYTHON_SOURCE,
    inventory: Sequence[Source] = (),
    snapshot: Source | None = None,
    allow: Sequence[str] = (),
    fork: bool | None = None,
    cache: Path | None = None,
) -> CheckReport:
    """`gpuplatform check`: every selector, safety rule, capacity and simulation verdict."""
    with _asked(fork, cache):
        reports = check_platforms(
            [loaded_platform(platform, source)],
            [str(i) for i in inventory],
            str(snapshot) if snapshot is not None else None,
            allow,
        )
    return reports[0]


def simulate(
    platform: Platform,
    *,
    source: Source = PYTHON_SOURCE,
    from_wave: str | None = None,
    to_wave: str | None = None,
    engines: Sequence[str] = ENGINES,
    snapshot: Source | None = None,
    write_snapshots: Source | None = None,
    fork: bool | None = None,
) -> PlatformReport:
    """`gpuplatform simulate`: replay transitions (every one the plan accepts, or one) on the
    cited model of the controllers."""
    with _asked(fork, None):
        reports = simulate_platforms(
            [loaded_platform(platform, source)],
            from_wave,
            to_wave,
            engines,
            Path(snapshot) if snapshot is not None else None,
            Path(write_snapshots) if write_snapshots is not None else None,
        )
    return reports[0]


def capacity(
    platform: Platform,
    *,
    source: Source = PYTHON_SOURCE,
    wave: str | None = None,
    all_waves: bool = False,
    snapshot: Source | None = None,
) -> CapacityReport:
    """`gpuplatform capacity`: will the wave (default: the active one, or every one) fit."""
    loaded = [loaded_platform(platform, source)]
    return capacity_platforms(loaded, wave, all_waves, str(snapshot) if snapshot is not None else None)[0]


def rehearse(
    platform: Platform,
    *,
    tree: Source,
    source: Source,
    from_wave: str | None = None,
    to_wave: str | None = None,
    engines: Sequence[str] = ENGINES,
    options: RehearsalOptions | None = None,
) -> PlatformReport:
    """`gpuplatform rehearse --tree TREE`: the rendered tree on a real control plane; `source` is
    the stack file that builds the platform, which the runbook's commands name."""
    chosen = replace(options or RehearsalOptions(), tree=Path(tree))
    loaded = [loaded_platform(platform, source)]
    return rehearse_platforms(loaded, str(source), from_wave, to_wave, engines, chosen)[0]
