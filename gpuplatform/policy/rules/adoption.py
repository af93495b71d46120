"""Brownfield adoption: the rendered Helm releases against the running ones and the charts' facts, and
the declared workloads against what the running device plugin advertises."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from gpuplatform.adopt.running import RunningRelease
from gpuplatform.charts.facts import MISSING, ChartFacts, Component, chart_facts, leaf_paths, value_at
from gpuplatform.inventory.device_plugin import advertised, running_mig_strategy
from gpuplatform.policy.registry import Finding, RuleContext, rule
from gpuplatform.render.helm_values import gpu_operator_chart, gpu_operator_values
from gpuplatform.versions import (
    DRIVER_MANAGER_EVICTION_LABEL_SINCE,
    GPU_OPERATOR_DRIVER_MANAGER,
    parse_release,
)

__all__ = ["values_loc"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_IMPORT = "gpuplatform import operator-values <snapshot>/helm/<namespace>_<release>.json --stack <spec>"


def values_loc(prefix: str, path: tuple[str, ...]) -> str:
    """`spec.gpuOperator.values.driver.version`; keys that are not identifiers as `["nvidia.com/x"]`."""
    return prefix + "".join(f".{k}" if _IDENTIFIER.match(k) else f'["{k}"]' for k in path)


def _running(ctx: RuleContext) -> RunningRelease | None:
    op = ctx.platform.gpu_operator
    if not op.managed or ctx.running is None:
        return None
    return ctx.running.get((op.namespace, op.release_name))


def _driver_managed(ctx: RuleContext) -> bool:
    op = ctx.platform.gpu_operator
    return (
        op.managed
        and gpu_operator_chart(ctx.platform).effective(op.values, ("driver", "enabled")) is not False
    )


@rule(
    "GP250",
    "warning",
    "the GPU Operator release would change the running NVIDIA driver version",
    """
The GPU Operator installs the driver named by `driver.version`, which the tool renders from
`gpuOperator.driverVersion`. When it differs from what the running release has — its own
`driver.version`, or the default of its chart version when it set none — the driver manager
upgrades the driver on every GPU node (draining them) as soon as the release syncs. The rule reads
the running release from `check --snapshot` (Helm storage) and, without one, the team's own values.
Set `driverVersion` to the running version unless the upgrade is intended.
""",
)
def driver_version_change(ctx: RuleContext) -> Iterator[Finding]:
    if not _driver_managed(ctx):
        return
    op = ctx.platform.gpu_operator
    running = _running(ctx)
    if running is not None:
        current = value_at(running.values, ("driver", "version"))
        origin = f"release {running.namespace}/{running.name}"
        if current is MISSING:
            facts, match = chart_facts("gpu-operator", running.chart_version.lstrip("v"))
            current = facts.default(("driver", "version")) if match == "exact" else MISSING
            origin = f"the default of chart {running.chart} {running.chart_version} that {origin} runs"
        if current is not MISSING and str(current) != op.driver_version:
            yield Finding(
                "spec.gpuOperator.driverVersion",
                f"the release would change the NVIDIA driver from {current} ({origin}) to {op.driver_version}",
                f"set driverVersion: {current!s} unless the driver upgrade on every GPU node is intended",
            )
        return
    team = value_at(op.values, ("driver", "version"))
    if team is not MISSING and str(team) != op.driver_version:
        yield Finding(
            "spec.gpuOperator.values.driver.version",
            f"values set driver.version {team}, which driverVersion {op.driver_version} overrides",
            "keep the version in driverVersion only (import operator-values moves it there)",
        )


#: Paths the migration sets on purpose (GP250 reports driver.version).
_SET_BY_THE_MIGRATION = {("devicePlugin", "enabled"), ("driver", "version")}


def _lost(before: Any, after: Any) -> bool:
    if after is MISSING:
        return True
    if isinstance(before, list) and isinstance(after, list):
        return any(item not in after for item in before)
    return bool(before != after)


@rule(
    "GP251",
    "warning",
    "the GPU Operator release would drop or change a value the running release has",
    f"""
