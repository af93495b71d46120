"""Runbook commands for the pool steps of a transition, and for the pools a drain wave empties.

The steps and their order are the plan's (`plan.steps`: taint, cordon, drain-gpu-pods,
release-claims, apply-handoff, uncordon, untaint); this module gives each the commands an operator
runs. Static pools are named by their node names; provisioner pools only by their label selector,
and they change allocator by changing their template (Karpenter replaces drifted nodes), never by
GitOps.
"""

from __future__ import annotations

import json
import shlex

from gpuplatform.gates.nodes import pool_selector
from gpuplatform.gates.programs import prelude_for
from gpuplatform.labels import (
    DEVICE_PLUGIN_DEPLOY_LABEL,
    DRA_PLUGIN_LABEL,
    GPU_RESOURCE,
    NVIDIA_RESOURCE_PREFIX,
)
from gpuplatform.model.nodes import NodePool
from gpuplatform.plan.steps import Step
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.cloud_commands import CLOUD_VARIABLES, jq_with_defs, node_group_update
from gpuplatform.render.handoff import render_pool_handoffs
from gpuplatform.render.meta import file_name
from gpuplatform.render.nodes import pool_taint
from gpuplatform.render.runbook_actions import Action

__all__ = [
    "CHECK_FAILED",
    "GPU_PODS",
    "HOLDS_GPU_JQ",
    "HOLDS_TEXT",
    "POOL_ACTIONS",
    "check_each_node",
    "each_node",
    "handoff_file",
    "handoff_spec",
    "karpenter_taint_command",
    "node_target",
    "pool_actions",
    "pool_checks",
    "read_check",
]

#: What a pod holds a GPU by, for every drain and rollback check: the gates' own jq definition
#: (`holds_gpu`: any `nvidia.com/*` request or limit of any container, or a resource claim).
_HOLDERS = ".items[] | select(holds_gpu) | nsname"
HOLDS_GPU_JQ = " ".join((prelude_for(_HOLDERS) + _HOLDERS).split())
HOLDS_TEXT = (
    "holds a GPU: any `nvidia.com/*` request or limit (whole GPUs, MIG slices, time-sliced or renamed "
    "resources) or a resource claim"
)
#: What a check prints when it could not read what it judges: a check whose pass is "prints nothing"
#: must never pass by reading nothing.
CHECK_FAILED = "CHECK FAILED:"


def _listed(program: str) -> str:
    """jq: `program` over a `kubectl get -o json` list, an error (so the check says so) for anything else."""
    return f'if (.items | type) != "array" then error("kubectl printed no list") else {program} end'


def read_check(read: str, program: str, what: str, jq_args: str = "") -> str:
    """`read` (kubectl, exit 0), then jq `program` (with the gates' definitions it uses) over the
    list it printed: the findings, or a `CHECK FAILED:` line when kubectl failed or printed no list."""
    jq_program = " ".join((prelude_for(program) + _listed(program)).split())
    return (
        f'out=$({read}) && [ -n "$out" ] && printf \'%s\\n\' "$out" | jq -r{jq_args} {shlex.quote(jq_program)} '
        f'|| echo "{CHECK_FAILED} {what} could not be read"'
    )


GPU_PODS = read_check(
    "kubectl get pods -A --field-selector spec.nodeName=$n,status.phase!=Succeeded,status.phase!=Failed -o json",
    _HOLDERS,
    "the pods on $n",
)
_NODE_CLAIMS = read_check(
    "kubectl get resourceclaims -A -o json",
    ".items[] | select(.status.allocation != null) | select([.status.allocation.devices.results[]?.pool] "
    '| index($n)) | "\\(.metadata.namespace)/\\(.metadata.name)"',
    "the resource claims",
    ' --arg n "$n"',
)


def node_target(pool: NodePool) -> str:
    """kubectl arguments that select the pool's nodes: names, or `-l <label>=<value>` (gates.nodes)."""
    return shlex.join(pool_selector(pool).kubectl_args())


