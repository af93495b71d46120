"""Transitions between two waves, forward or back: what changes, its steps, and whether it is safe.

Engines apply layers in one direction (operators, nodes, classes, policy, tenants, gates), so a
single transition that both moves a node between allocators and adds or removes the claim-bearing
objects on it relabels the node before the claims are created or released; such a transition
needs a drain wave between its two halves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpuplatform.errors import InputError, Problem
from gpuplatform.gates import gates_for_wave
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.plan.report import wave_changes
from gpuplatform.plan.steps import Step, transition_steps
from gpuplatform.plan.waves import Plan, WaveState, plan_platform

__all__ = [
    "Step",
    "Transition",
    "claim_changes",
    "platform_transitions",
    "pool_moves",
    "transition",
]


def pool_moves(a: WaveState, b: WaveState) -> list[str]:
    """Pools whose allocator differs between the two waves."""
    return [p for p in a.pool_modes if a.pool_modes[p] != b.pool_modes[p]]


def claim_changes(a: WaveState, b: WaveState) -> list[str]:
    """Claim-bearing objects present in one wave and not the other (tenants, bridges, workloads, NIM)."""
    out: list[str] = []
    for what, left, right in (
        ("tenant", a.tenants, b.tenants),
        ("bridge", a.bridges, b.bridges),
        ("NIM service", a.nim_services, b.nim_services),
    ):
        out += [f"{what} {n}" for n in sorted(set(left) ^ set(right))]
    out += [f"workload #{i}" for i in sorted(set(a.workloads) ^ set(b.workloads))]
    if a.validation != b.validation:
        out.append("validation workload")
    return out


@dataclass(frozen=True)
class Transition:
    """Everything a reviewer reads before changing `activeWave` from one wave to another."""

    platform: str
    source: str
    target: str
    direction: str
    changes: tuple[str, ...]
    steps: tuple[Step, ...]
    gates: tuple[str, ...]
    refusals: tuple[str, ...]
    handoffs: tuple[str, ...] = ()
    """Hand-off files that change (for the owners of provisioners, workloads, NIM services)."""

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (`plan --format json --from A --to B`)."""
        return {
            "platform": self.platform,
            "from": self.source,
            "to": self.target,
            "direction": self.direction,
            "changes": list(self.changes),
            "steps": [
                {
                    "kind": s.kind,
                    "action": s.action,
                    "layer": s.layer,
                    "what": s.what,
                    "pools": list(s.pools),
                    "after": s.after,
                }
                for s in self.steps
            ],
            "applyOrder": [{"layer": s.layer, "what": s.what} for s in self.steps if s.kind == "sync"],
            "gates": list(self.gates),
            "handoffs": list(self.handoffs),
            "refused": list(self.refusals),
        }

    def text(self) -> str:
        """The transition as a terminal page."""
        lines = [f"platform {self.platform}: {self.source} -> {self.target} ({self.direction})", "changes:"]
        lines += [f"  {c}" for c in self.changes] or ["  (none)"]
        lines.append("steps (manual steps are yours; sync steps are the engine's, in this order):")
        lines += [
            f"  {n}. {'[' + s.kind + ']':8} {s.layer or s.action}: {s.what}"
            + (f" (once {s.after} has applied; do not wait for the rest of the sync)" if s.after else "")
            for n, s in enumerate(self.steps, 1)
        ] or ["  (nothing to do)"]
        if self.handoffs:
            lines.append("hand-offs (never synced: their owners apply them):")
            lines += [f"  {h}" for h in self.handoffs]
        lines.append(f"gates of {self.target} (pre-transition gates block the layers they name):")
        lines += [f"  {g}" for g in self.gates] or ["  (none)"]
        if self.refusals:
            lines.append("REFUSED:")
            lines += [f"  {r}" for r in self.refusals]
        return "\n".join(lines)


def _refusals(plan: Plan, a: WaveState, b: WaveState) -> list[str]:
    """Refuse moving nodes and claim-bearing objects in one pass, and skipping a drain wave."""
    lo, hi = sorted((a.index, b.index))
    refusals = []
    for i in range(lo, hi):
        left, right = plan.waves[i], plan.waves[i + 1]
        moves, claims = pool_moves(left, right), claim_changes(left, right)
        if moves and claims:
            refusals.append(
                f"{left.name} -> {right.name} moves pool(s) {', '.join(moves)} and changes "
                f"{', '.join(claims)}: split them into two waves (the pools' migratesIn apart from the "
                "claim changes); a drain wave alone does not split them"
            )
    if not refusals and hi - lo > 1 and pool_moves(a, b) and claim_changes(a, b):
        refusals.append(
            f"one pass would move pool(s) {', '.join(pool_moves(a, b))} and change "
            f"{', '.join(claim_changes(a, b))}: step through the waves in between one at a time"
        )
    drains = [plan.waves[i].name for i in range(lo + 1, hi) if plan.waves[i].wave.stage == "drain"]
    if drains:
        refusals.append(f"the transition skips drain wave(s) {', '.join(drains)}: stop at each of them")
    return refusals


def transition(plan: Plan, source: str, target: str) -> Transition:
    """The transition from wave `source` to wave `target` of `plan` (KeyError for an unknown wave)."""
    a, b = plan.wave(source), plan.wave(target)
    direction = "forward" if b.index > a.index else "rollback" if b.index < a.index else "none"
    gates = [
        f"{g.id} ({'before ' + ', '.join(g.protects) if g.protects else 'after the wave is applied'}): {g.title}"
        for g in gates_for_wave(plan, b)
    ]
    return Transition(
        platform=plan.platform.name,
        source=source,
        target=target,
        direction=direction,
        changes=tuple(wave_changes(plan, a, b)),
        steps=transition_steps(plan, a, b),
        gates=tuple(gates) if direction != "none" else (),
        refusals=tuple(_refusals(plan, a, b)),
    )


def platform_transitions(loaded: Sequence[LoadedPlatform], source: str, target: str) -> list[Transition]:
    """The transition `source` -> `target` of every loaded platform; InputError for an unknown wave."""
    problems, found = [], []
    for lp in loaded:
        plan = plan_platform(lp.platform)
        names = [w.name for w in plan.waves]
        missing = [(opt, w) for opt, w in (("--from", source), ("--to", target)) if w not in names]
        problems += [Problem(opt, "", "", plan.no_wave(wave)) for opt, wave in missing]
        if not missing:
            found.append(transition(plan, source, target))
    if problems:
        raise InputError(problems)
    return found
