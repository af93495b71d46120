"""Runbook commands for what other teams own: NIM services (blue/green) and converted workloads.

The workload steps follow the plan's sequence (`plan.steps`: roll-back-workloads and release-claims
before the merge, convert-workloads and restore-legacy-workloads after it). A NIM service moves blue/green: its owner
creates, verifies and switches to the new NIMService after the sync (its claim template exists
from then on), and going back switches to the old one and deletes the new one before the sync.
"""

from __future__ import annotations

from gpuplatform.model.workloads import NimService, Workload
from gpuplatform.plan.steps import Step
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.handoff import converted_file
from gpuplatform.render.meta import file_name
from gpuplatform.render.nim import nim_cache, render_nim_handoffs
from gpuplatform.render.runbook_actions import Action, Steps
from gpuplatform.render.workload_handoff import workload_handoff, workload_template_name

__all__ = ["OWNER_ACTIONS", "NimHeads", "nim_steps", "owner_actions"]


_GATEWAY_API = "gateway.networking.k8s.io"


class NimHeads:
    """How the steps an owner does for a NIM service begin (the rehearsal's owners act on them)."""

    @staticmethod
    def cache(nim: NimService) -> str:
        return f"Cache: its owner creates NIMCache `{nim.namespace}/{nim_cache(nim)}` for `{nim.name}`"

    @staticmethod
    def create(nim: NimService) -> str:
        return f"Apply: create NIMService `{nim.namespace}/{nim.name}`"

    @staticmethod
    def restore(nim: NimService) -> str:
        return f"Restore NIMService `{nim.namespace}/{nim.replaces}`"


def _nim_in(plan: Plan, state: WaveState, nim: NimService) -> list[Action]:
    ns, name, old = nim.namespace, nim.name, nim.replaces
    handoff = next(
        f"handoff/{state.dir_name}/{file_name(o)}"
        for o in render_nim_handoffs(plan, state)
        if o["metadata"]["name"] == name
    )
    cache = Action(
        f"{NimHeads.cache(nim)}, built for the GPU product it lands on (engine profiles are GPU-specific, and an "
        "RWO cache mounts on one node only; the new service never shares its predecessor's), then waits until it is "
        "Ready (the NIM Operator fails a NIMService whose NIMCache is missing and holds one whose NIMCache is not Ready):",
        (
            f"kubectl -n {ns} wait nimcache/{nim_cache(nim)} --for=jsonpath='{{.status.state}}'=Ready --timeout=60m",
        ),
    )
    apply = (
        Action(
            f"{NimHeads.create(nim)} next to `{old or 'the legacy one'}`:",
            (f"kubectl apply -f handoff/{state.dir_name}/{converted_file(nim)}",),
        )
        if nim.manifest
        else Action(
            f"{NimHeads.create(nim)} from `{old or 'its legacy manifest'}` with the `draResources` and `tolerations` "
            f"(the DRA pools' taints) of `{handoff}` and without `nvidia.com/gpu` limits (`draResources` is immutable, "
            "hence a new NIMService)."
        )
    )
    steps = [
        cache,
        apply,
        Action(
            f"Verify: `{name}` is Ready, its pods (`app={name}`) run on DRA nodes with their claims allocated "
            "(NVIDIA/k8s-nim-operator v3.1.2 `api/apps/v1alpha1/nimservice_types.go`: status `Ready`, pod label `app`):",
            (
                f"kubectl -n {ns} wait nimservice/{name} --for=jsonpath='{{.status.state}}'=Ready --timeout=30m",
                f"kubectl -n {ns} get pods -l app={name} -o wide",
                f"kubectl -n {ns} get resourceclaims -o wide",
            ),
        ),
    ]
    if old:
        steps.append(
            Action(
                f"Switch traffic: point the routes and clients of Service `{old}` at Service `{name}` (the NIM Operator names "
                f"the Service after the NIMService), then check the new endpoints serve. Keep `{old}` running: it is the "
                "way back until the next wave retires it.",
                (
                    f"kubectl -n {ns} get ingress -o wide",
                    # a cluster without the Gateway API serves no HTTPRoute, and `get` of it fails
                    f"if kubectl api-resources --api-group={_GATEWAY_API} -o name | grep -qx httproutes.{_GATEWAY_API}; "
                    f"then kubectl -n {ns} get httproutes -o wide; fi",
                    f"kubectl -n {ns} get endpointslices -l kubernetes.io/service-name={name}",
                ),
            )
        )
    return steps


