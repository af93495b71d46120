"""Runbook steps for what other teams own: NIM services (blue/green) and converted workloads.

Their owners apply the hand-offs; going forward they act after the sync (the claim templates exist
from then on), going back before it (their claims must be released before the templates go).
"""

from __future__ import annotations

from gpuplatform.model.workloads import NimService, Workload
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.handoff import converted_file
from gpuplatform.render.meta import file_name
from gpuplatform.render.nim import render_nim_handoffs
from gpuplatform.render.runbook_actions import Action, Steps
from gpuplatform.render.workload_handoff import render_workload_handoffs, workload_template_name

__all__ = ["owner_steps"]


def _nim_in(plan: Plan, state: WaveState, nim: NimService) -> list[Action]:
    ns, name, old = nim.namespace, nim.name, nim.replaces
    handoff = next(
        f"handoff/{state.dir_name}/{file_name(o)}"
        for o in render_nim_handoffs(plan, state)
        if o["metadata"]["name"] == name
    )
    apply = (
        Action(
            f"Apply: create NIMService `{ns}/{name}` next to `{old or 'the legacy one'}`:",
            (f"kubectl apply -f handoff/{state.dir_name}/{converted_file(nim)}",),
        )
        if nim.manifest
        else Action(
            f"Apply: create NIMService `{ns}/{name}` from `{old or 'its legacy manifest'}` with the `draResources` of "
            f"`{handoff}` and without `nvidia.com/gpu` limits (`draResources` is immutable, hence a new NIMService)."
        )
    )
    steps = [
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
        steps += [
            Action(
                f"Switch traffic: point the routes and clients of Service `{old}` at Service `{name}` (the NIM Operator names "
                "the Service after the NIMService), then check the new endpoints serve:",
                (
                    f"kubectl -n {ns} get ingress,httproute -o wide",
                    f"kubectl -n {ns} get endpointslices -l kubernetes.io/service-name={name}",
                ),
            ),
            Action(
                f"Retire `{old}` only once this wave is proven, in a later wave (until then it is the rollback): keep its "
                "manifest, then:",
                (f"kubectl -n {ns} delete nimservice {old}",),
            ),
        ]
    return steps


def _nim_out(nim: NimService) -> list[Action]:
    ns, name, old = nim.namespace, nim.name, nim.replaces
    steps = []
    if old:
        steps.append(
            Action(
                f"Switch traffic back to `{old}` (re-apply its legacy manifest first if it was retired, and wait until it is Ready):",
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


def _rollout(w: Workload) -> str:
    if w.kind in ("Deployment", "StatefulSet", "DaemonSet"):
        return f"kubectl -n {w.namespace} rollout status {w.kind.lower()}/{w.name}"
    return f"kubectl -n {w.namespace} get {w.kind.lower()}/{w.name} -o wide"


def _workload_in(plan: Plan, state: WaveState, w: Workload) -> list[Action]:
    handoff = next(
        f"handoff/{state.dir_name}/{file_name(o)}"
        for o in render_workload_handoffs(plan, state)
        if o["spec"]["target"] == {"kind": w.kind, "namespace": w.namespace, "name": w.name}
    )
    change = (
        Action(
            "Apply the converted manifest:",
            (f"kubectl apply -f handoff/{state.dir_name}/{converted_file(w)}",),
        )
        if w.manifest
        else Action(
            f"In its source, remove the `nvidia.com/gpu` limits and add the pod resource claim of `{handoff}` "
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


def _workload_out(w: Workload) -> list[Action]:
    legacy = f"`{w.manifest}`" if w.manifest else "its legacy manifest"
    return [
        Action(
            f"{w.kind} `{w.namespace}/{w.name}` goes back to `nvidia.com/gpu` before the sync prunes its claim template: "
            f"its owner re-applies {legacy}, then checks the rollout and that its claims are gone:",
            (_rollout(w), f"kubectl -n {w.namespace} get resourceclaims -o wide"),
        )
    ]


def owner_steps(plan: Plan, a: WaveState, b: WaveState, steps: Steps) -> None:
    """Add the owners' steps for the NIM services and workloads that move between `a` and `b`."""
    p = plan.platform
    for nim in p.nim_services:
        if nim.name in b.nim_services and nim.name not in a.nim_services:
            steps.after += _nim_in(plan, b, nim)
        elif nim.name in a.nim_services and nim.name not in b.nim_services:
            steps.before += _nim_out(nim)
    for i, w in enumerate(p.workloads):
        if i in b.workloads and i not in a.workloads:
            steps.after += _workload_in(plan, b, w)
        elif i in a.workloads and i not in b.workloads:
            steps.before += _workload_out(w)
