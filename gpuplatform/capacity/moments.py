"""The moments of a migration whose capacity is checked: every wave, and each drain inside a transition.

A transition from wave A to wave B that moves pools between allocators drains them first: while a
pool is moved it is in neither mode, and the workloads of A still run on the rest: one drain moment
per transition that moves a pool, with every moving pool drained at once, which is what applying the
wave's `10-nodes` layer in one sync does. A `drain` wave reached from before it is itself drained
as its runbook drains it (`plan.steps`' `drain-pools`): its static and node-group pools are empty
and cordoned in it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gpuplatform.capacity.claims import DeviceClass
from gpuplatform.capacity.demand import CHART_GPU_CLASS, Demand, wave_demands
from gpuplatform.charts.model import render_dra_driver
from gpuplatform.inventory.gpu_facts import driver_device_classes
from gpuplatform.plan.steps import drained_by_hand
from gpuplatform.plan.waves import Plan, WaveState
from gpuplatform.render.helm_values import dra_driver_values
from gpuplatform.render.operators import chart_class_patches
from gpuplatform.render.selectors import full_gpu_expression, tier_expression

__all__ = [
    "Moment",
    "chart_class_resources",
    "moment_bridges",
    "moment_classes",
    "transition_moments",
    "wave_moments",
]


@dataclass(frozen=True)
class Moment:
    """A state of the cluster: pool modes (legacy, dra, draining) and what runs."""

    label: str
    runs: WaveState
    """The wave whose workloads, classes and bridges exist at this moment."""
    modes: dict[str, str]
    demands: tuple[Demand, ...]
    drained: tuple[str, ...] = ()
    given: dict[str, int] = field(default_factory=dict)
    """Nodes each pool has given to new groups (`takesOverFrom`) at this moment."""


Demands = Callable[[WaveState], tuple[Demand, ...]]


def wave_moments(plan: Plan, state: WaveState, demands: Demands | None = None) -> list[Moment]:
    """The drain moment of the transition into `state` (if it moves a pool), then `state` itself."""
    before = plan.waves[state.index - 1] if state.index > 0 else None
    return transition_moments(plan, before, state, demands)


def transition_moments(
    plan: Plan, source: WaveState | None, target: WaveState, demands: Demands | None = None
) -> list[Moment]:
    """From `source` to `target` (either direction): the pools that change allocator drained while
    the workloads of `source` still run, then `target`. `demands` gives a wave's demand (default
    `wave_demands`; a run passes a memo)."""
    demand_of = demands or (lambda s: tuple(wave_demands(plan, s)))
    out = []
    moving = tuple(
        p for p, m in target.pool_modes.items() if source is not None and source.pool_modes[p] != m
    )
    if source is not None and moving:
        modes = {p: ("draining" if p in moving else m) for p, m in source.pool_modes.items()}
        label = f"{source.name} -> {target.name}: {', '.join(moving)} drained"
        given = plan.given_all(source)
        out.append(Moment(label, source, _active(source, modes), demand_of(source), moving, given))
    drained = _drain_wave(plan, source, target)
    modes = {p: ("draining" if p in drained else m) for p, m in target.pool_modes.items()}
    label = f"{target.name}: {', '.join(drained)} drained" if drained else target.name
    out.append(
        Moment(label, target, _active(target, modes), demand_of(target), drained, plan.given_all(target))
    )
    return out


def _drain_wave(plan: Plan, source: WaveState | None, target: WaveState) -> tuple[str, ...]:
    """The pools a drain wave's runbook has drained once it is reached from before it: static pools and
    node groups stay cordoned and empty until the next wave moves them (Karpenter pools are drained
    when it replaces their nodes, in that wave)."""
    if source is not None and source.index > target.index:
        return ()
    return drained_by_hand(plan, target.drains)


def _active(state: WaveState, modes: dict[str, str]) -> dict[str, str]:
    """DRA pools offer devices only once the driver runs; a new group not created yet offers none."""
    return {
        p: "absent"
        if not state.present(p)
        else ("dra-no-driver" if m == "dra" and not state.driver_installed else m)
        for p, m in modes.items()
    }


def moment_classes(plan: Plan, state: WaveState) -> dict[str, DeviceClass]:
    """DeviceClasses that exist in `state`: the tiers and bridges it enables and the chart's own."""
    p = plan.platform
    tiers = {t.name: t for t in p.tiers}
    classes: dict[str, DeviceClass] = {}
    if state.driver_installed:
        served = chart_class_resources(plan, state)
        for c in driver_device_classes(p.dra_driver.chart_version):
            classes[c.name] = DeviceClass(c.name, (c.selector,), (), served.get(c.name, ""))
    for name in state.tiers:
        classes[p.class_name(name)] = DeviceClass(p.class_name(name), (tier_expression(tiers[name]),))
    for bridge in p.bridges:
        if bridge.name in state.bridges and bridge.source == "platform":
            expression = tier_expression(tiers[bridge.tier]) if bridge.tier else full_gpu_expression()
            name = p.class_name(bridge.name)
            classes[name] = DeviceClass(name, (expression,), (), bridge.extended_resource_name)
    return classes


def chart_class_resources(plan: Plan, state: WaveState) -> dict[str, str]:
    """The chart's DeviceClasses that serve an extended resource in `state`, as the chart model
    renders the wave's release with its post-render patches (the chart-class patch removes
    `extendedResourceName` until the bridge wave), and only where the API server keeps the field
    (DRAExtendedResource on)."""
    if not plan.chart_bridge_live:
        return {}
    rendered = render_dra_driver(
        plan.platform.dra_driver.chart_version, dra_driver_values(plan), chart_class_patches(plan, state)
    )
    return {
        name: str(spec["extendedResourceName"])
        for name, spec in rendered.classes.items()
        if spec.get("extendedResourceName")
    }


def moment_bridges(plan: Plan, state: WaveState, classes: dict[str, DeviceClass]) -> dict[str, str]:
    """Extended resource -> the class serving it: the newest platform bridge, else the chart's class
    where the wave's release renders it with `extendedResourceName`."""
    out: dict[str, str] = {}
    chart = classes.get(CHART_GPU_CLASS)
    if chart is not None and chart.extended_resource_name:
        out[chart.extended_resource_name] = CHART_GPU_CLASS
    bridges = {b.name: b for b in plan.platform.bridges}
    for name in state.bridges:
        bridge = bridges[name]
        if bridge.source == "platform" and state.driver_installed:
            out[bridge.extended_resource_name] = plan.platform.class_name(name)
        elif bridge.source == "chart" and CHART_GPU_CLASS in classes:
            out[bridge.extended_resource_name] = CHART_GPU_CLASS
    return out
