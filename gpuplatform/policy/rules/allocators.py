"""One allocator per GPU: nodes in one pool, labels that never enable both, one class per extended resource."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpuplatform.charts.model import render_dra_driver
from gpuplatform.gates.nodes import overlap, pool_selectors
from gpuplatform.labels import DEVICE_PLUGIN_DEPLOY_LABEL, DRA_PLUGIN_LABEL, VALIDATION_LABEL
from gpuplatform.model.nodes import NodePool
from gpuplatform.policy.registry import Finding, RuleContext, rule
from gpuplatform.render.nodes import pool_taint
from gpuplatform.render.tolerations import tolerates
from gpuplatform.simulate.rendered import DRA_CHARTS

__all__: list[str] = []


@rule(
    "GP101",
    "error",
    "a node is in two pools",
    """
A node listed by two pools would be labelled by both; if one pool is DRA and the other legacy in
some wave, the device plugin and the DRA kubelet plugin both claim its GPUs. Every node belongs to
exactly one pool.
""",
)
def node_in_two_pools(ctx: RuleContext) -> Iterator[Finding]:
    seen: dict[str, str] = {}
    for i, pool in enumerate(ctx.platform.node_pools):
        for j, node in enumerate(pool.nodes):
            if node in seen:
                yield Finding(
                    f"spec.nodePools[{i}].nodes[{j}]",
                    f"node {node!r} of pool {pool.name!r} is also in pool {seen[node]!r}",
                    "list every node in exactly one pool",
                )
            else:
                seen[node] = pool.name


def _owner(pool: NodePool) -> tuple[str, str | None, str] | None:
    """The provisioner that made a pool's nodes, when the pool finds them by the provisioner's own
    label (a node has one provisioner, so pools of two such never share a node); None when it finds
    them by `nodeLabels`, which nodes of any provisioner may carry."""
    p = pool.provisioner
    return None if p is None or p.node_labels else (p.kind, p.cloud, p.name)


def _where(j: int, pool: NodePool) -> str:
    """The field of pool `j` that selects its nodes: its `selector`, its `nodeLabels`, or the pool."""
    if pool.selector is not None:
        return f"spec.nodePools[{j}].selector"
    if pool.provisioner is not None and pool.provisioner.node_labels:
        return f"spec.nodePools[{j}].provisioner.nodeLabels"
    return f"spec.nodePools[{j}]"


@rule(
    "GP103",
    "error",
    "two pools' selectors can select one node",
    """