def each_node(pool: NodePool, command: str) -> str:
    """`command` (reading `$n`) for every node of the pool, found the way the cluster knows it."""
    nodes = (
        " ".join(pool.nodes)
        if pool.provisioner is None
        else f"$(kubectl get nodes {node_target(pool)} -o jsonpath='{{.items[*].metadata.name}}')"
    )
    return f"for n in {nodes}; do {command}; done"


def check_each_node(pool: NodePool, check: str) -> str:
    """`check` (reading `$n`, printing only findings) for every node of the pool, and a
    `CHECK FAILED:` line when the nodes cannot be listed or fewer are found than the pool has
    (every named node of a static pool; a provisioner pool's `minNodes`): a check that prints nothing
    has read every node it judges."""
    selector = pool_selector(pool)
    count, test = (len(selector.names), "-eq") if selector.names else (selector.min_nodes, "-ge")
    return (
        f"if nodes=$(kubectl get nodes {node_target(pool)} -o name); then set -- $nodes; "
        f'[ $# {test} {count} ] || echo "{CHECK_FAILED} pool {pool.name}: $# node(s) found, '
        f'{"" if test == "-eq" else "at least "}{count} expected"; '
        f"for n in $nodes; do n=${{n#node/}}; {check}; done; "
        f'else echo "{CHECK_FAILED} pool {pool.name}: its nodes could not be listed"; fi'
    )


def _taint(plan: Plan, pool: NodePool) -> str:
    t = pool_taint(plan.platform, pool)
    return f"{t['key']}={t['value']}:{t['effect']}" if t.get("value") else f"{t['key']}:{t['effect']}"


def handoff_file(plan: Plan, state: WaveState, kind: str, name: str) -> str:
    for obj in render_pool_handoffs(plan, state):
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return f"handoff/{state.dir_name}/{file_name(obj)}"
    raise KeyError(name)


def _drain(plan: Plan, pool: NodePool, nxt: str, *, cordon: bool = True) -> list[Action]:
    """Empty a legacy pool of device-plugin GPU pods before wave `nxt` moves it to DRA."""
    if pool.provisioner is not None and pool.provisioner.kind == "karpenter":
        return [
            Action(
                f"Pool `{pool.name}` ({pool_selector(pool).describe()}) is drained by Karpenter when wave `{nxt}` "
                "replaces its nodes (each drifted node is drained, respecting PodDisruptionBudgets). Check that no pod "
                "blocks the replacement with `karpenter.sh/do-not-disrupt`:",
                (
                    check_each_node(
                        pool,
                        read_check(
                            "kubectl get pods -A --field-selector spec.nodeName=$n -o json",
                            '.items[] | select(.metadata.annotations["karpenter.sh/do-not-disrupt"] == "true") '
                            '| "\\(.metadata.namespace)/\\(.metadata.name)"',
                            "the pods on $n",
                        ),
                    ),
                ),
            )
        ]
    nodes = node_target(pool)
    return [
        Action(
            f"Drain pool `{pool.name}` before wave `{nxt}` moves it to DRA: its device-plugin allocations end with "
            "the move, and a GPU pod left running would share its GPU with a DRA claim.",
            (
                *((f"kubectl cordon {nodes}",) if cordon else ()),
                f"kubectl drain {nodes} --ignore-daemonsets --delete-emptydir-data",
            ),
        ),
        Action(
            f"Check: no live pod on those nodes {HOLDS_TEXT} (prints nothing).",
            (check_each_node(pool, GPU_PODS),),
        ),
    ]


def handoff_spec(plan: Plan, state: WaveState, pool: NodePool) -> dict[str, object]:
    """The NodePoolHandoff spec of `pool` in `state`: the labels and taints its nodes carry there."""
    for obj in render_pool_handoffs(plan, state):
        if obj["kind"] == "NodePoolHandoff" and obj["metadata"]["name"] == pool.name:
            spec: dict[str, object] = obj["spec"]
            return spec
    raise KeyError(pool.name)


