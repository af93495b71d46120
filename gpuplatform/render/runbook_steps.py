"""The operator's steps of one transition between two wave states, forward or back.

One function per kind of change (pools and drains in `runbook_pools`, NIM services and workloads in
`runbook_owners`, the driver, classes and tenants here), each working in both directions, so that a
wave's runbook and its rollback are the same code read from the two ends of the transition. Steps
fall in two phases: `before` the sync (what must be true before the engine applies anything) and
`after` it (checks, and owners' work that needs the wave's objects).
"""

from __future__ import annotations

from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.runbook_actions import Action, Steps
from gpuplatform.render.runbook_owners import owner_steps
from gpuplatform.render.runbook_pools import pool_steps
from gpuplatform.render.validation import validation_jobs

__all__ = ["transition_steps"]


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
            steps.after.append(
                Action(
                    "The chart's `gpu.nvidia.com` DeviceClass serves `nvidia.com/gpu` from now on; only the DRA pools' "
                    "taints keep unmigrated workloads off the DRA nodes:",
                    ("kubectl get deviceclass gpu.nvidia.com -o jsonpath='{.spec.extendedResourceName}'",),
                )
            )
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
        steps.after.append(
            Action(
                f"The engine prunes what the target wave lacks ({', '.join(gone)}); tenant Namespaces are never deleted.",
            )
        )
    pilot = validation_jobs(plan, b).data["validation"]
    if pilot is not None and not a.validation:
        ns, job, gates = pilot["namespace"], pilot["job"], p.delivery.gates_namespace
        steps.after.append(
            Action(
                f"Claim pilot: while Job `{ns}/{job}` holds its claim, the claim is allocated on a DRA node and the "
                "container printed the UUID of the allocated device; the `claim-pilot` gate compares it with the "
                "device's `uuid` in its ResourceSlice, removes the pod and waits for the claim's release, and its log "
                "prints the proof:",
                (
                    f"kubectl -n {ns} get resourceclaims -o wide",
                    f"kubectl -n {ns} logs job/{job}",
                    f"kubectl -n {gates} logs -l gpuplatform.dev/gate=claim-pilot,gpuplatform.dev/wave={b.name}",
                ),
            )
        )


def transition_steps(plan: Plan, a: WaveState, b: WaveState) -> Steps:
    """What an operator does around the sync that takes the cluster from wave `a` to wave `b`.

    Before the sync: owners undo what leaves (their claims go first), then the pools that move.
    After it: the pools, the driver, classes and tenants, then the owners' new work.
    """
    owners, cluster = Steps(), Steps()
    owner_steps(plan, a, b, owners)
    pool_steps(plan, a, b, cluster)
    _driver(plan, a, b, cluster)
    _objects(plan, a, b, cluster)
    return Steps(owners.before + cluster.before, cluster.after + owners.after)