Pools of one provisioner (one node group, NodePool or MachineDeployment), told apart by a
`selector`, must be disjoint: a node both select would be labelled, drained and counted by both
(pools of different provisioners found by their provisioners' own labels are: a node has one
provisioner; pools found by `nodeLabels` are checked whatever their provisioners, since any node
may carry those labels; static pools are GP101's). Decided
from the selectors alone (`gates.nodes.overlap`): two selectors are disjoint only when some label key has
requirements no single value meets — different `In`/`matchLabels` values, a value one requires and
the other excludes (`NotIn`), or a label one requires and the other forbids (`DoesNotExist`).
""",
)
def selectors_overlap(ctx: RuleContext) -> Iterator[Finding]:
    pools = list(pool_selectors(ctx.platform).values())
    spec = ctx.platform.node_pools
    for j, b in enumerate(pools):
        for i, a in enumerate(pools[:j]):
            owners = _owner(spec[i]), _owner(spec[j])
            if None not in owners and owners[0] != owners[1]:
                continue
            shared = overlap(a, b)
            if shared is not None:
                yield Finding(
                    _where(j, spec[j]),
                    f"pools {a.pool!r} and {b.pool!r} can both select {shared}",
                    "make the selectors exclusive on one label key, e.g. nvidia.com/mig.config In [...] "
                    "in one pool and NotIn [...] (which also matches nodes without the label) in the other",
                )


def _enables_both(labels: dict[str, Any], mode_label: str) -> bool:
    dra = labels.get(DRA_PLUGIN_LABEL) == "true" or labels.get(mode_label) == "dra"
    return dra and labels.get(DEVICE_PLUGIN_DEPLOY_LABEL) != "false"


def _labelled(obj: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
    """(kind of name, name, labels) of a rendered object that sets GPU node labels."""
    kind = obj.get("kind")
    if kind == "Node":
        return "node", obj["metadata"]["name"], obj["metadata"].get("labels", {})
    if kind == "NodePoolHandoff":
        return "pool", obj["metadata"]["name"], obj["spec"]["labels"]
    if kind == "NodePool" and str(obj.get("apiVersion", "")).startswith("karpenter.sh/"):
        return "provisioner", obj["metadata"]["name"], obj["spec"]["template"]["metadata"].get("labels", {})
    return None


@rule(
    "GP102",
    "error",
    "rendered node labels enable both allocators",
    """
The GPU Operator deploys the device plugin on every node whose `nvidia.com/gpu.deploy.device-plugin`
label is absent or `true`; the DRA driver's kubelet plugin runs where `nvidia.com/dra-kubelet-plugin`
is `true`. A rendered Node (or provisioner hand-off) declared DRA (the DRA label, or the mode label
`dra` that the allocator switch turns into the DRA label) without `device-plugin=false` gives its
GPUs two allocators. The rule reads the rendered objects of every wave, after overlays.
""",
)
def both_allocators_in_rendered_labels(ctx: RuleContext) -> Iterator[Finding]:
    index: dict[tuple[str, str], int] = {}
    for i, pool in enumerate(ctx.platform.node_pools):
        index[("pool", pool.name)] = i
        index |= {("node", n): i for n in pool.nodes}
        if pool.provisioner is not None:
            index[("provisioner", pool.provisioner.name)] = i
    for path, content in sorted(ctx.tree.files.items()):
        if not isinstance(content, list):
            continue
        for obj in content:
            found = _labelled(obj)
            if found is not None and _enables_both(found[2], ctx.platform.mode_label_key):
                yield Finding(
                    f"spec.nodePools[{index[found[:2]]}]",
                    f"{path}: {found[0]} {found[1]} would run the device plugin and the DRA kubelet plugin",
                    f"set {DEVICE_PLUGIN_DEPLOY_LABEL}=false wherever {DRA_PLUGIN_LABEL}=true",
                )


def _bridge_names(ctx: RuleContext) -> list[tuple[int, str, str]]:
    return [
        (i, b.extended_resource_name, ctx.platform.class_name(b.name))
        for i, b in enumerate(ctx.platform.bridges)
        if b.source == "platform"
    ]


@rule(
    "GP120",
    "error",
    "two platform DeviceClasses claim the same extended resource",
    """
When several DeviceClasses declare the same `extendedResourceName`, the most recently created one
serves it (ties by name). Two platform bridges for one name make the winner depend on apply order.
""",
)
def duplicate_extended_resource(ctx: RuleContext) -> Iterator[Finding]:
    seen: dict[str, str] = {}
    for i, resource, cls in _bridge_names(ctx):
        if resource in seen:
            yield Finding(
                f"spec.bridges[{i}].extendedResourceName", f"{cls} and {seen[resource]} both claim {resource}"
            )
        else:
            seen[resource] = cls


@rule(
    "GP121",
    "warning",
    "a platform bridge overrides the DRA driver chart's class",
    """
From chart 25.12.0 the DRA driver's own `gpu.nvidia.com` DeviceClass declares
`extendedResourceName: nvidia.com/gpu`, and no chart value turns that off; the renderer removes it
with a post-render patch unless a wave names the chart's class as the bridge. Where a rendered
release still serves the name next to a platform bridge, the newer class wins while it exists and
rolling back past the bridge wave hands the name back to the chart's class, which keeps bridging
every full GPU. The rule renders each wave's DRA release with its patches.
""",
)
def bridge_overrides_chart_class(ctx: RuleContext) -> Iterator[Finding]:
    if not ctx.plan.chart_bridge_live:
        return
    states = {s.dir_name: s for s in ctx.plan.waves}
    names = {b.name: i for i, b in enumerate(ctx.platform.bridges)}
    for folder, path, release in ctx.releases:
        if release.chart not in DRA_CHARTS:
            continue
        chart = render_dra_driver(release.version, release.values, release.patches).classes
        served = {
            str(s["extendedResourceName"]): c for c, s in chart.items() if s.get("extendedResourceName")
        }
        for name in states[folder].bridges:
            i = names[name]
            bridge = ctx.platform.bridges[i]
            if bridge.source == "platform" and bridge.extended_resource_name in served:
                yield Finding(
                    f"spec.bridges[{i}]",
                    f"{path}: {ctx.platform.class_name(name)} and the chart's "
                    f"{served[bridge.extended_resource_name]} both claim {bridge.extended_resource_name}",
                    "set source: chart to use the chart's class as the bridge",
                )


@rule(
    "GP190",
    "error",
    "a node of the spec is missing from the cluster",
    """
A partial Node applied server-side under a name the cluster does not have creates a phantom Node
object. Every node a static pool lists must exist in the snapshot given to `check --snapshot`.
""",
)
def node_missing_from_cluster(ctx: RuleContext) -> Iterator[Finding]:
    if ctx.cluster_nodes is None:
        return
    for i, pool in enumerate(ctx.platform.node_pools):
        for j, node in enumerate(pool.nodes):
            if node not in ctx.cluster_nodes:
                yield Finding(
                    f"spec.nodePools[{i}].nodes[{j}]", f"node {node!r} does not exist in the cluster"
                )


def _dra_releases(ctx: RuleContext) -> Iterator[tuple[str, Any]]:
    """(file, Helm values) of every rendered DRA driver release: Flux HelmReleases, Argo CD Applications
    (their Helm source or their kustomize wrapper)."""
    for _, path, release in ctx.releases:
        if release.chart in DRA_CHARTS:
            yield path, release.values


@rule(
    "GP210",
    "error",
    "the DRA pool's taint is not tolerated by the DRA kubelet plugin",
    """
The DRA pool is tainted so that unmigrated workloads stay off it; the DRA driver's kubelet plugin
must tolerate that taint or it never runs there and no ResourceSlice is published. The rule reads
`kubeletPlugin.tolerations` of every rendered DRA driver release (Flux HelmRelease and Argo CD
Application, the team's values merged with the platform's) against every pool's DRA taint.
""",
)
def taint_not_tolerated(ctx: RuleContext) -> Iterator[Finding]:
    taints = {pool.name: pool_taint(ctx.platform, pool) for pool in ctx.platform.node_pools}
    for path, values in _dra_releases(ctx):
        plugin = values.get("kubeletPlugin") if isinstance(values, dict) else None
        tolerations = plugin.get("tolerations") if isinstance(plugin, dict) else None
        listed = [t for t in tolerations if isinstance(t, dict)] if isinstance(tolerations, list) else []
        for pool, taint in sorted(taints.items()):
            if not any(tolerates(t, taint) for t in listed):
                yield Finding(
                    "spec.draDriver.values.kubeletPlugin.tolerations",
                    f"{path}: the kubelet plugin does not tolerate {taint['key']}={taint.get('value', '')}:"
                    f"{taint['effect']} of pool {pool!r}",
                    f"tolerate {taint['key']}:{taint['effect']} in kubeletPlugin.tolerations",
                )


@rule(
    "GP211",
    "error",
    "the validation workload does not tolerate the DRA pool's taint",
    """
The validation Job proves that a claim reaches a container on a DRA node; if its pod does not
tolerate the DRA pool's taint it stays pending and the wave's evidence never arrives. The rule
reads the rendered Job of every wave.
""",
)
def validation_not_tolerating(ctx: RuleContext) -> Iterator[Finding]:
    if ctx.platform.validation is None:
        return
    taints = {pool.name: pool_taint(ctx.platform, pool) for pool in ctx.platform.node_pools}
    for path, content in sorted(ctx.tree.files.items()):
        if not isinstance(content, list):
            continue
        for obj in content:
            if obj.get("kind") != "Job" or obj["metadata"]["labels"].get(VALIDATION_LABEL) != "claim-pilot":
                continue
            tolerations = obj["spec"]["template"]["spec"].get("tolerations", [])
            for pool, taint in sorted(taints.items()):
                if not any(tolerates(t, taint) for t in tolerations):
                    yield Finding(
                        "spec.validation",
                        f"{path}: the validation Job does not tolerate the taint of pool {pool!r}",
                        f"tolerate {taint['key']}:{taint['effect']} in the validation Job",
                    )