def karpenter_taint_command(plan: Plan, state: WaveState, pool: NodePool) -> str:
    """Add (DRA) or remove (legacy) the pool's taint in its live NodePool, keeping the owner's other
    taints: a JSON patch (RFC 6902) built from the live list, whose `test` of that list refuses it if
    the taints changed in between. Not a `test` of `resourceVersion`: Karpenter writes the NodePool
    on its own (the template's hash annotation right after the labels' merge patch, its status as
    nodes come and go), so such a patch would be refused at random (found by the rehearsal)."""
    assert pool.provisioner is not None
    name, taint = pool.provisioner.name, json.dumps(pool_taint(plan.platform, pool), separators=(",", ":"))
    rest = f"((.spec.template.spec.taints // [] | checked_taints) - [{taint}])"
    value = f"{rest} + [{taint}]" if state.pool_modes[pool.name] == "dra" else rest
    program = (
        f'if .kind != "NodePool" or .metadata.name != "{name}" or (.spec.template.spec | type) != "object" '
        f'then error("kubectl printed no NodePool {name}: nothing changed") else '
        "(.spec.template.spec.taints | if . == null then [] "
        'else [{op: "test", path: "/spec/template/spec/taints", value: .}] end) + '
        f'[{{op: "add", path: "/spec/template/spec/taints", value: ({value})}}] end'
    )
    return (
        f'live=$(kubectl get nodepool {name} -o json) && [ -n "$live" ] && patch=$(printf \'%s\\n\' "$live" '
        f'| jq -ec {shlex.quote(jq_with_defs(program))}) && [ -n "$patch" ] '
        f'&& kubectl patch nodepool {name} --type json -p "$patch"'
    )


def _provisioner_move(plan: Plan, a: WaveState, b: WaveState, pool: NodePool) -> list[Action]:
    """A provisioner pool changes allocator by changing its template: its nodes are replaced."""
    assert pool.provisioner is not None
    kind, name, state, mode = pool.provisioner.kind, pool.provisioner.name, b, b.pool_modes[pool.name]
    handoff = handoff_file(plan, state, "NodePoolHandoff", pool.name)
    spec = handoff_spec(plan, state, pool)
    spec_labels, removed = spec["labels"], spec["removeLabels"]
    assert isinstance(spec_labels, dict) and isinstance(removed, list)
    labels = ", ".join(f"`{k}={v}`" for k, v in spec_labels.items())
    lose = "".join(f", lose the label `{k}`" for k in removed)
    verb = (
        f"carry {labels}{lose} and the taint `{_taint(plan, pool)}`"
        if mode == "dra"
        else f"carry {labels}{lose} and lose the taint `{_taint(plan, pool)}`"
    )
    if pool.selector is not None:
        return [_selected_nodes_update(plan, state, pool, handoff, verb)]
    if kind == "node-group" and pool.provisioner.cloud is not None:
        return [_cloud_update(plan, state, pool, handoff, verb)]
    if kind != "karpenter":
        return [
            Action(
                f"Hand-off `{handoff}`: the owner of {kind} `{name}` changes its node labels and taints with their own "
                f"tooling so that its nodes {verb} (the group's other labels and taints stay as they are: a label "
                "left behind would start the allocator of another wave on every node the group creates); nodes that do not take them in place are replaced by the group's "
                "rolling update. Check every node of the group:",
                (
                    f"kubectl get nodes {node_target(pool)} -L {DRA_PLUGIN_LABEL},{DEVICE_PLUGIN_DEPLOY_LABEL},{plan.platform.mode_label_key}",
                ),
            )
        ]
    patch = handoff_file(plan, state, "NodePool", name)
    labels_command = f"kubectl patch nodepool {name} --type merge --patch-file {patch}"
    first, then = karpenter_taint_command(plan, b, pool), labels_command
    if mode != "dra":
        first, then = then, first
    commands = (f"{first} && {then}",)
    return [
        Action(
            f"Hand-off `{patch}` (Karpenter NodePool `{name}`, a JSON merge patch of its template labels): its "
            f"template must {verb}. What each replaces: the merge patch changes only the template labels it names "
            "(`null` removes one) and keeps the owner's others; `spec.template.spec.taints` is an atomic list a "
            "merge patch would replace whole, so the taint is a JSON patch that replaces the list with the live one, "
            "the pool's taint added or removed by key and effect: the owner's other taints stay. The more "
            "restrictive change goes "
            "first (the taint before the DRA labels, the legacy labels before the taint goes), so a node replaced "
            "between the two never runs both allocators without the taint. If the NodePool lives in Git, commit the "
            "change there; otherwise:",
            commands,
        ),
        Action(
            "Karpenter hashes `spec.template` (labels and taints included), so every NodeClaim of the pool drifts and "
            "is replaced within the pool's disruption budgets (kubernetes-sigs/karpenter v1.14.1 "
            "`pkg/apis/v1/nodepool.go` `Hash`, `pkg/controllers/nodeclaim/disruption/drift.go`). Wait until every "
            f"node of the pool carries `{plan.platform.mode_label_key}={mode}` (each drifted node replaced and "
            "deleted), then check every node of the pool:",
            (
                _until_replaced(plan, pool, mode),
                f"kubectl get nodeclaims {node_target(pool)} -o custom-columns="
                "'NAME:.metadata.name,NODE:.status.nodeName,DRIFTED:.status.conditions[?(@.type==\"Drifted\")].status'",
                f"kubectl get nodes {node_target(pool)} -L {DRA_PLUGIN_LABEL},{DEVICE_PLUGIN_DEPLOY_LABEL},{plan.platform.mode_label_key}",
            ),
        ),
    ]


