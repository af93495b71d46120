"""`gpuplatform rehearse`: the waves of each platform on a real control plane (`rehearse.run`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from gpuplatform.commands.selection import load_platforms, one_transition
from gpuplatform.rehearse.run import RehearsalOptions, rehearse_platforms
from gpuplatform.simulate.run import ENGINES, PlatformReport

__all__ = ["rehearse_command"]


def rehearse_command(
    stack: str,
    overlays: Sequence[str],
    platform: str | None,
    source: str | None = None,
    target: str | None = None,
    every: bool = False,
    engine: str = "both",
    *,
    tree: str | None = None,
    assets: str | None = None,
    crds: str | None = None,
    keep: bool = False,
    late: bool = True,
    write_snapshots: str | None = None,
    progress: Callable[[str], None],
) -> list[PlatformReport]:
    """The adjacent transition `source` -> `target` (default: every one, forward then back) of the
    platforms of STACK, on `engine` (`both`: each); `progress` is told one line as each transition
    ends; `write_snapshots`: where `gpuplatform snapshot` writes the cluster once each settles."""
    one_transition(source, target, every, "rehearses")
    options = RehearsalOptions(
        Path(assets) if assets else None,
        Path(crds) if crds else None,
        Path(tree) if tree else None,
        keep,
        late=late,
        progress=progress,
        snapshots=Path(write_snapshots) if write_snapshots is not None else None,
    )
    engines = ENGINES if engine == "both" else (engine,)
    return rehearse_platforms(
        load_platforms(stack, overlays, platform), stack, source, target, engines, options
    )
