"""Runbooks (`runbooks/<NN>-<wave>.md`): how an operator takes the cluster into a wave, and back.

A wave's runbook is the transition from the wave before it, and its rollback the same transition
read backwards: both come from `plan.transitions.transition` (what changes, the layers in apply
order, the gates) and `render.runbook_steps.transition_steps` (the operator's commands around the
sync), so `plan --from/--to` and the runbook tell the same story. Real names throughout; nothing
here is applied by an engine.
"""

from __future__ import annotations

from gpuplatform.capacity.verdicts import runbook_capacity_notes
from gpuplatform.gates import gates_for_wave
from gpuplatform.gates.rerun import rerun_steps
from gpuplatform.plan.report import wave_changes
from gpuplatform.plan.transitions import APPLY_ORDER, Transition, transition
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.gate_jobs import gate_job_name
from gpuplatform.render.runbook_actions import Action, numbered
from gpuplatform.render.runbook_steps import transition_steps

__all__ = ["render_runbooks", "runbook"]

_STACK = "<stack>"


def _change(line: str) -> str:
    """A plan change line (`+ tier x`, `- tenant y`, `pool p: legacy -> dra`) as Markdown text."""
    sign, _, rest = line.partition(" ")
    return {"+": f"added: {rest}", "-": f"removed: {rest}"}.get(sign, line)


def _gates(plan: Plan, state: WaveState) -> list[str]:
    """The target wave's gates, their Jobs, and how to look at and re-run a failed one."""
    gates = gates_for_wave(plan, state)
    if not gates:
        return ["- No gate."]
    lines = []
    for g in gates:
        when = f"before {', '.join(g.protects)}" if g.protects else "after the wave is applied"
        lines.append(f"- `{g.id}` ({when}; Job `{gate_job_name(plan, state, g)}`): {g.title}.")
    lines += ["", "If a gate does not hold:", "", *(f"- {step}" for step in rerun_steps(plan, state))]
    return lines


def _sync(plan: Plan, t: Transition, target: WaveState) -> list[Action]:
    p, d = plan.platform, plan.platform.delivery
    order = "; ".join(f"{s.layer} ({s.what})" for s in t.steps) or "nothing but the gates"
    follow = []
    if "argocd" in d.engines:
        follow.append(
            f"kubectl -n {d.argocd_namespace} get application {p.name} "
            "-o jsonpath='{.status.sync.status} {.status.health.status} {.status.operationState.phase}{\"\\n\"}'"
        )
    if "flux" in d.engines:
        follow += [
            f"flux reconcile source git {p.name} -n {d.flux_namespace}",
            f"kubectl -n {d.flux_namespace} wait kustomization/{p.name}-gates-post --for=condition=Ready "
            f"--timeout={d.timeout_minutes * (len(APPLY_ORDER) + 2)}m",
        ]
    return [
        Action(
            f"Set `activeWave: {target.name}` in the spec, run `gpuplatform synth`, open the pull request (reviewers read "
            f"`gpuplatform diff {_STACK} --waves {t.source} {t.target}`) and merge."
        ),
        Action(f"The engine applies, in order: {order}. Follow it until the post gates pass:", tuple(follow)),
    ]


def _transition(plan: Plan, a: WaveState, b: WaveState) -> list[str]:
    t = transition(plan, a.name, b.name)
    steps = transition_steps(plan, a, b)
    lines = ["### What changes", ""]
    lines += [f"- {_change(c)}" for c in t.changes] or [
        "- Nothing in the cluster: this wave is a stop, not a change."
    ]
    if t.refusals:
        lines += ["", "**Refused by `gpuplatform plan`:**", *(f"- {r}" for r in t.refusals)]
    lines += ["", f"### Gates of {b.dir_name}", "", *_gates(plan, b)]
    review = Action(
        "Review the transition:",
        (
            f"gpuplatform plan {_STACK} --from {a.name} --to {b.name}",
            f"gpuplatform diff {_STACK} --waves {a.name} {b.name}",
        ),
    )
    lines += ["", "### Before the sync", "", *numbered([review, *steps.before])]
    lines += ["", "### Sync", "", *numbered(_sync(plan, t, b))]
    lines += ["", "### After the sync", ""]
    lines += numbered(steps.after) or ["Nothing to do beyond the gates."]
    return lines


def runbook(plan: Plan, prev: WaveState | None, state: WaveState, capacity: str = "") -> str:
    """The Markdown runbook of one wave: from the wave before it, and the rollback to it;
    `capacity` says when the wave is tight or does not fit."""
    p = plan.platform
    lines = [f"# {p.name} — wave {state.dir_name} ({state.wave.stage})", ""]
    if state.wave.description:
        lines += [state.wave.description, ""]
    if capacity:
        lines += [capacity, ""]
    lines.append(
        f"`{_STACK}` is the stack this tree was rendered from (`gpuplatform.lock.json` names it); `handoff/...` "
        f"paths are relative to this platform's folder, `{p.delivery.path}/{p.name}/`."
    )
    if prev is None:
        lines += ["", "## What exists", "", *(f"- {c}" for c in wave_changes(plan, None, state))]
        lines += ["", f"## Gates of {state.dir_name}", "", *_gates(plan, state)]
    else:
        lines += ["", f"## From {prev.dir_name} to {state.dir_name}", "", *_transition(plan, prev, state)]
    lines += [
        "",
        "## Evidence to capture",
        "",
        f"- `gpuplatform snapshot --out evidence/{state.dir_name}` and "
        f"`gpuplatform evidence {_STACK} --platform {p.name} --wave {state.name} --snapshot evidence/{state.dir_name}`.",
        f"- `kubectl -n {p.delivery.gates_namespace} get jobs -l gpuplatform.dev/wave={state.name}`: all Complete.",
    ]
    if prev is not None:
        lines += ["", f"## Rollback to {prev.dir_name}", "", *_transition(plan, state, prev)]
    return "\n".join(lines) + "\n"


def render_runbooks(plan: Plan) -> dict[str, str]:
    """`<NN>-<wave>.md` for every wave."""
    out: dict[str, str] = {}
    prev: WaveState | None = None
    notes = runbook_capacity_notes(plan)
    for state in plan.waves:
        out[f"{state.dir_name}.md"] = runbook(plan, prev, state, notes.get(state.name, ""))
        prev = state
    return out
