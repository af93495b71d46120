"""`gpuplatform simulate`: replay the transitions of each platform on a model of the cluster's
controllers (`simulate.run`), for the engines asked."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpuplatform.commands.selection import load_platforms, one_transition
from gpuplatform.simulate.run import ENGINES, PlatformReport, simulate_platforms

__all__ = ["simulate_command"]


def simulate_command(
    stack: str,
    overlays: Sequence[str],
    platform: str | None,
    source: str | None = None,
    target: str | None = None,
    every: bool = False,
    engine: str = "both",
    snapshot: str | None = None,
    write_snapshots: str | None = None,
) -> list[PlatformReport]:
    """The transition `source` -> `target` (default: every one plan accepts) of the platforms of
    STACK, on `engine` (`both`: each), with the GPU pods of `snapshot` as the workload mix; the
    model's cluster at every checkpoint written under `write_snapshots`."""
    one_transition(source, target, every, "replays")
    return simulate_platforms(
        load_platforms(stack, overlays, platform),
        source,
        target,
        ENGINES if engine == "both" else (engine,),
        Path(snapshot) if snapshot is not None else None,
        Path(write_snapshots) if write_snapshots is not None else None,
    )