Flux upgrades a release with exactly the rendered values (helm-controller resets values), and
Argo CD renders the chart with nothing else, so a running value the spec does not carry is
reset to the chart's default: a toolkit path, a MIG strategy, a driver-manager setting. The rule
compares every value of the running release (`check --snapshot`, read from Helm storage) with the
release the active wave renders; lists must keep every running item. `devicePlugin.enabled` is
the migration's to set, `driver.version` is GP250's. Import the running values: `{_IMPORT}`.
""",
)
def running_value_lost(ctx: RuleContext) -> Iterator[Finding]:
    running = _running(ctx)
    if running is None:
        return
    rendered = gpu_operator_values(ctx.plan, ctx.plan.active)
    for path, value in leaf_paths(running.values):
        if path in _SET_BY_THE_MIGRATION:
            continue
        now = value_at(rendered, path)
        if _lost(value, now):
            what = "drop" if now is MISSING else "change"
            yield Finding(
                values_loc("spec.gpuOperator.values", path),
                f"the release would {what} {'.'.join(path)} of {running.namespace}/{running.name} (running: {value!r})",
                f"import the running values: {_IMPORT}",
            )


def _unread(facts: ChartFacts, values: dict[str, Any], prefix: str) -> Iterator[Finding]:
    for path, _ in leaf_paths(values):
        if not facts.reads_path(path):
            yield Finding(
                values_loc(prefix, path),
                f"chart {facts.chart} {facts.version} does not read {'.'.join(path)}",
                "a typo, or a key of another chart version: remove it or fix its name",
            )


@rule(
    "GP252",
    "warning",
    "a Helm value the chart version does not read",
    """
Helm ignores values its templates never read, so a misspelt key or one a newer chart version
dropped (e.g. `operator.defaultRuntime` in GPU Operator 26.3) silently has no effect. The rule
checks the team's values of the GPU Operator (when managed) and the DRA driver against the
values paths the pinned chart version's templates read (chart facts, extracted from the chart and
tested against `helm template`).
""",
)
def unread_values(ctx: RuleContext) -> Iterator[Finding]:
    p = ctx.platform
    if p.gpu_operator.managed:
        facts, _ = chart_facts("gpu-operator", p.gpu_operator.version)
        yield from _unread(facts, p.gpu_operator.values, "spec.gpuOperator.values")
    facts, _ = chart_facts("dra-driver", p.dra_driver.chart_version)
    yield from _unread(facts, p.dra_driver.values, "spec.draDriver.values")


@rule(
    "GP253",
    "error",
    "the GPU Operator would be installed next to the running one",
    """
Helm finds a release by name in its storage namespace. When the cluster runs the gpu-operator
chart under another release name or namespace than `gpuOperator.releaseName` and `namespace`,
the rendered release is a second installation: two operators reconcile the same nodes and CRDs.
The rule reads the releases `check --snapshot` captured (`snapshot --helm-release NS/NAME`).
""",
)
def second_operator(ctx: RuleContext) -> Iterator[Finding]:
    op = ctx.platform.gpu_operator
    if not op.managed or ctx.running is None:
        return
    for (namespace, name), release in sorted(ctx.running.items()):
        if release.chart == "gpu-operator" and (namespace, name) != (op.namespace, op.release_name):
            yield Finding(
                "spec.gpuOperator.releaseName",
                f"the cluster runs gpu-operator as {namespace}/{name}; the spec renders "
                f"{op.namespace}/{op.release_name}, a second installation",
                f"set gpuOperator.namespace: {namespace} and releaseName: {name}",
            )


@rule(
    "GP254",
    "warning",
    "no chart facts for the pinned chart version",
    """
