"""`gpuplatform capacity`: the verdict of every wave and of each drain moment, as text or JSON.

A wave fits, does not fit, or depends on a provisioner: it fits only if a pool whose provisioner
declares no limit the tool can evaluate adds nodes, which no spec can promise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuplatform.capacity.answers import PlacementCache
from gpuplatform.capacity.codes import TIGHT_USE
from gpuplatform.capacity.demand import Demand
from gpuplatform.capacity.fleet import Fleet, build_fleet
from gpuplatform.capacity.moments import (
    Moment,
    moment_bridges,
    moment_classes,
    transition_moments,
    wave_moments,
)
from gpuplatform.capacity.outcome import Outcome, PoolUse
from gpuplatform.capacity.placement import place
from gpuplatform.kueue.capacity import kueue_shortfalls
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


def _depends(pool: PoolUse) -> str:
    return (
        f"pool {pool.name} needs {pool.added} node(s) added by its provisioner ({pool.caveat})"
        if pool.added and pool.caveat
        else ""
    )


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

    @property
    def depends(self) -> list[str]:
        """Why the moment fits only if a provisioner adds nodes no declared limit bounds."""
        return [text for text in map(_depends, self.outcome.pools) if text]

    def use(self, mode: str) -> tuple[int, int]:
        """(in use, capacity) of the pools in `mode`, nodes added by provisioners included."""
        pools = [p for p in self.outcome.pools if p.mode == mode]
        capacity = sum(p.capacity for p in pools)
        return capacity - sum(p.free for p in pools), capacity

    def _limit_use(self, mode: str) -> tuple[int, int]:
        """(in use, capacity at the limits) of the pools in `mode` whose provisioner has one."""
        pools = [p for p in self.outcome.pools if p.mode == mode and p.ceiling is not None]
        return sum(p.capacity - p.free for p in pools), sum(p.ceiling or 0 for p in pools)

    @property
    def tight_uses(self) -> list[tuple[str, int, int]]:
        """(mode, in use, capacity) of the allocators at least `TIGHT_USE` in use."""
        out = []
        for mode in ("legacy", "dra"):
            used, capacity = self._limit_use(mode)
            if capacity and used >= TIGHT_USE * capacity:
                out.append((mode, used, capacity))
        return out

    @property
    def demand(self) -> dict[str, int]:
        """Units asked for: device-plugin GPUs (or MIG resources) and DRA devices."""
        legacy = sum(d.total for d in self.demands if not d.on_dra)
        return {"devicePlugin": legacy, "dra": sum(d.total for d in self.demands if d.on_dra)}

    @property
    def tight(self) -> bool:
        return self.fits and not self.depends and bool(self.tight_uses)

    def as_dict(self) -> dict[str, Any]:
        first = self.outcome.failures[0] if self.outcome.failures else None
        return {
            "moment": self.moment.label,
            "drained": list(self.moment.drained),
            "fits": self.fits,
            "tight": self.tight,
            "dependsOn": self.depends,
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
                {
                    "pool": p.name,
                    "mode": p.mode,
                    "source": p.source,
                    "nodes": p.nodes,
                    "addedNodes": p.added,
                    "maxNodes": p.limit,
                    "capacity": p.capacity,
                    "free": p.free,
                }
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
    notes: tuple[str, ...] = ()
    """What the fleet's numbers rest on (from the snapshot)."""
    snapshot: bool = False
    """Whether the demand includes a snapshot's running pods (else only the declared workloads)."""

    @property
    def counted(self) -> str:
        """What the demand counts: without a snapshot, the tenants' running GPU pods are not in it."""
        if self.snapshot:
            return "the declared workloads and the snapshot's running GPU pods"
        return (
            "only the declared workloads, not the tenants' running GPU pods (give --snapshot to count them)"
        )

    kueue: tuple[str, ...] = ()
    """Queued GPUs the wave's Kueue quotas leave suspended (`kueue/capacity.py`)."""
    unused: tuple[str, ...] = ()
    """The wave's claim templates no declared workload uses: a note, not demand."""

    @property
    def fits(self) -> bool:
        return not self.kueue and all(m.fits for m in self.moments)

    @property
    def depends(self) -> bool:
        """Fits only if a provisioner without an evaluable limit adds nodes."""
        return self.fits and any(m.depends for m in self.moments)

    @property
    def tight(self) -> bool:
        return self.fits and any(m.tight for m in self.moments)

    @property
    def peak(self) -> int:
        """Largest total demand (device-plugin GPUs + DRA devices) of any moment of the transition."""
        return max((sum(m.demand.values()) for m in self.moments), default=0)

    @property
    def verdict(self) -> str:
        """`fits`, `tight`, `depends on ...` or `does not fit ...`, with the first misfit."""
        if self.kueue:
            return f"does not fit: {self.kueue[0]}"
        for m in self.moments:
            if not m.fits:
                first = m.outcome.failures[0]
                return f"does not fit at {m.moment.label}: {first.demand.name}: {first.reason}"
        for m in self.moments:
            if m.depends:
                return f"depends on the provisioner at {m.moment.label}: {'; '.join(m.depends)}"
        return "tight" if self.tight else "fits"

    def as_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "wave": self.wave,
            "fits": self.fits,
            "dependsOnProvisioner": self.depends,
            "tight": self.tight,
            "verdict": self.verdict,
            "peakDemand": self.peak,
            "counted": self.counted,
            "notes": [*self.notes, *self.unused],
            "kueue": list(self.kueue),
            "moments": [m.as_dict() for m in self.moments],
        }


