"""Rendered values that make a transition unsafe: read through the charts' model, as the simulator does.

The team's Helm values are merged with the platform's, so an override can still move the DRA
kubelet plugin, bring the chart's bridge back, drop an operand's toleration or hand the kubelet
plugin label back to the engine. These rules run the rendered releases of every wave through
`charts.model` (the charts' templates, modelled) and refuse what `gpuplatform simulate` would
find broken.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpuplatform.charts.model import render_dra_driver, render_gpu_operator
from gpuplatform.gates.matchers import DCGM_EXPORTER_LABEL, exporter_in_dra_mode, is_dra_kubelet_plugin_pod
from gpuplatform.gates.nodes import pool_selector
from gpuplatform.kube.nodes import well_known_labels
from gpuplatform.labels import DRA_PLUGIN_LABEL, GPU_PRESENT_LABEL, NFD_NVIDIA_PCI_LABEL
from gpuplatform.plan.waves import WaveState
from gpuplatform.policy.registry import Finding, RuleContext, rule
from gpuplatform.render.helm_values import running_operator
from gpuplatform.render.nodes import NODES_ROOT, node_labels, pool_taint, provisioner_labels
from gpuplatform.simulate.model import untolerated
from gpuplatform.simulate.rendered import DRA_CHARTS, OPERATOR_CHARTS, ReleaseSpec
from gpuplatform.versions import DCGM_EXPORTER_DRA_ENV, VALIDATOR_BUG_FIXED_IN, parse_release

__all__: list[str] = []

_SCHEDULING = ("NoSchedule", "NoExecute")


def _releases(ctx: RuleContext, charts: frozenset[str]) -> Iterator[tuple[WaveState, str, ReleaseSpec]]:
    states = {s.dir_name: s for s in ctx.plan.waves}
    for folder, path, release in ctx.releases:
        if release.chart in charts:
            yield states[folder], path, release


def _labels(ctx: RuleContext, state: WaveState, pool_index: int) -> dict[str, str]:
    """The labels a pool's node carries once the wave is applied (the switch's label on DRA nodes)."""
    p = ctx.platform
    pool = p.node_pools[pool_index]
    mode = state.pool_modes[pool.name]
    labels = (node_labels if pool.provisioner is None else provisioner_labels)(
        p, pool, mode, state.device_plugin_enabled
    )
    node = pool.nodes[0] if pool.nodes else f"{pool.name}-node-0"
    labels |= {
        **well_known_labels(node, pool.instance_type),
        NFD_NVIDIA_PCI_LABEL: "true",
        GPU_PRESENT_LABEL: "true",
    }
    if mode == "dra":
        labels[DRA_PLUGIN_LABEL] = "true"
    return labels


@rule(
    "GP240",
    "error",
    "the DRA kubelet plugin would not run exactly on the DRA nodes",
    """
The DRA driver chart places its kubelet plugin by `kubeletPlugin.nodeSelector` and
`kubeletPlugin.affinity` (templates/kubeletplugin.yaml). The allocator switch hands a node to the
DRA driver by setting `nvidia.com/dra-kubelet-plugin=true` once the device plugin has left it, so
the rendered values must select the nodes with that label and no other: a selector without it
starts the plugin on legacy nodes next to the device plugin; an affinity that misses a DRA pool
leaves it without an allocator. A chart that fails to render (values the chart refuses) is
reported too. The rule renders every wave's DRA release through the chart's model.
""",
)
def kubelet_plugin_placement(ctx: RuleContext) -> Iterator[Finding]:
    for state, path, release in _releases(ctx, DRA_CHARTS):
        out = render_dra_driver(release.version, release.values, release.patches)
        if out.error:
            yield Finding("spec.draDriver.values", f"{path}: the chart does not render: {out.error}")
            continue
        for i, pool in enumerate(ctx.platform.node_pools):
            mode = state.pool_modes[pool.name]
            selected = out.selects(_labels(ctx, state, i))
            if selected != (mode == "dra"):
                what = "on legacy" if selected else "nowhere on DRA"
                yield Finding(
                    "spec.draDriver.values.kubeletPlugin",
                    f"{path}: the kubelet plugin would run {what} pool {pool.name!r} (wave {state.name})",
                    f"select nodes by {DRA_PLUGIN_LABEL}=true only (kubeletPlugin.nodeSelector/affinity)",
                )


@rule(
    "GP241",
    "error",
    "the DRA driver chart's class bridges nvidia.com/gpu before the bridge wave",
    """
