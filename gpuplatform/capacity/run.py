"""The `capacity` command's library entry: which waves, which demand, every platform of a stack."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpuplatform.capacity.demand import Demand
from gpuplatform.capacity.register import register_demand
from gpuplatform.capacity.report import WaveCapacity, plan_capacity
from gpuplatform.errors import InputError
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.plan.waves import plan_platform

__all__ = ["stack_capacity"]


def stack_capacity(
    loaded: Sequence[LoadedPlatform], wave: str | None, all_waves: bool, snapshot: str | None
) -> list[WaveCapacity]:
    """Capacity of `wave`, of every wave (`all_waves`), or of each platform's active wave."""
    if wave is not None and all_waves:
        raise InputError.single("--wave/--all", "", "give --wave W or --all, not both")
    rows = None
    if snapshot is not None:
        from gpuplatform.evidence.register import workload_rows
        from gpuplatform.evidence.snapshot import snapshot_or_pods

        rows = workload_rows(snapshot_or_pods(Path(snapshot)))
    out: list[WaveCapacity] = []
    for lp in loaded:
        platform, extra = lp.platform, tuple[Demand, ...]()
        if rows is not None:
            merged = register_demand(platform, rows)
            platform, extra = merged.platform, merged.extra
        plan = plan_platform(platform)
        names = [w.name for w in plan.waves]
        if wave is not None and wave not in names:
            message = f"platform {platform.name!r} has no wave {wave!r} (waves: {', '.join(names)})"
            raise InputError.single("--wave", "", message)
        chosen = None if all_waves else [wave or platform.active_wave]
        out += plan_capacity(plan, chosen, str(lp.source), extra)
    return out