def _nim_out(nim: NimService) -> list[Action]:
    ns, name, old = nim.namespace, nim.name, nim.replaces
    steps = []
    if old:
        steps.append(
            Action(
                f"Switch traffic back to `{old}` once it is Ready (it runs until the wave after this one retires it):",
                (
                    f"kubectl -n {ns} wait nimservice/{old} --for=jsonpath='{{.status.state}}'=Ready --timeout=30m",
                ),
            )
        )
    steps.append(
        Action(
            f"Delete NIMService `{ns}/{name}` and wait until its claims are released, before the sync prunes its templates:",
            (f"kubectl -n {ns} delete nimservice {name}", f"kubectl -n {ns} get resourceclaims -o wide"),
        )
    )
    return steps


def _nim_retire(nim: NimService, moved: WaveState) -> list[Action]:
    """The wave after the move: the replaced NIMService goes before the merge (capacity plans without it)."""
    ns, old = nim.namespace, nim.replaces
    return [
        Action(
            f"Retire NIMService `{ns}/{old}`: `{nim.name}` has served its traffic since wave `{moved.name}`, which is "
            f"proven. Keep its manifest (rolling back to `{moved.name}` brings it back); delete it and wait until its "
            "pods are gone:",
            (
                f"kubectl -n {ns} delete nimservice {old}",
                f'until [ -z "$(kubectl -n {ns} get pods -l app={old} -o name)" ]; do sleep 5; done',
            ),
        )
    ]


def _nim_restore(nim: NimService) -> list[Action]:
    """Back to the wave of the move: the replaced NIMService runs again, the way back of the new one."""
    ns, old = nim.namespace, nim.replaces
    legacy = f"`{nim.manifest}`" if nim.manifest else "its legacy manifest (`nvidia.com/gpu` limits)"
    return [
        Action(
            f"{NimHeads.restore(nim)}, the way back of `{nim.name}` in this wave: its owner re-applies {legacy}; "
            "wait until it is Ready:",
            (
                f"kubectl -n {ns} wait nimservice/{old} --for=jsonpath='{{.status.state}}'=Ready --timeout=30m",
            ),
        )
    ]


def _rollout(w: Workload) -> str:
    if w.kind in ("Deployment", "StatefulSet", "DaemonSet"):
        return f"kubectl -n {w.namespace} rollout status {w.kind.lower()}/{w.name}"
    return f"kubectl -n {w.namespace} get {w.kind.lower()}/{w.name} -o wide"


def _workload_in(plan: Plan, state: WaveState, w: Workload) -> list[Action]:
    handoff = f"handoff/{state.dir_name}/{file_name(workload_handoff(plan, state, w))}"
    change = (
        Action(
            "Apply the converted manifest:",
            (f"kubectl apply -f handoff/{state.dir_name}/{converted_file(w)}",),
        )
        if w.manifest
        else Action(
            f"In its source, remove the `{w.resource}` limits and add the pod resource claim of `{handoff}` "
            f"(template `{workload_template_name(w)}`), then deploy as usual."
        )
    )
    return [
        Action(
            f"{w.kind} `{w.namespace}/{w.name}` moves to a claim; its owner acts after the sync (the template exists from then on)."
        ),
        change,
        Action(
            "Verify: it rolls out and its claims are allocated on DRA nodes:",
            (_rollout(w), f"kubectl -n {w.namespace} get resourceclaims -o wide"),
        ),
    ]


