"""Runbooks (`runbooks/<NN>-<wave>.md`): how an operator takes the cluster into a wave, and back.

A wave's runbook is the transition from the wave before it, and its rollback the same transition
read backwards: both come from `plan.transitions.transition` (what changes, the step sequence of
`plan.steps`, the gates), its sync steps cut to the units whose rendered files change
(`plan.review.reviewed_steps`, as `plan --from/--to` cuts them), and
`render.runbook_steps.operator_steps` (the commands of each step), so `plan --from/--to`,
`simulate` and the runbook tell the same story in the same order. Real names throughout; nothing
here is applied by an engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from gpuplatform.gates import gates_for_wave
from gpuplatform.gates.matchers import OPERAND_DAEMONSETS
from gpuplatform.labels import WAVE_LABEL
from gpuplatform.plan.report import wave_changes
from gpuplatform.plan.review import reviewed_steps
from gpuplatform.plan.sync_order import SYNC_UNITS
from gpuplatform.plan.transitions import transition
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.argocd_settings import argocd_cm_step
from gpuplatform.render.flux_entry import flux_source
from gpuplatform.render.gate_jobs import gate_job_names
from gpuplatform.render.gate_rerun import rerun_steps
from gpuplatform.render.helm_values import running_operator
from gpuplatform.render.markdown import markdown_text
from gpuplatform.render.operator_handoff import operator_handoff_path
from gpuplatform.render.runbook_actions import Action, numbered
from gpuplatform.render.runbook_maintenance import maintenance_actions
from gpuplatform.render.runbook_steps import operator_steps

__all__ = ["ChangedUnits", "render_runbooks", "runbook"]

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
    jobs = gate_job_names(plan, state)
    for g in gates:
        when = f"before {', '.join(g.protects)}" if g.protects else "after the wave is applied"
        lines.append(f"- `{g.id}` ({when}; Job `{jobs[g.id]}`): {g.title}.")
    lines += ["", "If a gate does not hold:", "", *(f"- {step}" for step in rerun_steps(plan, state))]
    return lines


def _follow(plan: Plan, target: WaveState) -> tuple[str, ...]:
    """Commands that wait until the engine has applied the merged commit and the post-transition
    gates have passed. A wait on Ready alone could return on the previous wave's status.

    Argo CD: the wave Application's comparison (`status.sync.revision`) and its last sync
    (`status.operationState.syncResult`: revision and path) are the merge commit and the target
    wave's folder, and that sync (its PostSync gates included) succeeded, Synced (argo-cd v3.5.1
    `pkg/apis/application/v1alpha1/types.go` `SyncStatus`, `SyncOperationResult`). Flux: the last
    Kustomization of the chain has applied the merge commit; kustomize-controller sets
    `lastAppliedRevision` only once the apply and its health checks succeeded (v1.9.4
    `internal/controller/kustomization_controller.go`), as `<branch>@sha1:<commit>` (fluxcd/pkg
    git/v0.52.0 `git.go` `Commit.String`)."""
    p, d = plan.platform, plan.platform.delivery
    follow = [f"git fetch origin {d.revision} && MERGED=$(git rev-parse FETCH_HEAD)"]
    if "argocd" in d.engines:
        fields = (
            "{.status.sync.revision} {.status.sync.status} {.status.operationState.syncResult.revision} "
            "{.status.operationState.syncResult.source.path} {.status.operationState.phase}"
        )
        path = f"{d.path}/{p.name}/waves/{target.dir_name}/argocd"
        follow.append(
            f"until [ \"$(kubectl -n {d.argocd_namespace} get application {p.name} -o jsonpath='{fields}')\" = "
            f'"$MERGED Synced $MERGED {path} Succeeded" ]; do sleep 10; done'
        )
    if "flux" in d.engines:
        ns, source = d.flux_namespace, flux_source(plan)
        follow += [
            f"flux reconcile source git {source} -n {ns}",
            f"BRANCH=$(kubectl -n {ns} get gitrepository {source} -o jsonpath='{{.spec.ref.branch}}')",
            f"kubectl -n {ns} wait kustomization/{p.name}-gates-post "
            f"--for=jsonpath='{{.status.lastAppliedRevision}}'=\"$BRANCH@sha1:$MERGED\" "
            f"--timeout={d.timeout_minutes * len(SYNC_UNITS)}m",
        ]
    return tuple(follow)


def _bootstrap(plan: Plan) -> list[str]:
    """Once per cluster, before the first wave: the engines' entry into the tree (nothing else is
    applied by hand; every later wave is a merge)."""
    p, d = plan.platform, plan.platform.delivery
    steps: list[Action] = []
    if "argocd" in d.engines:
        steps.append(
            Action(
                f"Argo CD: apply the root Application `{p.name}-root` once, where Argo CD runs (or commit it to your own "
                f"app of apps). It syncs `{d.path}/{p.name}/delivery/argocd`, so every later wave is a merge. Push "
                'access to that folder is Argo CD admin (`docs/delivery.md`, "Argo CD: bootstrap"):',
                (
                    f"gpuplatform argocd-entry {_STACK} --platform {p.name} > {p.name}-root.yaml",
                    f"kubectl -n {d.argocd_namespace} apply -f {p.name}-root.yaml",
                ),
            )
        )
    if "flux" in d.engines:
        own = (
            f" from the platform's own GitRepository `{d.flux_git_repository}` on `{d.revision}`, which the file holds too"
            if d.flux_git_repository is not None
            else ""
        )
        steps.append(
            Action(
                f"Flux: commit the platform's entry next to `flux bootstrap`'s files (`clusters/<name>/`); it applies "
                f"`{d.path}/{p.name}/delivery/flux`{own}:",
                (f"gpuplatform flux-entry {_STACK} --platform {p.name} > clusters/<name>/{p.name}.yaml",),
            )
        )
    return ["", "## Bootstrap (once per cluster)", "", *numbered(steps)]


def _preflight(plan: Plan) -> Action:
    """Before the first wave: can the cluster's Argo CD and Flux apply the tree (GP291-GP296)?"""
    monitoring = plan.platform.monitoring
    alerts = (
        f", GP296 no namespace `{monitoring.namespace}` or PrometheusRule CRD for the alerts"
        if monitoring.enabled
        else ""
    )
    return Action(
        "Preflight: read the engines' versions, CRDs and `argocd-cm` (on the cluster where Argo CD runs, when it "
        "runs elsewhere) and check that they can apply this tree (GP291 Argo CD < 3.3, GP292 Flux < 2.3, GP293 "
        f"`--enable-helm` missing, GP295 Flux older than `delivery.fluxVersion`{alerts}; GP294 warns while "
        "impersonation is off):",
        (
            "gpuplatform snapshot --out preflight",
            f"gpuplatform check {_STACK} --platform {plan.platform.name} --snapshot preflight",
        ),
    )


