"""Runbook steps for pools that change allocator, and for the pools a drain wave empties.

Static pools are named by their node names; provisioner pools only by a label selector, and they
change allocator by changing their template (Karpenter replaces drifted nodes), never by GitOps.
"""

from __future__ import annotations

import json

from gpuplatform.gates.nodes import pool_selector
from gpuplatform.model.nodes import NodePool
from gpuplatform.plan.waves import Mode, Plan, WaveState
from gpuplatform.render.handoff import render_pool_handoffs
from gpuplatform.render.meta import file_name
from gpuplatform.render.nodes import DEVICE_PLUGIN_LABEL, DRA_PLUGIN_LABEL, node_labels, pool_taint
from gpuplatform.render.runbook_actions import Action, Steps

__all__ = ["pool_steps"]

_GPU = "nvidia.com/gpu"
_GPU_PODS = (
    "kubectl get pods -A --field-selector spec.nodeName=$n,status.phase=Running -o json | jq -r "
    '\'.items[] | select(any(.spec.containers[]; (.resources.limits["nvidia.com/gpu"] // "0") != "0")) '
    '| "\\(.metadata.namespace)/\\(.metadata.name)"\''
)
_NODE_CLAIMS = (
    'kubectl get resourceclaims -A -o json | jq -r --arg n "$n" \'.items[] | select(.status.allocation != null) '
    '| select([.status.allocation.devices.results[]?.pool] | index($n)) | "\\(.metadata.namespace)/\\(.metadata.name)"\''
)


def _target(pool: NodePool) -> str:
    """kubectl arguments that select the pool's nodes: names, or `-l <label>=<value>` (gates.nodes)."""
    return " ".join(pool_selector(pool).kubectl_args())


def _each_node(pool: NodePool, command: str) -> str:
    """`command` (reading `$n`) for every node of the pool, found the way the cluster knows it."""
    nodes = (
        " ".join(pool.nodes)
        if pool.provisioner is None
        else f"$(kubectl get nodes {_target(pool)} -o jsonpath='{{.items[*].metadata.name}}')"
    )
    return f"for n in {nodes}; do {command}; done"


def _taint(plan: Plan, pool: NodePool) -> str:
    t = pool_taint(plan.platform, pool)
    return f"{t['key']}={t['value']}:{t['effect']}" if t.get("value") else f"{t['key']}:{t['effect']}"


def _handoff_file(plan: Plan, state: WaveState, kind: str, name: str) -> str:
    for obj in render_pool_handoffs(plan, state):
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return f"handoff/{state.dir_name}/{file_name(obj)}"
    raise KeyError(name)


def _drain(plan: Plan, pool: NodePool, nxt: str) -> list[Action]:
    """Empty a legacy pool of device-plugin GPU pods before wave `nxt` moves it to DRA."""
    if pool.provisioner is not None and pool.provisioner.kind == "karpenter":
        return [
            Action(
                f"Pool `{pool.name}` ({pool_selector(pool).describe()}) is drained by Karpenter when wave `{nxt}` "
                "replaces its nodes (each drifted node is drained, respecting PodDisruptionBudgets). Check that no pod "
                "blocks the replacement with `karpenter.sh/do-not-disrupt`:",
                (
                    _each_node(
                        pool,
                        "kubectl get pods -A --field-selector spec.nodeName=$n -o json | jq -r "
                        '\'.items[] | select(.metadata.annotations["karpenter.sh/do-not-disrupt"] == "true") '
                        '| "\\(.metadata.namespace)/\\(.metadata.name)"\'',
                    ),
                ),
            )
        ]
    nodes = _target(pool)
    return [
        Action(
            f"Drain pool `{pool.name}` before wave `{nxt}` moves it to DRA: its device-plugin allocations end with "
            "the move, and a GPU pod left running would share its GPU with a DRA claim.",
            (f"kubectl cordon {nodes}", f"kubectl drain {nodes} --ignore-daemonsets --delete-emptydir-data"),
        ),
        Action(
            "Check: no running pod on those nodes holds `nvidia.com/gpu` (prints nothing).",
            (_each_node(pool, _GPU_PODS),),
        ),
    ]


