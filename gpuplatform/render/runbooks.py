"""Runbooks (`runbooks/<NN>-<wave>.md`): the kubectl steps an operator runs alongside each sync,
then the safe rollback to the previous wave. Real names throughout; nothing here is applied."""

from __future__ import annotations

from gpuplatform.capacity.verdicts import runbook_capacity_notes
from gpuplatform.gates import gates_for_wave
from gpuplatform.gates.rerun import rerun_steps
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.gate_jobs import gate_job_name
from gpuplatform.render.nodes import DEVICE_PLUGIN_LABEL, DRA_PLUGIN_LABEL, VALIDATOR_LABEL, pool_taint
from gpuplatform.render.validation import validation_jobs

__all__ = ["render_runbooks", "runbook"]


def _nodes(plan: Plan, state: WaveState, mode: str) -> list[str]:
    return [n for p in plan.platform.node_pools if state.pool_modes[p.name] == mode for n in p.nodes]


def _taint(plan: Plan, pool_name: str) -> str:
    t = pool_taint(plan.platform, plan.pools[pool_name])
    return f"{t['key']}={t.get('value', '')}:{t['effect']}" if t.get("value") else f"{t['key']}:{t['effect']}"


def _forward(plan: Plan, prev: WaveState | None, state: WaveState) -> list[str]:
    p = plan.platform
    ns = p.dra_driver.namespace
    steps: list[str] = []
    moved = [
        pool
        for pool, mode in state.pool_modes.items()
        if (prev.pool_modes[pool] if prev else "legacy") != mode
    ]
    for pool in moved:
        nodes = " ".join(plan.pools[pool].nodes) or f"<nodes of pool {pool}>"
        if state.pool_modes[pool] == "dra":
            steps += [
                f"Pool `{pool}` moves to DRA. Ask the node provisioner's owner to taint its nodes "
                f"(hand-off `handoff/{state.dir_name}/`): `kubectl taint nodes {nodes} {_taint(plan, pool)}`",
                f"Drain the nodes before they change allocator (device-plugin allocations end with it): "
                f"`kubectl drain {nodes} --ignore-daemonsets --delete-emptydir-data`; uncordon once the taint is in place: "
                f"`kubectl uncordon {nodes}`.",
                f"After the sync, the nodes carry `{DRA_PLUGIN_LABEL}=true` and `{DEVICE_PLUGIN_LABEL}=false`: "
                f"`kubectl get nodes {nodes} -L {DRA_PLUGIN_LABEL},{DEVICE_PLUGIN_LABEL},{p.mode_label_key}`",
                f"Check the device plugin left them: `kubectl get pods -A -l app=nvidia-device-plugin-daemonset -o wide | grep -E '{'|'.join(plan.pools[pool].nodes) or pool}'` prints nothing, "
                f"and `kubectl get node <node> -o jsonpath='{{.status.allocatable.nvidia\\.com/gpu}}'` is empty or 0.",
            ]
        else:
            steps.append(
                f"Pool `{pool}` returns to the device plugin (see the rollback order below for what must come first)."
            )
    if state.driver_installed and not (prev and prev.driver_installed):
        steps += [
            f"The DRA driver is installed in `{ns}`: `kubectl -n {ns} get pods -o wide` shows a `*-kubelet-plugin` pod on every DRA node.",
            "The chart's `gpu.nvidia.com` DeviceClass serves `nvidia.com/gpu` from now on where the extended-resource bridge is live:"
            " `kubectl get deviceclass gpu.nvidia.com -o jsonpath='{.spec.extendedResourceName}'`; only the DRA pool's taint keeps"
            " unmigrated workloads off the DRA nodes.",
        ]
    if state.driver_installed and _nodes(plan, state, "dra"):
        steps.append(
            "Inspect what the driver publishes: `kubectl get resourceslice -o yaml` — one slice per DRA node "
            f"({', '.join(_nodes(plan, state, 'dra'))}) with the declared product, count and memory."
        )
    for name in state.tiers:
        if prev is None or name not in prev.tiers:
            steps.append(
                f"Tier `{p.class_name(name)}`: `kubectl get deviceclass {p.class_name(name)} -o yaml`."
            )
    for name in state.bridges:
        if prev is None or name not in prev.bridges:
            steps.append(
                f"Bridge `{name}`: legacy `nvidia.com/gpu` requests may land on DRA nodes once they tolerate the DRA taint."
            )
    pilot = validation_jobs(plan, state).data["validation"]
    if pilot is not None and not (prev and prev.validation):
        ns, job = pilot["namespace"], pilot["job"]
        steps += [
            f"Claim pilot: while Job `{ns}/{job}` holds its claim, `kubectl -n {ns} get resourceclaims -o wide` shows it "
            f"allocated and `kubectl -n {ns} logs job/{job}` prints `GPU 0: ... (UUID: GPU-...)`; the `claim-pilot` gate "
            "compares that UUID with the device's in its ResourceSlice, removes the pod and waits for the claim's release: "
            f"`kubectl -n {p.delivery.gates_namespace} logs -l gpuplatform.dev/gate=claim-pilot,gpuplatform.dev/wave={state.name}` "
            "prints its proof.",
        ]
    for tenant in p.tenants:
        if tenant.name in state.tenants and (prev is None or tenant.name not in prev.tenants):
            steps.append(
                f"Tenant `{tenant.ns}`: `kubectl -n {tenant.ns} get resourceclaimtemplates,resourcequota,role,rolebinding`."
            )
    if not state.device_plugin_enabled and (prev is None or prev.device_plugin_enabled):
        steps.append(
            "The GPU Operator's device plugin is disabled cluster-wide (`devicePlugin.enabled=false`)."
        )
    return steps


