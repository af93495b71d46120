"""What an operator does when a gate does not hold, per engine: the runbooks render these lines.

A gate Job re-checks for one attempt (`delivery.timeoutMinutes`), then starts a new attempt by
itself (exit 3, ignored by its `podFailurePolicy`), so after a fix nothing needs re-running; only a
Job that failed outright (exit 1, a crashed or misconfigured pod) needs the engine's help.
Argo CD: a failed hook fails the sync; a sync recreates every hook (`BeforeHookCreation`,
argoproj/gitops-engine `pkg/sync/sync_context.go`). Flux: kustomize-controller never re-runs a Job
that exists (`internal/controller/kustomization_controller.go` at v1.9.4 applies an unchanged Job
as a no-op), so the failed Job is deleted and the Kustomization reconciled.
"""

from __future__ import annotations

from gpuplatform.gates import gates_for_wave
from gpuplatform.labels import GATE_LABEL, GATE_PHASE_LABEL, VALIDATION_LABEL, WAVE_LABEL
from gpuplatform.plan.waves import Plan, WaveState

__all__ = ["rerun_steps"]


def rerun_steps(plan: Plan, state: WaveState) -> list[str]:
    """The operator's lines for a gate of `state` that does not hold, for every engine the spec uses."""
    p = plan.platform
    d = p.delivery
    gates = gates_for_wave(plan, state)
    if not gates:
        return []
    ns = d.gates_namespace
    wave = f"-l {WAVE_LABEL}={state.name}"
    steps = [
        f"See what a gate found: `kubectl -n {ns} logs {wave},{GATE_LABEL}=<gate> --tail=-1` "
        "(every attempt prints its findings; `kubectl -n "
        f"{ns} get pods {wave} -L {GATE_LABEL}` lists the attempts).",
        f"Fix the cluster. A gate that does not hold starts a new attempt every {d.timeout_minutes} min "
        "by itself (exit 3); once it holds the wave completes, nothing to re-run.",
    ]
    if "argocd" in d.engines:
        steps += [
            f"Argo CD: a gate Job that failed outright fails the sync; the sync retry re-runs every hook, "
            f"or by hand `argocd app sync {p.name}` (hooks are recreated). To give up on this wave while a "
            f"gate waits: `argocd app terminate-op {p.name}`, then change `activeWave`.",
        ]
    if "flux" in d.engines:
        for phase in sorted({g.phase for g in gates}):
            delete = f"`kubectl -n {ns} delete job {wave},{GATE_PHASE_LABEL}={phase}`"
            if phase == "post" and any(g.id == "claim-pilot" for g in gates) and p.validation is not None:
                tenant = next(t for t in p.tenants if t.name == p.validation.tenant)
                delete += f" and `kubectl -n {tenant.ns} delete job {wave},{VALIDATION_LABEL}=claim-pilot`"
            steps.append(
                f"Flux: `{p.name}-gates-{phase}` reports HealthCheckFailed while its gates wait and turns Ready "
                "when they hold. A gate Job that failed outright stays failed (Flux never re-runs an existing "
                f"Job): {delete}, then "
                f"`flux reconcile kustomization {p.name}-gates-{phase} -n {d.flux_namespace} --with-source`."
            )
    return steps