def wave_capacity(
    plan: Plan,
    state: WaveState,
    fleet: Fleet,
    cache: PlacementCache,
    extra: tuple[Demand, ...] = (),
    source: WaveState | None = None,
    detail: bool = True,
) -> WaveCapacity:
    """Place the workloads of every moment of `state` (and `extra` demand that runs in every moment);
    with `source`, of the transition from it instead of from the previous wave. `detail` counts
    the free devices of each tier and says why every misfit does not fit (the report's; a verdict
    needs only the first reason)."""
    out = WaveCapacity(
        plan.platform.name,
        state.name,
        notes=fleet.notes,
        kueue=kueue_shortfalls(plan, state),
        unused=_unused_templates(plan, state),
    )
    demands_of = cache.demands(plan)
    if source is None:
        moments = wave_moments(plan, state, demands_of)
    else:
        moments = transition_moments(plan, source, state, demands_of)
    for moment in moments:
        classes = moment_classes(plan, moment.runs)
        bridges = moment_bridges(plan, moment.runs, classes)
        tiers = {t: plan.platform.class_name(t) for t in moment.runs.tiers} if detail else {}
        demands = (*moment.demands, *extra)
        key = repr(
            [detail, *(sorted(x.items()) for x in (moment.modes, moment.given, classes, bridges, tiers))]
        )
        key += "".join(d.key for d in demands)
        outcome = cache.moments.get(key)
        if outcome is None:
            outcome = place(
                fleet, moment.modes, classes, bridges, demands, cache, tiers, detail, moment.given
            )
            cache.moments[key] = outcome
        out.moments.append(MomentCapacity(moment, outcome, demands))
    return out


def _unused_templates(plan: Plan, state: WaveState) -> tuple[str, ...]:
    """The claim templates of the wave's tenants that no declared workload uses (`claims: 0`): a note,
    not demand (a tenant may use them later)."""
    unused = [
        f"{t.ns}/{c.name}"
        for t in plan.platform.tenants
        if t.name in state.tenants
        for c in t.claim_templates
        if not c.claims
    ]
    if not unused:
        return ()
    return (
        f"claim template(s) no declared workload uses, not counted (a tenant may use them later; "
        f"`claims: N` counts N claims): {', '.join(unused)}",
    )


def _cache(plan: Plan) -> PlacementCache:
    return PlacementCache(parse_release(plan.platform.kubernetes.version).minor)


def plan_capacity(
    plan: Plan,
    waves: list[str] | None = None,
    file: str = "<spec>",
    extra: tuple[Demand, ...] = (),
    fleet: Fleet | None = None,
    detail: bool = True,
) -> list[WaveCapacity]:
    """The capacity of the named waves (default: all) of one platform, on `fleet` (default: modelled)."""
    fleet = fleet or build_fleet(plan.platform, file)
    cache = _cache(plan)
    return [
        wave_capacity(plan, s, fleet, cache, extra, detail=detail)
        for s in plan.waves
        if waves is None or s.name in waves
    ]


def transition_capacity(plan: Plan, source: str, target: str, file: str = "<spec>") -> WaveCapacity:
    """The capacity of `plan --from source --to target`: the drain of the pools it moves, then `target`."""
    fleet = build_fleet(plan.platform, file)
    return wave_capacity(plan, plan.wave(target), fleet, _cache(plan), (), plan.wave(source), False)


def _pool_line(p: PoolUse) -> str:
    line = f"      pool {p.name} [{p.mode}] {p.nodes} node(s): {p.free}/{p.capacity} free"
    if p.added:
        limit = "no limit" if p.limit is None else f"at most {p.limit}"
        line += f"; {p.added} added by its provisioner ({limit})"
    if p.source != "model":
        line += f"; from {p.source}"
    return line


def _moment_lines(m: MomentCapacity) -> list[str]:
    legacy, dra = m.use("legacy"), m.use("dra")
    demand = m.demand
    state = "fits" if m.fits else "DOES NOT FIT"
    if m.fits and m.depends:
        state = "fits only if a provisioner adds nodes"
    lines = [
        f"    {m.moment.label}: {state}"
        f"{' (tight)' if m.tight else ''}; demand {demand['devicePlugin']} device-plugin GPU(s), "
        f"{demand['dra']} DRA device(s); device plugin {legacy[0]}/{legacy[1]} used, DRA {dra[0]}/{dra[1]} used"
        + (f"; {m.outcome.bridged} pod(s) through the bridge" if m.outcome.bridged else "")
    ]
    for f in m.outcome.failures:
        lines.append(f"      does not fit: {f.demand.name} ({f.demand.loc}): {f.reason}")
    lines += [f"      depends: {text}" for text in m.depends]
    lines += [_pool_line(p) for p in m.outcome.pools]
    for tier, free in sorted(m.outcome.tiers.items()):
        lines.append(f"      tier {tier}: {free} free matching device(s)")
    return lines


def capacity_text(results: list[WaveCapacity]) -> str:
    """The per-wave report for a terminal."""
    lines: list[str] = []
    for platform in dict.fromkeys(r.platform for r in results):
        found = [x for x in results if x.platform == platform]
        lines.append(f"platform {platform}")
        lines += [f"  note: {note}" for note in found[0].notes]
        for r in found:
            lines.append(f"  wave {r.wave}: {r.verdict} (peak demand {r.peak}); counted {r.counted}")
            lines += [f"    note: {note}" for note in r.unused]
            lines += [f"    {line}" for line in r.kueue]
            for m in r.moments:
                lines += _moment_lines(m)
    return "\n".join(lines)
