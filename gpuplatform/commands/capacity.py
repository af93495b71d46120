"""`gpuplatform capacity`: will each wave fit, per platform."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from gpuplatform.capacity.report import WaveCapacity, capacity_text
from gpuplatform.capacity.run import stack_capacity
from gpuplatform.commands.selection import load_platforms
from gpuplatform.load.stacks import LoadedPlatform

__all__ = ["CapacityReport", "capacity_command", "capacity_platforms"]


@dataclass(frozen=True)
class CapacityReport:
    """One platform's capacity verdict of each wave it was asked for."""

    platform: str
    waves: list[WaveCapacity]

    @property
    def exit_code(self) -> int:
        """1 when a wave does not fit, or fits only if a provisioner adds nodes."""
        return 0 if all(w.fits and not w.depends for w in self.waves) else 1

    def as_dict(self) -> dict[str, Any]:
        return {"platform": self.platform, "waves": [w.as_dict() for w in self.waves]}

    def text(self) -> str:
        return capacity_text(self.waves)


def capacity_platforms(
    loaded: Sequence[LoadedPlatform],
    wave: str | None = None,
    all_waves: bool = False,
    snapshot: str | None = None,
) -> list[CapacityReport]:
    """Each platform's capacity of `wave`, of every wave, or of its active wave; with a snapshot
    folder, on the cluster's nodes with its workloads."""
    results = stack_capacity(loaded, wave, all_waves, snapshot)
    return [CapacityReport(name, list(waves)) for name, waves in groupby(results, key=lambda w: w.platform)]


def capacity_command(
    stack: str,
    overlays: Sequence[str],
    platform: str | None,
    snapshot: str | None = None,
    wave: str | None = None,
    all_waves: bool = False,
) -> list[CapacityReport]:
    """`gpuplatform capacity` on the platforms of STACK (one of them with a snapshot: a cluster
    runs one platform)."""
    loaded = load_platforms(stack, overlays, platform, one=snapshot is not None)
    return capacity_platforms(loaded, wave, all_waves, snapshot)