def _until_replaced(plan: Plan, pool: NodePool, mode: str) -> str:
    """Wait while a node of the pool lacks the wave's mode label: the old nodes are still there."""
    [flag, selector] = pool_selector(pool).kubectl_args()
    stale = shlex.join([flag, f"{selector},{plan.platform.mode_label_key}!={mode}"])
    return f'until stale=$(kubectl get nodes {stale} -o name) && [ -z "$stale" ]; do sleep 30; done'


def _until_no_slices(target: str) -> str:
    """Wait until no node of `target` publishes a ResourceSlice (its DRA kubelet plugin is gone)."""
    return (
        f'nodes=$(kubectl get nodes {target} -o name) && [ -n "$nodes" ] && for n in $nodes; do '
        "until slices=$(kubectl get resourceslices --field-selector spec.nodeName=${n#node/} -o name) "
        '&& [ -z "$slices" ]; do sleep 5; done; done'
    )


def _until_no_device_plugin(target: str) -> str:
    """Wait until no node of `target` advertises an `nvidia.com/*` resource (its device plugin is gone)."""
    advertised = (
        "[(.status.allocatable // {}) | to_entries[] "
        f'| select((.key | startswith("{NVIDIA_RESOURCE_PREFIX}")) and ((.value | tostring) != "0")) | .key] | join(",")'
    )
    return (
        f'nodes=$(kubectl get nodes {target} -o name) && [ -n "$nodes" ] && for n in $nodes; do '
        f"until left=$(kubectl get $n -o json | jq -r {shlex.quote(advertised)}) "
        '&& [ -z "$left" ]; do sleep 5; done; done'
    )


