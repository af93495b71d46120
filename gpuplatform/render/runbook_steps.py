"""The operator's steps of one transition between two wave states, forward or back.

The sequence is the plan's (`plan.steps.transition_steps`, the one `plan --from/--to` prints and
`simulate` replays): its manual steps before the merge, the sync units with the manual steps that
wait for one of them, and its manual steps after the sync. This module gives each manual step its
commands (pools in `runbook_pools`, owners in `runbook_owners`) and adds what the sequence leaves to
the runbook: the blue/green steps of NIM services and the checks of what changed (pools, driver,
classes, tenants, the claim pilot). Forward and back are the same code.
"""

from __future__ import annotations

from gpuplatform.kueue.runbook import kueue_steps
from gpuplatform.labels import GATE_LABEL, WAVE_LABEL
from gpuplatform.plan.steps import ARGOCD_APPS, OPERATOR_DEVICE_PLUGIN, Step
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.operators import child_application_name, helm_charts
from gpuplatform.render.runbook_actions import Action, Steps
from gpuplatform.render.runbook_owners import OWNER_ACTIONS, nim_steps, owner_actions
from gpuplatform.render.runbook_pools import POOL_ACTIONS, pool_actions, pool_checks
from gpuplatform.render.runbook_takeover import TAKEOVER_ACTIONS, takeover_actions
from gpuplatform.render.validation import validation_jobs

__all__ = ["argocd_apps_commands", "operator_steps"]


def argocd_apps_commands(plan: Plan, a: WaveState, b: WaveState) -> tuple[str, ...]:
    """Sync a remote cluster's `<platform>-apps` with `--prune`, then wait until every child
    Application the wave removes is gone (its finalizer has uninstalled the release).

    `argocd app sync` prunes nothing by default (argo-cd v3.5.1 cmd/argocd/commands/app.go,
    `--prune` false): a child Application left out of Git is skipped "ignored (requires pruning)"
    and the sync still succeeds (gitops-engine in argo-cd v3.5.1 pkg/sync/sync_context.go,
    `pruneObject`, ResultCodePruneSkipped -> OperationSucceeded). `simulate` replays these commands.
    """
    d = plan.platform.delivery
    kept = {c.release for c in helm_charts(plan, b)}
    gone = [c for c in helm_charts(plan, a) if c.release not in kept and not c.keep]
    waits = tuple(
        f"kubectl -n {d.argocd_namespace} wait --for=delete application/{child_application_name(plan, c)}"
        f" --timeout={d.timeout_minutes}m"
        for c in gone
    )
    return (f"argocd app sync {plan.platform.name}-apps --prune", *waits)


def _chart_class(plan: Plan, b: WaveState) -> Action:
    """What the chart's `gpu.nvidia.com` class serves once the driver is installed: `nvidia.com/gpu` only
    from the wave that names it as the bridge; before, the release patches `extendedResourceName` away
    (`render/operators.py` `chart_class_patches`), as `plan` says of the same wave."""
    command = ("kubectl get deviceclass gpu.nvidia.com -o jsonpath='{.spec.extendedResourceName}'",)
    if plan.chart_bridges(b):
        return Action(
            "The chart's `gpu.nvidia.com` DeviceClass serves `nvidia.com/gpu` from now on (this wave names it "
            "as the bridge); only the DRA pools' taints keep unmigrated workloads off the DRA nodes:",
            command,
        )
    return Action(
        "The chart's `gpu.nvidia.com` DeviceClass serves no `nvidia.com/gpu` yet: the release removes its "
        "`extendedResourceName` until a wave names it as the bridge. This prints nothing:",
        command,
    )


def _driver(plan: Plan, a: WaveState, b: WaveState, steps: Steps) -> None:
    ns = plan.platform.dra_driver.namespace
    if b.driver_installed and not a.driver_installed:
        steps.after.append(
            Action(
                f"The DRA driver is installed in `{ns}`: a `*-kubelet-plugin` pod runs on every DRA node.",
                (f"kubectl -n {ns} get pods -o wide",),
            )
        )
        if plan.chart_bridge_live:
            steps.after.append(_chart_class(plan, b))
    if a.driver_installed and not b.driver_installed:
        steps.after.append(
            Action(
                "The DRA driver is uninstalled (the last DRA node is clear): its pods and slices are gone.",
                (f"kubectl -n {ns} get pods", "kubectl get resourceslices"),
            )
        )
    if a.device_plugin_enabled != b.device_plugin_enabled:
        state = (
            "disabled cluster-wide: no device-plugin pod remains"
            if not b.device_plugin_enabled
            else "enabled again: its pods return on the legacy nodes"
        )
        steps.after.append(
            Action(
                f"The GPU Operator's device plugin is {state}.",
                ("kubectl get pods -A -l app=nvidia-device-plugin-daemonset -o wide",),
            )
        )