What a chart installs (for the AppProject), its defaults (kept in lists the tool sets) and the
values it reads come from chart facts per chart version (`gpuplatform/charts/data`, written by
`scripts/chart-facts CHART_DIR` with helm). For a version without facts the newest facts of the same
minor are used (a warning); with none of that minor, of the newest release (an error: the AppProject
may refuse what the chart installs). Add the chart version's facts.
""",
)
def chart_facts_missing(ctx: RuleContext) -> Iterator[Finding]:
    p = ctx.platform
    pinned: list[tuple[Component, str, str]] = [
        ("dra-driver", p.dra_driver.chart_version, "spec.draDriver.chartVersion")
    ]
    if p.gpu_operator.managed:
        pinned.insert(0, ("gpu-operator", p.gpu_operator.version, "spec.gpuOperator.version"))
    for component, version, loc in pinned:
        facts, match = chart_facts(component, version)
        if match != "exact":
            yield Finding(
                loc,
                f"no chart facts for {facts.chart} {version}: using those of {facts.version}",
                "add them: scripts/chart-facts <the chart's folder> (helm from .ci/setup-tools)",
            )


@rule(
    "GP255",
    "error",
    "a driver manager that ignores the DRA kubelet plugin eviction label",
    f"""
The GPU Operator's k8s-driver-manager evicts the pods selecting the label named by
NODE_LABEL_FOR_GPU_POD_EVICTION (the DRA kubelet plugin) before it reloads the driver; it reads
that variable from {DRIVER_MANAGER_EVICTION_LABEL_SINCE} on. An older driver manager (pinned in
`driver.manager.version`) reloads the driver under a running kubelet plugin.
""",
)
def driver_manager_too_old(ctx: RuleContext) -> Iterator[Finding]:
    op = ctx.platform.gpu_operator
    if not op.managed:
        return
    pinned = value_at(op.values, ("driver", "manager", "version"))
    version = GPU_OPERATOR_DRIVER_MANAGER.get(op.version)
    if pinned is not MISSING:
        try:
            version = parse_release(str(pinned))
        except ValueError:
            return
    if version is not None and version < DRIVER_MANAGER_EVICTION_LABEL_SINCE:
        yield Finding(
            "spec.gpuOperator.values.driver.manager.version",
            f"k8s-driver-manager {version} ignores NODE_LABEL_FOR_GPU_POD_EVICTION",
            f"use k8s-driver-manager {DRIVER_MANAGER_EVICTION_LABEL_SINCE} or newer",
        )


@rule(
    "GP236",
    "error",
    "a workload asks for a device-plugin resource no pool advertises",
    """
A declared workload runs on the device plugin until its wave moves it, so some pool's device plugin
must advertise what it asks for. That depends on the running GPU Operator's `mig.strategy` (chart
default `single`; `spec.gpuOperator.values`): under `single` a MIG node's devices are all
`nvidia.com/gpu`, under `mixed` they are `nvidia.com/mig-<profile>` (k8s-device-plugin v0.19.0
`internal/rm/device_map.go`). A workload asking for a resource no pool advertises is Pending before
the migration starts, and every gate and verdict about it is wrong. Declare the strategy the
cluster runs (`gpuplatform import operator-values`), or the resource the workload asks for.
""",
)
def workload_resource_not_advertised(ctx: RuleContext) -> Iterator[Finding]:
    platform = ctx.platform
    strategy = running_mig_strategy(platform)
    offered: dict[str, list[str]] = {}
    for pool in platform.node_pools:
        for resource in advertised(pool.mig_layout, pool.gpus_per_node, strategy) or {}:
            offered.setdefault(resource, []).append(pool.name)
    other = "mixed" if strategy == "single" else "single"
    for i, w in enumerate(platform.workloads):
        if w.resource in offered:
            continue
        pools = [
            p.name
            for p in platform.node_pools
            if w.resource in (advertised(p.mig_layout, p.gpus_per_node, other) or {})
        ]
        now = ", ".join(f"{r} ({', '.join(p)})" for r, p in sorted(offered.items())) or "nothing"
        hint = (
            f"if the running GPU Operator uses mig.strategy {other}, declare it in "
            f"spec.gpuOperator.values.mig.strategy (pools {', '.join(pools)} then advertise {w.resource})"
            if pools
            else f"ask for one of {', '.join(sorted(offered))}"
            if offered
            else "declare the pools' GPUs"
        )
        yield Finding(
            f"spec.workloads[{i}].resource",
            f"workload {w.namespace}/{w.name} asks for {w.resource}, but under the GPU Operator's "
            f"mig.strategy {strategy} the pools' device plugins advertise {now}",
            hint,
        )
