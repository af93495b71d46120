"""Version gates: every release at or above the baseline, every feature used present where it is used."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplatform.policy.registry import Finding, RuleContext, rule
from gpuplatform.versions import (
    DRA_DRIVER_BASELINE,
    DRA_DRIVER_FEATURE_GATES,
    GPU_OPERATOR_BASELINE,
    GPU_OPERATOR_GPUCLUSTER_SINCE,
    KUBE_FEATURE_GATES,
    KUBERNETES_MINIMUM,
    NVIDIA_DRIVER_MINIMUM,
    SCHEDULER_EXPLICIT_ZERO_FIX,
    dra_driver_at_least,
    parse_release,
)
from gpuplatform.versions import (
    kube_gate_enabled as gate_on,
)

__all__ = ["kube_gate_enabled"]


def kube_gate_enabled(ctx: RuleContext, gate: str) -> bool:
    """Whether the target cluster runs with Kubernetes feature gate `gate` on (`versions`' table)."""
    minor = parse_release(ctx.platform.kubernetes.version).minor
    return gate_on(ctx.platform.kubernetes.feature_gates, gate, minor)


@rule(
    "GP110",
    "error",
    "Kubernetes release below the supported minimum",
    f"""
resource.k8s.io/v1 is served from Kubernetes 1.34 and the GPU Operator's DRA procedure requires
{KUBERNETES_MINIMUM} or newer (versions.KUBERNETES_MINIMUM).
""",
)
def kubernetes_minimum(ctx: RuleContext) -> Iterator[Finding]:
    if parse_release(ctx.platform.kubernetes.version) < KUBERNETES_MINIMUM:
        yield Finding(
            "spec.kubernetes.version",
            f"Kubernetes {ctx.platform.kubernetes.version} is below the minimum {KUBERNETES_MINIMUM}",
            "upgrade the cluster first; 1.36 is preferred (extended-resource bridge on by default)",
        )


@rule(
    "GP111",
    "error",
    "a bridge class where the API server drops extendedResourceName",
    """
On Kubernetes 1.34 and 1.35 DRAExtendedResource is alpha and off: the API server silently drops
`extendedResourceName` when a DeviceClass is created, so the bridge would never exist, whether the
platform renders its class or names the DRA driver chart's `gpu.nvidia.com` (`source: chart`: the
chart sets the field, the API server drops it the same way). Declare the gate enabled (`spec.kubernetes.featureGates.DRAExtendedResource: true`, on kube-apiserver,
kube-scheduler, kube-controller-manager and kubelet) or target 1.36.
""",
)
def bridge_without_gate(ctx: RuleContext) -> Iterator[Finding]:
    if kube_gate_enabled(ctx, "DRAExtendedResource"):
        return
    for i, bridge in enumerate(ctx.platform.bridges):
        whose = " (the DRA driver chart's class)" if bridge.source == "chart" else ""
        yield Finding(
            f"spec.bridges[{i}]",
            f"bridge {bridge.name!r}{whose} needs DRAExtendedResource, which is off on Kubernetes "
            f"{ctx.platform.kubernetes.version}",
            "set spec.kubernetes.featureGates.DRAExtendedResource: true or target 1.36",
        )


@rule(
    "GP112",
    "error",
    "a GPU Operator, NVIDIA driver or DRA driver release below the baseline",
    f"""
The migration procedure is written for GPU Operator {GPU_OPERATOR_BASELINE}+, NVIDIA driver
{NVIDIA_DRIVER_MINIMUM}+ and NVIDIA DRA driver {DRA_DRIVER_BASELINE}+ (versions.py cites the
sources). Older releases publish other attributes, lack the chart options the tool sets, or do not
support DRA at all.
""",
)
def component_baselines(ctx: RuleContext) -> Iterator[Finding]:
    p = ctx.platform
    if parse_release(p.gpu_operator.version) < GPU_OPERATOR_BASELINE:
        yield Finding(
            "spec.gpuOperator.version",
            f"GPU Operator {p.gpu_operator.version} is below {GPU_OPERATOR_BASELINE}",
        )
    if parse_release(p.gpu_operator.driver_version) < NVIDIA_DRIVER_MINIMUM:
        yield Finding(
            "spec.gpuOperator.driverVersion",
            f"NVIDIA driver {p.gpu_operator.driver_version} is below {NVIDIA_DRIVER_MINIMUM.parts[0]}",
        )
    if not dra_driver_at_least(parse_release(p.dra_driver.chart_version), DRA_DRIVER_BASELINE):
        yield Finding(
            "spec.draDriver.chartVersion",
            f"DRA driver {p.dra_driver.chart_version} is below {DRA_DRIVER_BASELINE}",
        )


@rule(
    "GP113",
    "error",
    "a DRA driver feature gate the release does not have",
    """
Driver feature gates arrive in specific releases (some exist only on the driver's main branch) and
some need a Kubernetes gate of their own (DynamicMIG needs DRAPartitionableDevices,
ConsumableShares needs DRAConsumableCapacity). A gate the release does not know makes the kubelet
plugin fail to start.
""",
)
def driver_gates(ctx: RuleContext) -> Iterator[Finding]:
    release = parse_release(ctx.platform.dra_driver.chart_version)
    for name, enabled in sorted(ctx.platform.dra_driver.feature_gates.items()):
        loc = f"spec.draDriver.featureGates.{name}"
        gate = DRA_DRIVER_FEATURE_GATES.get(name)
        if gate is None:
            yield Finding(
                loc,
                f"unknown DRA driver feature gate {name!r} (gates: {', '.join(sorted(DRA_DRIVER_FEATURE_GATES))})",
            )
            continue
        if gate.since is None or not dra_driver_at_least(release, gate.since):
            since = f"release {gate.since}" if gate.since else "the driver's main branch only"
            yield Finding(loc, f"{name} is in {since}, not in DRA driver {release}")
        elif enabled and gate.needs_kube_gate and not kube_gate_enabled(ctx, gate.needs_kube_gate):
            yield Finding(loc, f"{name} needs the Kubernetes gate {gate.needs_kube_gate}, which is off")


@rule(
    "GP114",
    "warning",
    "a Kubernetes feature gate the target release does not have",
    """
`spec.kubernetes.featureGates` declares what the cluster enables; a gate the target release does
not have is a typo or a release mismatch, and the rules that read it would decide on a fiction.
""",
)
def unknown_kube_gates(ctx: RuleContext) -> Iterator[Finding]:
    minor = parse_release(ctx.platform.kubernetes.version).minor
    for name in sorted(ctx.platform.kubernetes.feature_gates):
        gate = KUBE_FEATURE_GATES.get(name)
        if gate is None or minor not in gate.releases:
            gates = ", ".join(sorted(g for g, v in KUBE_FEATURE_GATES.items() if minor in v.releases))
            yield Finding(
                f"spec.kubernetes.featureGates.{name}",
                f"Kubernetes {minor} has no DRA feature gate {name!r} (gates: {gates})",
            )


@rule(
    "GP170",
    "error",
    "ClusterPolicy and GPUCluster mixed",
    f"""
GPU Operator {GPU_OPERATOR_GPUCLUSTER_SINCE}+ manages the DRA driver itself through the GPUCluster
custom resource and refuses a cluster that has both a ClusterPolicy and a GPUCluster; in-place
migration from a standalone DRA Helm release is not supported. `gpuOperator.mode: gpuCluster`
needs GPU Operator {GPU_OPERATOR_GPUCLUSTER_SINCE}+, and operator values must not deploy both CRs.
""",
)
def cluster_policy_and_gpucluster(ctx: RuleContext) -> Iterator[Finding]:
    op = ctx.platform.gpu_operator
    values = op.values
    deploys = {
        key
        for key in ("clusterPolicy", "gpuCluster")
        if isinstance(values.get(key), dict) and values[key].get("deployCR") is True
    }
    if op.mode == "gpuCluster" and parse_release(op.version) < GPU_OPERATOR_GPUCLUSTER_SINCE:
        yield Finding(
            "spec.gpuOperator.mode", f"GPUCluster needs GPU Operator {GPU_OPERATOR_GPUCLUSTER_SINCE}+"
        )
    if op.mode == "gpuCluster":
        yield Finding(
            "spec.gpuOperator.mode",
            "GPUCluster mode manages the DRA driver; a standalone DRA driver Helm release next to it is not supported",
        )
    if deploys == {"clusterPolicy", "gpuCluster"} or (op.mode == "clusterPolicy" and "gpuCluster" in deploys):
        yield Finding(
            "spec.gpuOperator.values", "the operator values deploy both a ClusterPolicy and a GPUCluster"
        )


@rule(
    "GP180",
    "error",
    "a scheduler that treats an explicit nvidia.com/gpu: 0 as a device-plugin node",
    f"""
When the device plugin leaves a node the kubelet keeps advertising `nvidia.com/gpu: 0`. Before
kubernetes/kubernetes#133784 (first released in {SCHEDULER_EXPLICIT_ZERO_FIX}) the scheduler treats
such a node as a device-plugin node, so bridged `nvidia.com/gpu` requests never land on DRA nodes.
""",
)
def explicit_zero_scheduler(ctx: RuleContext) -> Iterator[Finding]:
    if parse_release(ctx.platform.kubernetes.version) >= SCHEDULER_EXPLICIT_ZERO_FIX:
        return
    for i, wave in enumerate(ctx.platform.waves):
        if wave.bridges:
            yield Finding(
                f"spec.waves[{i}].bridges",
                f"the bridge of wave {wave.name!r} needs kube-scheduler {SCHEDULER_EXPLICIT_ZERO_FIX}+",
            )