def _karpenter_jq(plan: Plan, pool: NodePool, mode: Mode) -> str:
    labels = node_labels(plan.platform, pool, "dra")
    taint = json.dumps(pool_taint(plan.platform, pool), separators=(",", ":"))
    if mode == "dra":
        program = (
            f".spec.template.metadata.labels += {json.dumps(labels, separators=(',', ':'))}"
            f" | .spec.template.spec.taints = (((.spec.template.spec.taints // []) - [{taint}]) + [{taint}])"
        )
    else:
        removed = ", ".join(
            f".spec.template.metadata.labels[{json.dumps(k)}]"
            for k in labels
            if k != plan.platform.mode_label_key
        )
        program = (
            f'del({removed}) | .spec.template.metadata.labels[{json.dumps(plan.platform.mode_label_key)}] = "legacy"'
            f" | .spec.template.spec.taints = ((.spec.template.spec.taints // []) - [{taint}])"
        )
    name = pool.provisioner.name if pool.provisioner else pool.name
    return f"kubectl get nodepool {name} -o json | jq '{program}' | kubectl replace -f -"


def _provisioner_move(plan: Plan, state: WaveState, pool: NodePool, mode: Mode) -> list[Action]:
    """A provisioner pool changes allocator by changing its template: its nodes are replaced."""
    assert pool.provisioner is not None
    kind, name = pool.provisioner.kind, pool.provisioner.name
    handoff = _handoff_file(plan, state, "NodePoolHandoff", pool.name)
    labels = ", ".join(f"`{k}={v}`" for k, v in node_labels(plan.platform, pool, mode).items())
    verb = (
        f"carry {labels} and the taint `{_taint(plan, pool)}`"
        if mode == "dra"
        else f"carry {labels} and lose the taint `{_taint(plan, pool)}`"
    )
    if kind != "karpenter":
        return [
            Action(
                f"Hand-off `{handoff}`: the owner of {kind} `{name}` changes its node labels and taints with their own "
                f"tooling so that its nodes {verb}; nodes that do not take them in place are replaced by the group's "
                "rolling update. Check every node of the group:",
                (
                    f"kubectl get nodes {_target(pool)} -L {DRA_PLUGIN_LABEL},{DEVICE_PLUGIN_LABEL},{plan.platform.mode_label_key}",
                ),
            )
        ]
    patch = _handoff_file(plan, state, "NodePool", name)
    return [
        Action(
            f"Hand-off `{patch}` (Karpenter NodePool `{name}`): its template must {verb}. The taint list is a whole-list "
            "field: keep the pool's other taints. If the NodePool lives in Git, commit the change there; otherwise:",
            (_karpenter_jq(plan, pool, mode),),
        ),
        Action(
            "Karpenter hashes `spec.template` (labels and taints included), so every NodeClaim of the pool drifts and "
            "is replaced within the pool's disruption budgets (kubernetes-sigs/karpenter v1.14.1 "
            "`pkg/apis/v1/nodepool.go` `Hash`, `pkg/controllers/nodeclaim/disruption/drift.go`). Wait until no "
            "NodeClaim is drifted, then check every node of the pool:",
            (
                f"kubectl get nodeclaims {_target(pool)} -o custom-columns="
                "'NAME:.metadata.name,NODE:.status.nodeName,DRIFTED:.status.conditions[?(@.type==\"Drifted\")].status'",
                f"kubectl get nodes {_target(pool)} -L {DRA_PLUGIN_LABEL},{DEVICE_PLUGIN_LABEL},{plan.platform.mode_label_key}",
            ),
        ),
    ]


