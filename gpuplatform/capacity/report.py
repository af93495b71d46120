"""`gpuplatform capacity`: the verdict of every wave and of each drain moment, as text or JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuplatform.capacity.demand import Demand
from gpuplatform.capacity.fleet import Fleet, build_fleet
from gpuplatform.capacity.moments import (
    Moment,
    moment_bridges,
    moment_classes,
    transition_moments,
    wave_moments,
)
from gpuplatform.capacity.placement import Outcome, PlacementCache, place
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.versions import parse_release

__all__ = [
    "TIGHT_USE",
    "MomentCapacity",
    "WaveCapacity",
    "capacity_text",
    "plan_capacity",
    "transition_capacity",
    "wave_capacity",
]

#: A moment is tight when an allocator that serves demand has this share of its capacity in use.
TIGHT_USE = 0.9


@dataclass
class MomentCapacity:
    """One moment's placement."""

    moment: Moment
    outcome: Outcome
    demands: tuple[Demand, ...] = ()
    """What was placed: the moment's demands and any extra (snapshot) demand."""

    @property
    def fits(self) -> bool:
        return not self.outcome.failures

    def use(self, mode: str) -> tuple[int, int]:
        """(in use, capacity) of the pools in `mode`."""
        pools = [p for p in self.outcome.pools if p.mode == mode]
        capacity = sum(p.capacity for p in pools)
        return capacity - sum(p.free for p in pools), capacity

    @property
    def demand(self) -> dict[str, int]:
        """Units asked for: device-plugin GPUs (or MIG resources) and DRA devices."""
        legacy = sum(d.total for d in self.demands if not d.on_dra)
        return {"devicePlugin": legacy, "dra": sum(d.total for d in self.demands if d.on_dra)}

    @property
    def tight(self) -> bool:
        return self.fits and any(
            cap and used >= TIGHT_USE * cap for used, cap in (self.use("legacy"), self.use("dra"))
        )

    def as_dict(self) -> dict[str, Any]:
        first = self.outcome.failures[0] if self.outcome.failures else None
        return {
            "moment": self.moment.label,
            "drained": list(self.moment.drained),
            "fits": self.fits,
            "tight": self.tight,
            "firstMisfit": None
            if first is None
            else {
                "workload": first.demand.name,
                "loc": first.demand.loc,
                "placedPods": first.placed,
                "why": first.reason,
            },
            "misfits": len(self.outcome.failures),
            "demand": self.demand,
            "bridgedPods": self.outcome.bridged,
            "pools": [
                {"pool": p.name, "mode": p.mode, "nodes": p.nodes, "capacity": p.capacity, "free": p.free}
                for p in self.outcome.pools
            ],
            "tiers": dict(self.outcome.tiers),
        }


@dataclass
class WaveCapacity:
    """A wave's verdict: its own moment and the drain moment of the transition into it."""

    platform: str
    wave: str
    moments: list[MomentCapacity] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return all(m.fits for m in self.moments)

    @property
    def tight(self) -> bool:
        return self.fits and any(m.tight for m in self.moments)

    @property
    def peak(self) -> int:
        """Largest total demand (device-plugin GPUs + DRA devices) of any moment of the transition."""
        return max((sum(m.demand.values()) for m in self.moments), default=0)

    @property
    def verdict(self) -> str:
        """`fits`, `tight` or `does not fit`, with the first misfit."""
        for m in self.moments:
            if not m.fits:
                first = m.outcome.failures[0]
                return f"does not fit at {m.moment.label}: {first.demand.name}: {first.reason}"
        return "tight" if self.tight else "fits"

    def as_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "wave": self.wave,
            "fits": self.fits,
            "tight": self.tight,
            "verdict": self.verdict,
            "peakDemand": self.peak,
            "moments": [m.as_dict() for m in self.moments],
        }


def wave_capacity(
    plan: Plan,
    state: WaveState,
    fleet: Fleet,
    cache: PlacementCache,
    extra: tuple[Demand, ...] = (),
    source: WaveState | None = None,
) -> WaveCapacity:
    """Place the workloads of every moment of `state` (and `extra` demand that runs in every moment);
    with `source`, of the transition from it instead of from the previous wave."""
    out = WaveCapacity(plan.platform.name, state.name)
    moments = wave_moments(plan, state) if source is None else transition_moments(plan, source, state)
    for moment in moments:
        classes = moment_classes(plan, moment.runs)
        bridges = moment_bridges(plan, moment.runs, classes)
        tiers = {t: plan.platform.class_name(t) for t in moment.runs.tiers}
        demands = [*moment.demands, *extra]
        outcome = place(fleet, moment.modes, classes, bridges, demands, cache, tiers)
        out.moments.append(MomentCapacity(moment, outcome, tuple(demands)))
    return out


def plan_capacity(
    plan: Plan, waves: list[str] | None = None, file: str = "<spec>", extra: tuple[Demand, ...] = ()
) -> list[WaveCapacity]:
    """The capacity of the named waves (default: all) of one platform."""
    fleet = build_fleet(plan.platform, file)
    cache = PlacementCache(parse_release(plan.platform.kubernetes.version).minor)
    return [
        wave_capacity(plan, s, fleet, cache, extra) for s in plan.waves if waves is None or s.name in waves
    ]


def transition_capacity(plan: Plan, source: str, target: str, file: str = "<spec>") -> WaveCapacity:
    """The capacity of `plan --from source --to target`: the drain of the pools it moves, then `target`."""
    fleet = build_fleet(plan.platform, file)
    cache = PlacementCache(parse_release(plan.platform.kubernetes.version).minor)
    return wave_capacity(plan, plan.wave(target), fleet, cache, (), plan.wave(source))


def _moment_lines(m: MomentCapacity) -> list[str]:
    legacy, dra = m.use("legacy"), m.use("dra")
    demand = m.demand
    lines = [
        f"    {m.moment.label}: {'fits' if m.fits else 'DOES NOT FIT'}"
        f"{' (tight)' if m.tight else ''}; demand {demand['devicePlugin']} device-plugin GPU(s), "
        f"{demand['dra']} DRA device(s); device plugin {legacy[0]}/{legacy[1]} used, DRA {dra[0]}/{dra[1]} used"
        + (f"; {m.outcome.bridged} pod(s) through the bridge" if m.outcome.bridged else "")
    ]
    for f in m.outcome.failures:
        lines.append(f"      does not fit: {f.demand.name} ({f.demand.loc}): {f.reason}")
    for p in m.outcome.pools:
        lines.append(f"      pool {p.name} [{p.mode}] {p.nodes} node(s): {p.free}/{p.capacity} free")
    for tier, free in sorted(m.outcome.tiers.items()):
        lines.append(f"      tier {tier}: {free} free matching device(s)")
    return lines


def capacity_text(results: list[WaveCapacity]) -> str:
    """The per-wave report for a terminal."""
    lines: list[str] = []
    for platform in dict.fromkeys(r.platform for r in results):
        lines.append(f"platform {platform}")
        for r in (x for x in results if x.platform == platform):
            lines.append(f"  wave {r.wave}: {r.verdict} (peak demand {r.peak})")
            for m in r.moments:
                lines += _moment_lines(m)
    return "\n".join(lines)
