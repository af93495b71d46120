"""The `capacity` command's library entry: which waves, which demand, which fleet, every platform."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpuplatform.capacity.demand import Demand
from gpuplatform.capacity.fleet import Fleet
from gpuplatform.capacity.held import PodClaims, held_devices, read_pods
from gpuplatform.capacity.register import register_demand
from gpuplatform.capacity.report import WaveCapacity, plan_capacity
from gpuplatform.capacity.selectors import SelectorCache
from gpuplatform.capacity.snapshot import RealNode, plan_reads, read_nodes, snapshot_fleet, snapshot_slices
from gpuplatform.errors import InputError
from gpuplatform.evidence.register import WorkloadRow, workload_rows
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.snapshot.read import Snapshot, snapshot_or_pods
from gpuplatform.versions import parse_release

__all__ = ["stack_capacity"]


@dataclass(frozen=True)
class _Read:
    """A snapshot, read once for every platform of the stack (what capacity reads of it is checked
    before the register reads it)."""

    snapshot: Snapshot
    slices: list[dict[str, Any]]
    nodes: list[RealNode]
    pods: dict[tuple[str, str], PodClaims]
    rows: list[WorkloadRow]

    @classmethod
    def of(cls, source: str) -> _Read:
        """A snapshot folder, or a lone `kubectl get pods -o json` file."""
        path = Path(source)
        found = snapshot_or_pods(path)
        slices = snapshot_slices(found)
        nodes, pods = read_nodes(found, slices), read_pods(found, "" if path.is_dir() else source)
        return cls(found, slices, nodes, pods, workload_rows(found))


def stack_capacity(
    loaded: Sequence[LoadedPlatform], wave: str | None, all_waves: bool, snapshot: str | None
) -> list[WaveCapacity]:
    """Capacity of `wave`, of every wave (`all_waves`), or of each platform's active wave; with a
    snapshot, on the cluster's nodes, with its workloads and the devices its claims hold."""
    if wave is not None and all_waves:
        raise InputError.single("--wave/--all", "", "give --wave W or --all, not both")
    read = _Read.of(snapshot) if snapshot is not None else None
    out: list[WaveCapacity] = []
    for lp in loaded:
        platform, extra, fleet = lp.platform, tuple[Demand, ...](), None
        if read is not None:
            platform, extra, fleet = _from_snapshot(lp, read)
        plan = plan_platform(platform)
        names = [w.name for w in plan.waves]
        if wave is not None and wave not in names:
            message = f"platform {platform.name!r} has no wave {wave!r} (waves: {', '.join(names)})"
            raise InputError.single("--wave", "", message)
        chosen = None if all_waves else [wave or platform.active_wave]
        results = plan_capacity(plan, chosen, str(lp.source), extra, fleet)
        out += [replace(r, snapshot=read is not None) for r in results]
    return out


def _from_snapshot(lp: LoadedPlatform, read: _Read) -> tuple[Platform, tuple[Demand, ...], Fleet]:
    """The spec with the snapshot's demand merged in, the extra demand, and the snapshot's fleet."""
    held = held_devices(lp.platform, read.snapshot, read.slices, read.pods)
    merged = register_demand(lp.platform, read.rows, held.templates)
    plan = plan_platform(merged.platform)
    selectors = SelectorCache(parse_release(merged.platform.kubernetes.version).minor)
    reads = plan_reads(plan, merged.extra, selectors)
    given = plan.given_all(plan.active)
    fleet = snapshot_fleet(merged.platform, read.snapshot, read.nodes, held, reads, str(lp.source), given)
    if merged.skipped:
        note = f"not counted (they request only other nvidia.com resources): {', '.join(merged.skipped)}"
        fleet = replace(fleet, notes=(*fleet.notes, note))
    return merged.platform, merged.extra, fleet