From chart 25.12.0 the chart's `gpu.nvidia.com` DeviceClass declares `extendedResourceName:
nvidia.com/gpu` whenever the resource API is v1; the scheduler then places an unmigrated
`nvidia.com/gpu` pod on any DRA node that does not advertise the resource and that it tolerates.
The renderer removes the field with a post-render patch (Flux `postRenderers`, the Argo CD
kustomize wrapper) until a wave names the chart's class as the bridge (`source: chart`). The rule
renders every wave's DRA release with its patches.
""",
)
def chart_bridge_too_early(ctx: RuleContext) -> Iterator[Finding]:
    if not ctx.plan.chart_bridge_live:
        return
    for state, path, release in _releases(ctx, DRA_CHARTS):
        out = render_dra_driver(release.version, release.values, release.patches)
        bridged = [n for n, spec in out.classes.items() if spec.get("extendedResourceName")]
        if bridged and not ctx.plan.chart_bridges(state):
            yield Finding(
                "spec.bridges",
                f"{path}: the chart's {', '.join(bridged)} serves nvidia.com/gpu in wave {state.name}, "
                "which enables no chart bridge",
                "keep the chart-class patch, or name the chart's class as a bridge (source: chart) in this wave",
            )


@rule(
    "GP242",
    "error",
    "the GPU Operator's operands or NFD workers do not tolerate a DRA pool's taint",
    """
The operator replaces every operand DaemonSet's tolerations with `daemonsets.tolerations`
(controllers/object_controls.go `applyCommonDaemonsetConfig`) and NFD workers take
`node-feature-discovery.worker.tolerations`. The DaemonSet controller places a new pod only where
every NoSchedule taint is tolerated, so a driver upgrade (which evicts the operands) or a new node
leaves a tainted DRA node without its driver, toolkit, GFD, DCGM and MIG manager. The rule renders
every wave's GPU Operator release through the chart's model.
""",
)
def operands_not_tolerating(ctx: RuleContext) -> Iterator[Finding]:
    taints = [(pool.name, pool_taint(ctx.platform, pool)) for pool in ctx.platform.node_pools]
    for state, path, release in _releases(ctx, OPERATOR_CHARTS):
        out = render_gpu_operator(release.version.lstrip("v"), release.values)
        for pool, taint in taints:
            if state.pool_modes[pool] != "dra":
                continue
            for what, tolerations in (
                ("daemonsets.tolerations", out.operand_tolerations),
                ("node-feature-discovery.worker.tolerations", out.nfd_tolerations if out.nfd else [taint]),
            ):
                if untolerated(tolerations, [taint], _SCHEDULING):
                    yield Finding(
                        f"spec.gpuOperator.values.{what}",
                        f"{path}: {what} does not tolerate {taint['key']}:{taint['effect']} of pool {pool!r}",
                        f"tolerate {taint['key']}:{taint['effect']} in {what}",
                    )


@rule(
    "GP243",
    "error",
    "the driver manager would not evict the DRA kubelet plugin before a driver upgrade",
    """
Before it unloads the driver, the driver manager sets the label named by
NODE_LABEL_FOR_GPU_POD_EVICTION to `paused-for-driver-upgrade` (NVIDIA/k8s-driver-manager
`evictAllGPUOperatorComponents`); the DRA kubelet plugin leaves only if that label is the one its
DaemonSet selects, `nvidia.com/dra-kubelet-plugin`. Otherwise the plugin holds the GPUs and the
modules cannot be unloaded.
""",
)
def eviction_label(ctx: RuleContext) -> Iterator[Finding]:
    if not any(s.driver_installed for s in ctx.plan.waves):
        return
    for state, path, release in _releases(ctx, OPERATOR_CHARTS):
        out = render_gpu_operator(release.version.lstrip("v"), release.values)
        if state.dra_pools and out.eviction_label != DRA_PLUGIN_LABEL:
            yield Finding(
                "spec.gpuOperator.values.driver.manager.env",
                f"{path}: NODE_LABEL_FOR_GPU_POD_EVICTION is {out.eviction_label or 'not set'!r}",
                f"set it to {DRA_PLUGIN_LABEL}",
            )


@rule(
    "GP244",
    "error",
    "a GitOps engine would own the DRA kubelet plugin's label",
    """
During a driver upgrade the driver manager sets `nvidia.com/dra-kubelet-plugin` to
`paused-for-driver-upgrade`; an engine that applies that label writes it back (Argo CD selfHeal
at once, Flux at its next reconcile), and the kubelet plugin returns while the driver is being
unloaded. Only the allocator switch Jobs (and a provisioner, for new nodes) may set it: no
rendered Node object may carry it.
""",
)
def engine_owns_switch_label(ctx: RuleContext) -> Iterator[Finding]:
    pools = {n: i for i, pool in enumerate(ctx.platform.node_pools) for n in pool.nodes}
    for path, content in sorted(ctx.tree.files.items()):
        if not path.startswith(f"{NODES_ROOT}/") or not isinstance(content, list):
            continue
        for obj in content:
            if obj.get("kind") == "Node" and DRA_PLUGIN_LABEL in (obj["metadata"].get("labels") or {}):
                yield Finding(
                    f"spec.nodePools[{pools.get(obj['metadata']['name'], 0)}]",
                    f"{path}: Node {obj['metadata']['name']} carries {DRA_PLUGIN_LABEL}",
                    "leave that label to the allocator switch",
                )


@rule(
    "GP245",
    "warning",
    "a DRA pool turns the GPU Operator's validator off",
    """
`operatorValidator: false` labels the pool's DRA nodes `nvidia.com/gpu.deploy.operator-validator=false`
while the device plugin is enabled, which silences the validator's crash loop in
`plugin-validation` (NVIDIA/gpu-operator#2550). Stopping the validator runs its preStop, which
removes `/run/nvidia/validations/toolkit-ready`, and only the validator writes it: after a restart,
a driver upgrade (also the operator's unattended ones) or on a new node, GFD, DCGM, the DCGM
exporter and the MIG manager wait for it for ever, until someone runs the runbook's revalidate
step on that node. Without the flag the validator keeps crash-looping in its last init container,
after `toolkit-validation` has written the marker.
""",
)
def validator_turned_off(ctx: RuleContext) -> Iterator[Finding]:
    fixed = VALIDATOR_BUG_FIXED_IN
    release = parse_release(ctx.platform.gpu_operator.version)
    for i, pool in enumerate(ctx.platform.node_pools):
        if pool.operator_validator is False:
            needed = fixed is None or release < fixed
            yield Finding(
                f"spec.nodePools[{i}].operatorValidator",
                f"pool {pool.name!r} turns the validator off: every restart, driver upgrade or new node of it "
                "needs the runbook's revalidate step"
                + ("" if needed else f" (GPU Operator {release} has the #2550 fix: nothing needs it)"),
                "leave operatorValidator unset",
            )


@rule(
    "GP256",
    "warning",
    "DRA pools exist but DCGM exporter is not in DRA mode: GPU metrics of DRA pods carry no pod",
    f"""
DCGM exporter attributes GPU metrics to pods through the kubelet's pod-resources socket, which
names DRA-allocated GPUs by (pool, device); only in DRA mode ({DCGM_EXPORTER_DRA_ENV}=true) does the
exporter read the node's ResourceSlices to map them to GPUs (NVIDIA/dcgm-exporter 4.5.1-4.8.0
`pkg/cmd/app.go`, `internal/pkg/transformation/dra.go`). Otherwise dashboards and chargeback lose
every pod on a DRA node. gpuplatform sets it in the operator's values (or hand-off) unless
`gpuOperator.values.dcgmExporter.env` sets it; remove that entry or set it to "true".
""",
)
def exporter_not_in_dra_mode(ctx: RuleContext) -> Iterator[Finding]:
    if not any(s.dra_pools for s in ctx.plan.waves):
        return
    out = running_operator(ctx.platform)
    if "dcgm-exporter" in out.operands and not out.exporter_dra:
        yield Finding(
            "spec.gpuOperator.values.dcgmExporter.env",
            f"DCGM exporter runs without {DCGM_EXPORTER_DRA_ENV}=true while DRA pools exist",
            f'remove the {DCGM_EXPORTER_DRA_ENV} entry (gpuplatform sets it) or set it to "true"',
        )


@rule(
    "GP257",
    "error",
    "a DCGM exporter pod on a DRA node runs without DRA mode (check --snapshot)",
    f"""
Evidence for GP256: in the snapshot, every DCGM exporter pod (`app=nvidia-dcgm-exporter`) on a node
of the active wave's DRA pools (found as the gates find them) or where the DRA kubelet plugin runs
must run with {DCGM_EXPORTER_DRA_ENV}=true (or
`--kubernetes-enable-dra`). One that does not drops the pod labels of every GPU its node allocates
through DRA: roll the exporter DaemonSet after the operator's values change.
""",
)
def exporter_pod_not_in_dra_mode(ctx: RuleContext) -> Iterator[Finding]:
    if ctx.snapshot is None:
        return
    pods = ctx.snapshot.items("pods") or []
    namespace = ctx.platform.dra_driver.namespace
    active = ctx.plan.active
    # the active wave's DRA pools, found as the gates find them, and any node a plugin runs on
    declared = {
        name
        for pool in active.dra_pools
        for name in pool_selector(ctx.plan.pool_in(active, pool)).found(ctx.snapshot.items("nodes") or [])
    }
    dra_nodes = declared | {
        (p.get("spec") or {}).get("nodeName") for p in pods if is_dra_kubelet_plugin_pod(p, namespace)
    }
    key, value = DCGM_EXPORTER_LABEL
    for pod in pods:
        meta = pod.get("metadata") or {}
        node = (pod.get("spec") or {}).get("nodeName")
        exporter = (meta.get("labels") or {}).get(key) == value and node in dra_nodes
        if exporter and not exporter_in_dra_mode(pod, DCGM_EXPORTER_DRA_ENV):
            yield Finding(
                "spec.gpuOperator",
                f"pod {meta.get('namespace')}/{meta.get('name')} on DRA node {node} runs DCGM exporter "
                f"without {DCGM_EXPORTER_DRA_ENV}=true",
                "apply the operator's values (or hand-off) that set it, then let the DaemonSet roll",
            )