def _selected_nodes_update(plan: Plan, state: WaveState, pool: NodePool, handoff: str, verb: str) -> Action:
    """A selector pool shares its group's template with another pool: its nodes are labelled one by one.

    A node group's (or MachineDeployment's) labels and taints reach every node it creates, so the
    group-wide command of `_cloud_update` would move the other pools of the group as well. Like the
    static pools' allocator switch, one allocator leaves before the other starts: to DRA, the DRA
    kubelet plugin's label is set once the device plugin is gone (by these commands, so that the
    pool moves even when the sync's `enable` Job ran before them); back, the plugin's label goes
    first and the device plugin returns once its ResourceSlices are gone.
    """
    assert pool.provisioner is not None
    spec = handoff_spec(plan, state, pool)
    labels, removed = spec["labels"], spec["removeLabels"]
    assert isinstance(labels, dict) and isinstance(removed, list)
    target = node_target(pool)
    taint = _taint(plan, pool)
    rest = [shlex.quote(f"{k}={v}") for k, v in labels.items() if k != DRA_PLUGIN_LABEL]
    rest += [shlex.quote(f"{k}-") for k in removed if k != DRA_PLUGIN_LABEL]
    label = f"kubectl label nodes {target} --overwrite " + " ".join(rest)
    if state.pool_modes[pool.name] == "dra":
        plugin = shlex.quote(f"{DRA_PLUGIN_LABEL}={labels.get(DRA_PLUGIN_LABEL, 'true')}")
        commands: tuple[str, ...] = (
            f"kubectl taint nodes {target} --overwrite {shlex.quote(taint)}",
            f"{label} && {_until_no_device_plugin(target)} && kubectl label nodes {target} --overwrite {plugin}",
        )
        order = (
            f"the taint first, `{DRA_PLUGIN_LABEL}=true` once no node advertises a device-plugin resource: "
            "whenever the sync runs (its `enable` Job does the same for the nodes it finds)"
        )
    else:
        commands = (
            f"kubectl label nodes {target} {DRA_PLUGIN_LABEL}-",
            f"{_until_no_slices(target)} && {label} && {{ kubectl taint nodes {target} {shlex.quote(taint + '-')} || true; }}",
        )
        order = "the DRA kubelet plugin's label first, the rest once the node publishes no ResourceSlice"
    return Action(
        f"Hand-off `{handoff}`: pool `{pool.name}` is selected inside {pool.provisioner.kind} "
        f"`{pool.provisioner.name}` by a label selector, so the group's template (shared with the group's other "
        f"pools) is not changed: the selected nodes are labelled and tainted in place so that they {verb} "
        f"({order}). A node the group creates later carries the template's labels, not these: label it the "
        "same way (as you set its `nvidia.com/mig.config`) before it takes GPU work, and check every node:",
        (
            *commands,
            f"kubectl get nodes {target} -L {DRA_PLUGIN_LABEL},{DEVICE_PLUGIN_DEPLOY_LABEL},{plan.platform.mode_label_key}",
        ),
    )


def _cloud_update(plan: Plan, state: WaveState, pool: NodePool, handoff: str, verb: str) -> Action:
    """The cloud's commands that give a node group the hand-off (`render/cloud_commands.py`), in two
    updates: a cloud applies a group's labels to its running nodes in place (GKE "Update Kubernetes
    node labels and taints for node pools"), so one allocator leaves before the other starts, as in
    the static pools' allocator switch. To DRA, the taint and the legacy labels' removal first, the
    DRA kubelet plugin's label once no node advertises a device-plugin resource; back, the plugin's
    label first and the rest once no node publishes a ResourceSlice."""
    assert pool.provisioner is not None and pool.provisioner.cloud is not None
    cloud, group, spec = pool.provisioner.cloud, pool.provisioner.name, handoff_spec(plan, state, pool)
    labels, removed = dict(spec["labels"]), list(spec["removeLabels"])  # type: ignore[call-overload]
    taints, gone = spec["taints"], spec["removeTaints"]
    rest = {k: v for k, v in labels.items() if k != DRA_PLUGIN_LABEL}
    others = [k for k in removed if k != DRA_PLUGIN_LABEL]
    target = node_target(pool)
    if state.pool_modes[pool.name] == "dra":
        first = node_group_update(cloud, group, rest, others, taints, gone, taint_first=True)  # type: ignore[arg-type]
        wait, order = _until_no_device_plugin(target), "the device plugin gone from every node"
        plugin = {k: v for k, v in labels.items() if k == DRA_PLUGIN_LABEL}
        then = node_group_update(cloud, group, plugin, [], [], []) if plugin else ()
    else:
        plugin_gone = [k for k in removed if k == DRA_PLUGIN_LABEL]
        first = node_group_update(cloud, group, {}, plugin_gone, [], []) if plugin_gone else ()
        wait, order = _until_no_slices(target), "no ResourceSlice left on any node"
        then = node_group_update(cloud, group, rest, others, taints, gone, taint_first=False)  # type: ignore[arg-type]
    variables = ", ".join(f"`{v}`" for v in CLOUD_VARIABLES[cloud])
    merge = (
        "EKS adds, updates and removes by key"
        if cloud == "eks"
        else "the command replaces the group's whole label set and taint list, so both are read from the live group "
        "first and only the hand-off's keys change"
    )
    return Action(
        f"Hand-off `{handoff}` ({cloud.upper()} node group `{group}`): its nodes must {verb}. The cloud applies a "
        f"group's labels to its running nodes in place, so the change is two updates, one allocator leaving before "
        f"the other starts: the `{DRA_PLUGIN_LABEL}` label {'last' if state.pool_modes[pool.name] == 'dra' else 'first'}, "
        f"after the wait for {order}. Set {variables}, then change the group's configuration ({merge}; the taint "
        "goes on before the DRA labels and comes off after the legacy ones). New nodes of the group get it; nodes "
        "that do not take it in place are replaced by the group's rolling update. Check every node of the group:",
        (
            # one chain: a failed update or wait stops what follows (a pasted block runs every line)
            " && ".join((*first, wait, *then)),
            f"kubectl get nodes {target} -L {DRA_PLUGIN_LABEL},{DEVICE_PLUGIN_DEPLOY_LABEL},{plan.platform.mode_label_key}",
        ),
    )


