"""Capacity verdicts for other commands: `check` findings, `plan --from/--to` lines, runbook notes.

GP280 (error): a wave, or the drain moment of the transition into it, leaves a declared workload
with nowhere to run: refused by `check` and `synth` unless `--allow GP280` (recorded in the lock
file), as `simulate` refuses the same wave (`workload-disrupted`) and `capacity` exits 1.
GP281 (info): a wave fits with an allocator that serves demand at least 90% in use.
GP282 (warning): a wave fits only if a provisioner adds nodes that no declared limit bounds.
The codes' texts are in `capacity/codes.py`, which `explain` and `--allow` read without the model.
"""

from __future__ import annotations

from gpuplatform.capacity.codes import CAPACITY_CODES
from gpuplatform.capacity.report import WaveCapacity, plan_capacity, transition_capacity
from gpuplatform.capacity.run import stack_capacity
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


def capacity_verdicts(
    plan: Plan, waves: list[str] | None = None, file: str = "<spec>"
) -> dict[str, WaveCapacity]:
    """Wave name -> its capacity (all waves unless named)."""
    return {r.wave: r for r in plan_capacity(plan, waves, file, detail=False)}


def capacity_problems(loaded: LoadedPlatform, snapshot: str | None = None) -> list[Problem]:
    """GP280/GP281/GP282 for every wave of a loaded platform, located at the wave in the file that
    wrote it (an overlay's waves in the overlay), the hint naming the platform; `check` and
    `synth` both print these. With a `snapshot` (`check --snapshot`), on the cluster's fleet and with
    its running GPU pods, as `capacity --snapshot` and `simulate --snapshot` judge it.

    A fleet the catalog cannot model has no capacity answer (`check` reports it as GP301).
    """
    plan = plan_platform(loaded.platform)
    index = {w.name: i for i, w in enumerate(loaded.platform.waves)}
    try:
        if snapshot is None:
            verdicts = capacity_verdicts(plan, file=loaded.source)
        else:
            verdicts = {r.wave: r for r in stack_capacity([loaded], None, True, snapshot)}
    except InputError:
        return []
    command = " ".join(
        ["gpuplatform capacity", loaded.source, *(f"--overlay {o}" for o in loaded.overlays)]
        + ([f"--platform {loaded.platform.name}"] if loaded.overlays or snapshot else [])
        + ([f"--snapshot {snapshot}"] if snapshot else [])
    )
    problems = []
    for name, result in verdicts.items():
        file, loc = loaded.locate(f"spec.waves[{index[name]}]")
        if not result.fits:
            problems.append(
                Problem(
                    file,
                    loc,
                    "GP280",
                    f"wave {name!r} {result.verdict}",
                    "error",
                    f"{command} --wave {name}",
                )
            )
        elif result.depends:
            problems.append(
                Problem(
                    file,
                    loc,
                    "GP282",
                    f"wave {name!r} {result.verdict}",
                    "warning",
                    f"{command} --wave {name}",
                )
            )
        elif result.tight:
            problems.append(Problem(file, loc, "GP281", f"wave {name!r} is tight: {_use(result)}", "info"))
    return problems


def _use(result: WaveCapacity) -> str:
    labels = {"legacy": "device plugin", "dra": "DRA"}
    return "; ".join(
        f"{labels[mode]} {used}/{cap} in use at {m.moment.label}"
        for m in result.moments
        for mode, used, cap in m.tight_uses
    )


def transition_verdict(loaded: LoadedPlatform, source: str, target: str) -> dict[str, object]:
    """`plan --from/--to`'s capacity line: fits, tight or the first misfit (unknown when unmodellable)."""
    try:
        result = transition_capacity(plan_platform(loaded.platform), source, target, loaded.source)
    except InputError as exc:
        message = f"unknown ({exc.problems[0].message})"
        return {"fits": None, "dependsOnProvisioner": None, "tight": None, "verdict": message}
    return {
        "fits": result.fits,
        "dependsOnProvisioner": result.depends,
        "tight": result.tight,
        "verdict": result.verdict,
    }


def runbook_capacity_notes(plan: Plan) -> dict[str, str]:
    """Wave name -> the capacity paragraph of its runbook (only tight, misfit or provisioner-dependent
    waves; none when the fleet cannot be modelled)."""
    try:
        verdicts = capacity_verdicts(plan)
    except InputError:
        return {}
    notes = {name: runbook_capacity_note(result) for name, result in verdicts.items()}
    return {name: note for name, note in notes.items() if note}


def runbook_capacity_note(result: WaveCapacity) -> str:
    """A Markdown paragraph for the wave's runbook when it is tight, does not fit or depends on a
    provisioner; empty otherwise."""
    if not result.fits:
        return f"**Capacity: this wave does not fit.** {result.verdict}. See `gpuplatform capacity --wave {result.wave}`."
    if result.depends:
        return (
            f"**Capacity: this wave fits only if the provisioner adds nodes.** {result.verdict}. "
            "Check that it can before each step, or declare the pool's limit."
        )
    if result.tight:
        return f"**Capacity: this wave is tight** ({_use(result)}). Check for pending pods after each step."
    return ""