#: How long the runbook waits for an operand DaemonSet's roll before it stops and says so.
_ROLL_TIMEOUT = "60m"


def _exporter_rolled(plan: Plan) -> list[Action]:
    """Before the preflight: the DCGM exporter runs the operator's values on every node. The adoption
    gave it DRA mode, the operator rolls it `maxUnavailable` nodes at a time, and a snapshot taken
    during the roll is refused by GP257 (an OnDelete exporter never rolls by itself: GP257 says so)."""
    op = plan.platform.gpu_operator
    out = running_operator(plan.platform)
    strategy, unavailable = out.operand_update
    if not out.exporter_dra or "dcgm-exporter" not in out.operands or strategy != "RollingUpdate":
        return []
    name = OPERAND_DAEMONSETS["dcgm-exporter"][0]
    return [
        Action(
            f"Wait until the DCGM exporter runs in DRA mode on every node: the GPU Operator rolls it after its "
            f"values change, {_at_a_time(unavailable)} at a time (`daemonsets.rollingUpdate.maxUnavailable`), "
            "and a preflight taken during the roll is refused (GP257):",
            (f"kubectl -n {op.namespace} rollout status daemonset/{name} --timeout={_ROLL_TIMEOUT}",),
        )
    ]


def _at_a_time(unavailable: str) -> str:
    """`maxUnavailable` in words: `1` one node, `3` 3 nodes, `10%` 10% of the nodes."""
    if unavailable == "1":
        return "one node"
    return f"{unavailable} of the nodes" if unavailable.endswith("%") else f"{unavailable} nodes"


#: Per transition (source, target): the sync units whose rendered files change.
ChangedUnits = Mapping[tuple[str, str], Set[str]]