def _roll_back(plan: Plan, a: WaveState, b: WaveState, step: Step) -> list[Action]:
    """Each workload that goes back: a controller that rolls (Deployment, StatefulSet, DaemonSet) replaces
    its claim pods by a rolling update, never by scaling to zero; a Pod or a Job is re-created."""
    actions = []
    for i, w in enumerate(plan.platform.workloads):
        if i not in a.workloads or i in b.workloads:
            continue
        legacy = f"`{w.manifest}`" if w.manifest else f"its legacy manifest (`{w.resource}` limits)"
        if w.kind in ("Deployment", "StatefulSet", "DaemonSet"):
            text = (
                f"{w.kind} `{w.namespace}/{w.name}` goes back to `{w.resource}`: its owner re-applies {legacy} and "
                "waits for the rollout, until no claim of it is left (if the legacy pods find no room, the rollout "
                "waits with the claim pods still serving: stop here, never scale it to zero):"
            )
            commands: tuple[str, ...] = (_rollout(w), f"kubectl -n {w.namespace} get resourceclaims -o wide")
        else:
            text = (
                f"{w.kind} `{w.namespace}/{w.name}` goes back to `{w.resource}`: its owner deletes the claim-using "
                f"version while the kubelet plugin can release its claims, and creates it again from {legacy}:"
            )
            commands = (
                f"kubectl -n {w.namespace} delete {w.kind.lower()}/{w.name}",
                f"kubectl -n {w.namespace} get resourceclaims -o wide",
            )
        actions.append(Action(text, commands))
    return actions


def _release(plan: Plan, a: WaveState, b: WaveState, step: Step) -> list[Action]:
    p = plan.platform
    actions: list[Action] = []
    actions += [
        Action(
            f"Tenant `{t.ns}` leaves: its owners remove the workloads that hold claims; wait until none is left:",
            (f"kubectl -n {t.ns} get resourceclaims -o wide",),
        )
        for t in p.tenants
        if t.name in a.tenants and t.name not in b.tenants
    ]
    if step.pools:
        actions.append(
            Action(
                f"The owners of the DRA workloads on pool(s) {', '.join(step.pools)} remove them (or move them off), "
                "so their claims are released while the kubelet plugin still runs; the checks follow."
            )
        )
    return actions


def _convert(plan: Plan, a: WaveState, b: WaveState, step: Step) -> list[Action]:
    return [
        action
        for i, w in enumerate(plan.platform.workloads)
        if i in b.workloads and i not in a.workloads
        for action in _workload_in(plan, b, w)
    ]


def _restore(plan: Plan, a: WaveState, b: WaveState, step: Step) -> list[Action]:
    actions = []
    if step.pools:
        actions.append(
            Action(
                f"The workloads removed from pool(s) {', '.join(step.pools)} come back on their legacy manifests."
            )
        )
    return actions


#: The manual owner actions of `plan.steps` this module gives commands for.
OWNER_ACTIONS = {
    "roll-back-workloads": _roll_back,
    "release-claims": _release,
    "convert-workloads": _convert,
    "restore-legacy-workloads": _restore,
}


def owner_actions(plan: Plan, a: WaveState, b: WaveState, step: Step) -> list[Action]:
    """The owners' commands of one manual step of the transition from `a` to `b`."""
    return OWNER_ACTIONS[step.action](plan, a, b, step)


def nim_steps(plan: Plan, a: WaveState, b: WaveState) -> Steps:
    """The NIM services that move between `a` and `b`: blue/green in, or back to the old one; the
    old one is retired on the way out of the wave of the move and restored on the way back to it."""
    steps = Steps()
    forward = plan.waves.index(b) > plan.waves.index(a)
    for nim in plan.platform.nim_services:
        if nim.name in b.nim_services and nim.name not in a.nim_services:
            steps.after += _nim_in(plan, b, nim)
        elif nim.name in a.nim_services and nim.name not in b.nim_services:
            steps.before += _nim_out(nim)
        elif nim.replaces and forward and a.name == nim.moves_in:
            steps.before += _nim_retire(nim, a)
        elif nim.replaces and not forward and b.name == nim.moves_in:
            steps.after += _nim_restore(nim)
    return steps