def _objects(plan: Plan, a: WaveState, b: WaveState, steps: Steps) -> None:
    p = plan.platform
    for name in b.tiers:
        if name not in a.tiers:
            steps.after.append(
                Action(
                    f"Tier `{p.class_name(name)}` exists:",
                    (f"kubectl get deviceclass {p.class_name(name)} -o yaml",),
                )
            )
    for name in b.bridges:
        if name not in a.bridges:
            steps.after.append(
                Action(
                    f"Bridge `{name}`: legacy `nvidia.com/gpu` requests may land on DRA nodes once they tolerate the DRA taint.",
                    (
                        "kubectl get deviceclasses -o custom-columns=NAME:.metadata.name,EXTENDED:.spec.extendedResourceName",
                    ),
                )
            )
    for tenant in p.tenants:
        if tenant.name in b.tenants and tenant.name not in a.tenants:
            steps.after.append(
                Action(
                    f"Tenant `{tenant.ns}`: its namespace, quota, role and claim templates exist:",
                    (f"kubectl -n {tenant.ns} get resourceclaimtemplates,resourcequota,role,rolebinding",),
                )
            )
    gone = [p.class_name(t) for t in a.tiers if t not in b.tiers] + [
        t for t in a.tenants if t not in b.tenants
    ]
    gone += [b_ for b_ in a.bridges if b_ not in b.bridges]
    if gone:
        steps.after.append(Action(_pruned(plan, gone)))
    pilot = validation_jobs(plan, b).data["validation"]
    if pilot is not None and not a.validation:
        ns, job, gates = pilot["namespace"], pilot["job"], p.delivery.gates_namespace
        steps.after.append(
            Action(
                f"Claim pilot: while Job `{ns}/{job}` holds its claim, the claim is allocated on a DRA node and the "
                "container printed the UUID of the allocated device; the `claim-pilot` gate compares it with the "
                "device's `uuid` in its ResourceSlice, removes the pod and waits for the claim's release, and its log "
                "prints the proof (the probe's own log went with its pod; the gate's quotes it):",
                (
                    f"kubectl -n {ns} get resourceclaims -o wide",
                    f"kubectl -n {gates} logs -l {GATE_LABEL}=claim-pilot,{WAVE_LABEL}={b.name}",
                ),
            )
        )


def _pruned(plan: Plan, gone: list[str]) -> str:
    """What happens to the objects the target wave lacks, per engine policy (`delivery.*Prune`)."""
    d = plan.platform.delivery
    keeps = [
        name
        for engine, name, prunes in (
            ("argocd", "Argo CD (`delivery.argocdPrune: false`)", d.argocd_prune),
            ("flux", "Flux (`delivery.fluxPrune: false`)", d.flux_prune),
        )
        if engine in d.engines and not prunes
    ]
    what = ", ".join(gone)
    if not keeps:
        return f"The engine prunes what the target wave lacks ({what}); tenant Namespaces are never deleted."
    return (
        f"{' and '.join(keeps)} does not prune: what the target wave lacks ({what}) stays until its owner "
        "deletes it; tenant Namespaces are never deleted."
    )


def _manual(plan: Plan, a: WaveState, b: WaveState, step: Step) -> Action:
    """One manual step of the sequence with its commands, as parts per owner and per pool."""
    parts: list[Action] = []
    if step.action in OWNER_ACTIONS:
        parts += owner_actions(plan, a, b, step)
    if step.action in POOL_ACTIONS:
        parts += pool_actions(plan, a, b, step)
    if step.action in TAKEOVER_ACTIONS:
        parts += takeover_actions(plan, a, b, step)
    commands = argocd_apps_commands(plan, a, b) if step.action == ARGOCD_APPS else ()
    if step.action == OPERATOR_DEVICE_PLUGIN:
        op, enabled = plan.platform.gpu_operator, str(b.device_plugin_enabled).lower()
        commands = (
            f"helm -n {op.namespace} get values {op.release_name} -o yaml > gpu-operator-values.before-{b.name}.yaml",
            f"helm upgrade {op.release_name} nvidia/gpu-operator -n {op.namespace} --version {op.version} "
            f"--reuse-values --set devicePlugin.enabled={enabled}",
        )
    when = f" (once `{step.after}` has applied; do not wait for the rest of the sync)" if step.after else ""
    return Action(step.what[:1].upper() + step.what[1:] + when + ".", commands, tuple(parts))


def operator_steps(plan: Plan, a: WaveState, b: WaveState, sequence: tuple[Step, ...]) -> Steps:
    """What an operator does for the transition from `a` to `b` whose plan sequence is `sequence`.

    Before the merge: the owners of NIM services that leave switch back first, Kueue's owner maps the
    classes the wave adds (`kueue/runbook.py`), then the sequence's manual steps. During the sync: each sync unit, and the manual steps that wait for it. After it:
    the sequence's remaining manual steps (the drains of a drain wave among them), Kueue's mappings that
    go away, the checks of what changed and the NIM services' blue/green steps.
    """
    merge = next((i for i, s in enumerate(sequence) if s.kind == "merge"), len(sequence))
    nim = nim_steps(plan, a, b)
    kueue = kueue_steps(plan, a, b)
    steps = Steps(
        before=[
            *nim.before,
            *kueue.before,
            *(_manual(plan, a, b, s) for s in sequence[:merge] if s.kind == "manual"),
        ]
    )
    later = sequence[merge + 1 :]
    for unit in (s for s in later if s.kind == "sync"):
        steps.during.append(Action(f"`{unit.action}` (`{unit.layer}`): {unit.what}."))
        steps.during += [
            _manual(plan, a, b, s) for s in later if s.kind == "manual" and s.after == unit.action
        ]
    synced = {s.action for s in later if s.kind == "sync"}
    steps.after = [_manual(plan, a, b, s) for s in later if s.kind == "manual" and s.after not in synced]
    cluster = Steps()
    _driver(plan, a, b, cluster)
    _objects(plan, a, b, cluster)
    steps.after += [
        *kueue.after,
        *pool_checks(plan, a, b),
        *cluster.after,
        *nim.after,
    ]
    return steps
