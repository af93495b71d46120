"""Capacity verdicts for other commands: `check` findings, `plan --from/--to` lines, runbook notes.

GP280 (warning): a wave, or the drain moment of the transition into it, does not fit.
GP281 (info): a wave fits with an allocator that serves demand at least 90% in use.
Warnings, not errors: the placement is a packing heuristic, and `synth` must not refuse a spec
for it; `gpuplatform capacity` exits 1 on the same verdicts.
"""

from __future__ import annotations

from gpuplatform.capacity.report import TIGHT_USE, WaveCapacity, plan_capacity, transition_capacity
from gpuplatform.errors import InputError, Problem
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.plan.waves import Plan, plan_platform

__all__ = [
    "CAPACITY_CODES",
    "capacity_problems",
    "capacity_verdicts",
    "runbook_capacity_note",
    "runbook_capacity_notes",
    "transition_verdict",
]

#: code -> (severity, title, explanation), for `gpuplatform explain`.
CAPACITY_CODES: dict[str, tuple[str, str, str]] = {
    "GP280": (
        "warning",
        "a wave whose workloads do not fit",
        "Placing the wave's workloads on the modelled fleet failed: unmigrated ones on device-plugin "
        "GPUs, migrated ones through their claims (with Kubernetes' allocator), in the wave and while "
        "the pools the transition moves are drained. Run `gpuplatform capacity STACK --wave W` for the "
        "first workload that does not fit and why; add nodes, move fewer pools at once, or move workloads later.",
    ),
    "GP281": (
        "info",
        "a tight wave",
        f"The wave fits, but an allocator that serves demand has at least {TIGHT_USE:.0%} of its capacity "
        "in use; a node failure or a surge will leave pods pending.",
    ),
}


def capacity_verdicts(
    plan: Plan, waves: list[str] | None = None, file: str = "<spec>"
) -> dict[str, WaveCapacity]:
    """Wave name -> its capacity (all waves unless named)."""
    return {r.wave: r for r in plan_capacity(plan, waves, file)}


def capacity_problems(loaded: LoadedPlatform) -> list[Problem]:
    """GP280/GP281 for every wave of a loaded platform, located at the wave.

    A fleet the catalog cannot model has no capacity answer (`check` reports it as GP301).
    """
    plan = plan_platform(loaded.platform)
    index = {w.name: i for i, w in enumerate(loaded.platform.waves)}
    try:
        verdicts = capacity_verdicts(plan, file=loaded.source)
    except InputError:
        return []
    problems = []
    for name, result in verdicts.items():
        loc = f"spec.waves[{index[name]}]"
        if not result.fits:
            problems.append(
                Problem(
                    loaded.source,
                    loc,
                    "GP280",
                    f"wave {name!r} {result.verdict}",
                    "warning",
                    hint=f"gpuplatform capacity {loaded.source} --wave {name}",
                )
            )
        elif result.tight:
            problems.append(
                Problem(loaded.source, loc, "GP281", f"wave {name!r} is tight: {_use(result)}", "info")
            )
    return problems


def _use(result: WaveCapacity) -> str:
    parts = []
    for m in result.moments:
        for mode, label in (("legacy", "device plugin"), ("dra", "DRA")):
            used, cap = m.use(mode)
            if cap and used >= TIGHT_USE * cap:
                parts.append(f"{label} {used}/{cap} in use at {m.moment.label}")
    return "; ".join(parts)


def transition_verdict(loaded: LoadedPlatform, source: str, target: str) -> dict[str, object]:
    """`plan --from/--to`'s capacity line: fits, tight or the first misfit (unknown when unmodellable)."""
    try:
        result = transition_capacity(plan_platform(loaded.platform), source, target, loaded.source)
    except InputError as exc:
        return {"fits": None, "tight": None, "verdict": f"unknown ({exc.problems[0].message})"}
    return {"fits": result.fits, "tight": result.tight, "verdict": result.verdict}


def runbook_capacity_notes(plan: Plan) -> dict[str, str]:
    """Wave name -> the capacity paragraph of its runbook (only tight or misfit waves; none when the
    fleet cannot be modelled)."""
    try:
        verdicts = capacity_verdicts(plan)
    except InputError:
        return {}
    notes = {name: runbook_capacity_note(result) for name, result in verdicts.items()}
    return {name: note for name, note in notes.items() if note}


def runbook_capacity_note(result: WaveCapacity) -> str:
    """A Markdown paragraph for the wave's runbook when it is tight or does not fit; empty otherwise."""
    if not result.fits:
        return f"**Capacity: this wave does not fit.** {result.verdict}. See `gpuplatform capacity --wave {result.wave}`."
    if result.tight:
        return f"**Capacity: this wave is tight** ({_use(result)}). Check for pending pods after each step."
    return ""