def _rollback(plan: Plan, prev: WaveState, state: WaveState) -> list[str]:
    p = plan.platform
    back = [
        pool for pool, mode in state.pool_modes.items() if mode == "dra" and prev.pool_modes[pool] == "legacy"
    ]
    nodes = [n for pool in back for n in plan.pools[pool].nodes]
    listing = " ".join(nodes) or "<nodes>"
    steps = [
        f"Rollback to `{prev.dir_name}`: set `activeWave: {prev.name}` in the spec, `gpuplatform synth`, review, merge."
    ]
    if back:
        steps += [
            f"Freeze: `kubectl cordon {listing}`.",
            "Remove the DRA workloads on them and wait until their claims are released while the DRA kubelet plugin still runs: "
            "`kubectl get resourceclaims -A -o wide` shows none allocated there (the `rollback-safety` gate refuses to go on otherwise).",
            f"The sync removes `{DRA_PLUGIN_LABEL}` and `{DEVICE_PLUGIN_LABEL}=false`; the GPU Operator re-enables the device plugin and "
            f"the validator (`{VALIDATOR_LABEL}`) by filling the absent labels: `kubectl get nodes {listing} -L {DEVICE_PLUGIN_LABEL}`.",
            "Restore the legacy manifests of the workloads that moved (their previous `nvidia.com/gpu` limits).",
            "Ask the provisioner's owner to remove the DRA taint: "
            + "; ".join(
                f"`kubectl taint nodes {' '.join(plan.pools[pool].nodes) or pool} {_taint(plan, pool)}-`"
                for pool in back
            ),
            f"Uncordon: `kubectl uncordon {listing}`.",
        ]
    if prev.driver_installed is False and state.driver_installed:
        steps.append(
            f"The DRA driver is uninstalled only now that the last DRA node is clear: `kubectl -n {p.dra_driver.namespace} get pods` empties."
        )
    gone = (set(state.tiers) - set(prev.tiers)) | (set(state.tenants) - set(prev.tenants))
    if gone:
        steps.append(
            "Objects of this wave the previous one lacks are pruned by the engine: "
            + ", ".join(sorted(gone))
            + "."
        )
    return steps


def runbook(plan: Plan, prev: WaveState | None, state: WaveState, capacity: str = "") -> str:
    """The Markdown runbook of one wave; `capacity` says when the wave is tight or does not fit."""
    lines = [f"# {plan.platform.name} — wave {state.dir_name} ({state.wave.stage})", ""]
    if state.wave.description:
        lines += [state.wave.description, ""]
    if capacity:
        lines += [capacity, ""]
    lines += ["## Before the sync", ""]
    gates = gates_for_wave(plan, state)
    lines += [
        f"- Gate `{g.id}` (Job `{gate_job_name(plan, state, g)}`, {g.phase}): {g.title}." for g in gates
    ] or ["- No gate."]
    lines += ["", "## Steps", ""]
    lines += [f"{i}. {step}" for i, step in enumerate(_forward(plan, prev, state), 1)] or [
        "Nothing changes on nodes in this wave."
    ]
    lines += ["", "## Evidence to capture", ""]
    lines += [
        f"- `gpuplatform snapshot --out evidence/{state.dir_name}` and `gpuplatform evidence <stack> --wave {state.name} --snapshot evidence/{state.dir_name}`.",
        "- `kubectl -n "
        + plan.platform.delivery.gates_namespace
        + " get jobs -l gpuplatform.dev/wave="
        + state.name
        + "` all Complete.",
    ]
    rerun = rerun_steps(plan, state)
    if rerun:
        lines += ["", "## If a gate does not hold", ""]
        lines += [f"- {step}" for step in rerun]
    if prev is not None:
        lines += ["", "## Rollback", ""]
        lines += [f"{i}. {step}" for i, step in enumerate(_rollback(plan, prev, state), 1)]
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