def _to_dra(plan: Plan, a: WaveState, b: WaveState, pool: NodePool, steps: Steps) -> None:
    ns = plan.platform.dra_driver.namespace
    if pool.provisioner is None:
        handoff = _handoff_file(plan, b, "NodePoolHandoff", pool.name)
        steps.before.append(
            Action(
                f"Pool `{pool.name}` moves to DRA. Taint its nodes first (hand-off `{handoff}`; taints are a whole-list "
                "field of the node's owner, never patched by GitOps): workloads without the toleration stay off them.",
                (f"kubectl taint nodes {_target(pool)} {_taint(plan, pool)} --overwrite",),
            )
        )
        if pool.name in a.drains:
            steps.before.append(
                Action(
                    f"Pool `{pool.name}` was drained in wave `{a.name}`; check it still is:",
                    (_each_node(pool, _GPU_PODS),),
                )
            )
        else:
            steps.before += _drain(plan, pool, b.name)
    else:
        # With the driver already running, the new nodes may come up before the sync; in the wave
        # that installs the driver they must wait for it.
        phase = steps.before if a.driver_installed else steps.after
        phase += _provisioner_move(plan, b, pool, "dra")
    steps.after += [
        Action(
            f"Pool `{pool.name}`: the nodes carry `{DRA_PLUGIN_LABEL}=true` and `{DEVICE_PLUGIN_LABEL}=false`, the device "
            f"plugin has left them (`{_GPU}` allocatable empty or 0) and a DRA kubelet plugin runs on each:",
            (
                f"kubectl get nodes {_target(pool)} -L {DRA_PLUGIN_LABEL},{DEVICE_PLUGIN_LABEL},{plan.platform.mode_label_key}",
                _each_node(
                    pool,
                    "echo $n $(kubectl get node $n -o jsonpath='{.status.allocatable.nvidia\\.com/gpu}'); "
                    f"kubectl -n {ns} get pods -o wide --field-selector spec.nodeName=$n",
                ),
            ),
        ),
        Action(
            f"Pool `{pool.name}`: the driver publishes one ResourceSlice per node with the declared product and count:",
            (_each_node(pool, "kubectl get resourceslices --field-selector spec.nodeName=$n -o yaml"),),
        ),
    ]
    if pool.provisioner is None:
        steps.after.append(
            Action(
                f"Let workloads that tolerate the DRA taint back on pool `{pool.name}`:",
                (f"kubectl uncordon {_target(pool)}",),
            )
        )


def _to_legacy(plan: Plan, a: WaveState, b: WaveState, pool: NodePool, steps: Steps) -> None:
    cordon = () if pool.provisioner is not None else (f"kubectl cordon {_target(pool)}",)
    steps.before += [
        Action(
            f"Pool `{pool.name}` returns to the device plugin. First its DRA claims must go while the DRA kubelet plugin "
            "still runs (the owners' steps under Hand-offs), then check that no claim is allocated on its nodes (prints "
            "nothing; the `rollback-safety` gate refuses the sync otherwise):",
            (*cordon, _each_node(pool, _NODE_CLAIMS)),
        )
    ]
    if pool.provisioner is not None:
        steps.after += _provisioner_move(plan, b, pool, "legacy")
    else:
        steps.after.append(
            Action(
                f"The sync removes `{DRA_PLUGIN_LABEL}` and `{DEVICE_PLUGIN_LABEL}=false`; the GPU Operator fills the absent "
                f"labels and the device plugin returns (`{_GPU}` allocatable again). Then remove the DRA taint (hand-off "
                f"`{_handoff_file(plan, b, 'NodePoolHandoff', pool.name)}`) and uncordon:",
                (
                    f"kubectl get nodes {_target(pool)} -L {DEVICE_PLUGIN_LABEL},{plan.platform.mode_label_key}",
                    f"kubectl taint nodes {_target(pool)} {_taint(plan, pool)}-",
                    f"kubectl uncordon {_target(pool)}",
                ),
            )
        )


def _unfindable(pool: NodePool) -> Action:
    return Action(
        f"Pool `{pool.name}`: the spec gives no way to find its nodes ({pool_selector(pool).describe()}); set "
        "`provisioner.cloud` or `provisioner.nodeLabels`, then render again: no command here can select them."
    )


def pool_steps(plan: Plan, a: WaveState, b: WaveState, steps: Steps) -> None:
    """Add the steps of every pool that changes allocator from `a` to `b`, and of `b`'s drains."""
    for pool in plan.platform.node_pools:
        before, after = a.pool_modes[pool.name], b.pool_modes[pool.name]
        if before == after:
            continue
        if not pool_selector(pool).resolvable:
            steps.before.append(_unfindable(pool))
            continue
        (_to_dra if after == "dra" else _to_legacy)(plan, a, b, pool, steps)
    if b.drains and b.index > a.index:
        nxt = plan.waves[b.index + 1].name
        for name in b.drains:
            pool = plan.pools[name]
            steps.after += _drain(plan, pool, nxt) if pool_selector(pool).resolvable else [_unfindable(pool)]