def _unfindable(pool: NodePool) -> Action:
    return Action(
        f"Pool `{pool.name}`: the spec gives no way to find its nodes ({pool_selector(pool).describe()}); set "
        "`provisioner.cloud` or `provisioner.nodeLabels`, then render again: no command here can select them."
    )


def _taint_nodes(plan: Plan, b: WaveState, pool: NodePool) -> list[Action]:
    handoff = handoff_file(plan, b, "NodePoolHandoff", pool.name)
    return [
        Action(
            f"Pool `{pool.name}`: the taint of hand-off `{handoff}` (taints are a whole-list field of the node's "
            "owner, never patched by GitOps); workloads without the toleration stay off the DRA nodes:",
            (f"kubectl taint nodes {node_target(pool)} {_taint(plan, pool)} --overwrite",),
        )
    ]


def _cordon(plan: Plan, b: WaveState, pool: NodePool) -> list[Action]:
    return [Action(f"Pool `{pool.name}`:", (f"kubectl cordon {node_target(pool)}",))]


def _drain_gpu_pods(plan: Plan, a: WaveState, b: WaveState, pool: NodePool) -> list[Action]:
    if pool.name in a.drains:
        return [
            Action(
                f"Pool `{pool.name}` was drained in wave `{a.name}`; check that no live pod there {HOLDS_TEXT} "
                "(prints nothing):",
                (check_each_node(pool, GPU_PODS),),
            )
        ]
    return _drain(plan, pool, b.name, cordon=False)


def _release_claims(plan: Plan, b: WaveState, pool: NodePool) -> list[Action]:
    return [
        Action(
            f"Pool `{pool.name}`: no claim may stay allocated on its nodes (the `rollback-safety` gate refuses the "
            f"sync otherwise), and no live pod on them {HOLDS_TEXT} (each prints nothing):",
            (check_each_node(pool, _NODE_CLAIMS), check_each_node(pool, GPU_PODS)),
        )
    ]


def _untaint(plan: Plan, b: WaveState, pool: NodePool) -> list[Action]:
    handoff = handoff_file(plan, b, "NodePoolHandoff", pool.name)
    return [
        Action(
            f"Pool `{pool.name}` (hand-off `{handoff}`):",
            (f"kubectl taint nodes {node_target(pool)} {_taint(plan, pool)}-",),
        )
    ]


def _uncordon(plan: Plan, b: WaveState, pool: NodePool) -> list[Action]:
    return [Action(f"Pool `{pool.name}`:", (f"kubectl uncordon {node_target(pool)}",))]