def _transition(plan: Plan, a: WaveState, b: WaveState, changed: ChangedUnits | None) -> list[str]:
    t = transition(plan, a.name, b.name)
    sequence = t.steps if changed is None else reviewed_steps(t.steps, changed[(a.name, b.name)])
    steps = operator_steps(plan, a, b, sequence)
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
            f"gpuplatform plan {_STACK} --platform {plan.platform.name} --from {a.name} --to {b.name}",
            # `diff` exits 1 when the waves differ, which is the answer, not a failure
            f"gpuplatform diff {_STACK} --platform {plan.platform.name} --waves {a.name} {b.name} || test $? -eq 1",
        ),
    )
    merge = Action(
        f"Set `activeWave: {b.name}` in the spec, run `gpuplatform synth`, open the pull request (reviewers read "
        f"`gpuplatform diff {_STACK} --waves {a.name} {b.name}`) and merge. The engine applies, in this order:"
    )
    follow = Action(
        "Follow the engine until it has applied the merge commit and the post-transition gates have passed "
        "(if another commit merged since, set `MERGED` to it):",
        _follow(plan, b),
    )
    first = (
        [*_exporter_rolled(plan), _preflight(plan), *argocd_cm_step(plan)]
        if a.name == plan.waves[0].name
        else []
    )
    lines += ["", "### Before the merge", "", *numbered([*first, review, *steps.before])]
    lines += ["", "### Sync", "", *numbered([merge, *steps.during, follow])]
    lines += ["", "### After the sync", ""]
    lines += numbered(steps.after) or ["Nothing to do beyond the gates."]
    return lines


def _operator_handoff(plan: Plan) -> list[str]:
    """The first wave's step for a GPU Operator release gpuplatform does not render."""
    path = operator_handoff_path(plan)
    if path is None:
        return []
    op = plan.platform.gpu_operator
    upgrade = Action(
        "Give the running GPU Operator the migration's settings (the driver manager evicts the DRA "
        "kubelet plugin before it unloads the driver; operands tolerate the GPU-node taints). Lists "
        "in the file are whole: they start from `gpuOperator.values` (`gpuplatform import "
        "operator-values` reads the running ones), and Helm replaces lists:",
        (
            f"helm -n {op.namespace} get values {op.release_name} -o yaml > gpu-operator-values.before.yaml",
            f"helm upgrade {op.release_name} nvidia/gpu-operator -n {op.namespace} --version {op.version} "
            f"--reuse-values -f {path}",
        ),
    )
    return [
        "",
        "## Before the merge (the GPU Operator is not managed by gpuplatform)",
        "",
        *numbered([upgrade]),
    ]


def runbook(
    plan: Plan,
    prev: WaveState | None,
    state: WaveState,
    capacity: str = "",
    changed: ChangedUnits | None = None,
) -> str:
    """The Markdown runbook of one wave: from the wave before it, and the rollback to it;
    `capacity` says when the wave is tight or does not fit; `changed` cuts the sync steps."""
    p = plan.platform
    lines = [f"# {p.name} — wave {state.dir_name} ({state.wave.stage})", ""]
    if state.wave.description:
        lines += [markdown_text(state.wave.description), ""]
    if capacity:
        lines += [capacity, ""]
    lines.append(
        f"`{_STACK}` is the stack this tree was rendered from (`gpuplatform.lock.json` names it); `handoff/...` "
        f"paths are relative to this platform's folder, `{p.delivery.path}/{p.name}/`."
    )
    if prev is None:
        lines += _bootstrap(plan)
        lines += _operator_handoff(plan)
        lines += ["", "## What exists", "", *(f"- {c}" for c in wave_changes(plan, None, state))]
        lines += ["", f"## Gates of {state.dir_name}", "", *_gates(plan, state)]
    else:
        lines += [
            "",
            f"## From {prev.dir_name} to {state.dir_name}",
            "",
            *_transition(plan, prev, state, changed),
        ]
    lines += [
        "",
        "## Evidence to capture",
        "",
        f"- `gpuplatform snapshot --out evidence/{state.dir_name}` and "
        f"`gpuplatform evidence {_STACK} --platform {p.name} --wave {state.name} --snapshot evidence/{state.dir_name}`.",
        f"- `kubectl -n {p.delivery.gates_namespace} get jobs -l {WAVE_LABEL}={state.name}`: all Complete.",
    ]
    if maintenance := maintenance_actions(plan, state):
        lines += ["", "## Node maintenance while this wave is active", "", *numbered(maintenance)]
    if prev is not None:
        lines += ["", f"## Rollback to {prev.dir_name}", "", *_transition(plan, state, prev, changed)]
    return "\n".join(lines) + "\n"


def render_runbooks(
    plan: Plan, capacity_notes: Mapping[str, str], changed: ChangedUnits | None = None
) -> dict[str, str]:
    """`<NN>-<wave>.md` for every wave; with `changed` (from the rendered files, both directions of
    every adjacent pair), only the sync steps of the units that change, as `plan --from/--to` shows;
    without it, the plan's whole sequence. `capacity_notes` are the capacity paragraph of each wave
    (`capacity.verdicts.runbook_capacity_notes`, computed above this layer)."""
    out: dict[str, str] = {}
    prev: WaveState | None = None
    for state in plan.waves:
        out[f"{state.dir_name}.md"] = runbook(plan, prev, state, capacity_notes.get(state.name, ""), changed)
        prev = state
    return out