def _drain_pool(plan: Plan, b: WaveState, pool: NodePool) -> list[Action]:
    """Arriving at a drain wave: empty a pool the next wave moves."""
    return _drain(plan, pool, plan.waves[b.index + 1].name)


#: The manual pool actions of `plan.steps` this module gives commands for.
POOL_ACTIONS = (
    "taint",
    "cordon",
    "drain-gpu-pods",
    "drain-pools",
    "release-claims",
    "apply-handoff",
    "untaint",
    "uncordon",
)


def pool_actions(plan: Plan, a: WaveState, b: WaveState, step: Step) -> list[Action]:
    """The commands of one manual pool step of the transition from `a` to `b`, pool by pool."""
    actions: list[Action] = []
    for name in step.pools:
        # the pool as it is while the step runs: with the fewer nodes of either wave when a takeover
        # changes what it gave between them (a check counts at least that many)
        pool = plan.pool_in(max((a, b), key=lambda s: plan.given(s, name)), name)
        if not pool_selector(pool).resolvable:
            actions.append(_unfindable(pool))
        elif step.action == "drain-gpu-pods":
            actions += _drain_gpu_pods(plan, a, b, pool)
        elif step.action == "apply-handoff":
            actions += _provisioner_move(plan, a, b, pool)
        else:
            render = {
                "taint": _taint_nodes,
                "cordon": _cordon,
                "drain-pools": _drain_pool,
                "release-claims": _release_claims,
                "untaint": _untaint,
                "uncordon": _uncordon,
            }[step.action]
            actions += render(plan, b, pool)
    return actions


def pool_checks(plan: Plan, a: WaveState, b: WaveState) -> list[Action]:
    """After the sync: every pool that moved has the allocator the target wave gives it."""
    ns, mode_label = plan.platform.dra_driver.namespace, plan.platform.mode_label_key
    actions: list[Action] = []
    for pool in plan.platform.node_pools:
        if a.pool_modes[pool.name] == b.pool_modes[pool.name] or not pool_selector(pool).resolvable:
            continue
        if b.pool_modes[pool.name] == "dra":
            actions += [
                Action(
                    f"Pool `{pool.name}`: the nodes carry `{DRA_PLUGIN_LABEL}=true` and `{DEVICE_PLUGIN_DEPLOY_LABEL}=false`, "
                    f"the device plugin has left them (`{GPU_RESOURCE}` allocatable empty or 0) and a DRA kubelet plugin runs "
                    "on each:",
                    (
                        f"kubectl get nodes {node_target(pool)} -L {DRA_PLUGIN_LABEL},{DEVICE_PLUGIN_DEPLOY_LABEL},{mode_label}",
                        each_node(
                            pool,
                            "echo $n $(kubectl get node $n -o jsonpath='{.status.allocatable.nvidia\\.com/gpu}'); "
                            f"kubectl -n {ns} get pods -o wide --field-selector spec.nodeName=$n",
                        ),
                    ),
                ),
                Action(
                    f"Pool `{pool.name}`: the driver publishes one ResourceSlice per node with the declared product "
                    "and count:",
                    (
                        each_node(
                            pool, "kubectl get resourceslices --field-selector spec.nodeName=$n -o yaml"
                        ),
                    ),
                ),
            ]
        else:
            actions.append(
                Action(
                    f"Pool `{pool.name}`: `{DRA_PLUGIN_LABEL}` is gone (the release Job removed it) and the device "
                    f"plugin is back (`{GPU_RESOURCE}` allocatable again):",
                    (
                        f"kubectl get nodes {node_target(pool)} -L {DRA_PLUGIN_LABEL},{DEVICE_PLUGIN_DEPLOY_LABEL},{mode_label}",
                        each_node(
                            pool,
                            "echo $n $(kubectl get node $n -o jsonpath='{.status.allocatable.nvidia\\.com/gpu}')",
                        ),
                    ),
                )
            )
    return actions
