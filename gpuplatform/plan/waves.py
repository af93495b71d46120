"""Platform -> the desired state of every wave: the one place that knows wave semantics.

Rules, in order of the spec:
- a pool is DRA from the wave named by its `migratesIn` (absent: from the final-cutover wave);
- the DRA driver is installed from the first wave after `baseline`;
- tiers, bridges and tenants named by a wave stay on in every later wave;
- a workload or NIM service is converted from the wave named by its `movesIn`;
- a pool that takes nodes over from another (`takesOverFrom`) does not exist before its
  `migratesIn` wave and is DRA from it; the pool it takes them from has that many fewer;
- the device plugin stays enabled while any pool is legacy;
- the validation workload exists from the first `native-claim-pilot` wave on;
- a `drain` wave changes nothing itself: it drains the pools the next wave moves between
  allocators (their nodes hold no GPU workload of the allocator they leave before they move);
  so no pool migrates in a drain wave (`drain_wave_moves` names those that try: a pool moves in
  the wave after the drain).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Literal

from gpuplatform.model.nodes import NodePool
from gpuplatform.model.platform import Platform
from gpuplatform.model.waves import STAGES, Wave
from gpuplatform.versions import (
    CHART_BRIDGE_SINCE,
    dra_driver_at_least,
    kube_gate_enabled,
    parse_release,
)

__all__ = [
    "Mode",
    "Plan",
    "WaveState",
    "drain_wave_moves",
    "plan_platform",
    "validator_workaround",
    "wave_dir_name",
]

Mode = Literal["legacy", "dra"]


def wave_dir_name(index: int, wave: Wave) -> str:
    """`<NN>-<wave>`: the folder of a wave under `waves/`."""
    return f"{index:02d}-{wave.name}"


def _stage_reached(waves: tuple[Wave, ...], upto: int, stage: str) -> bool:
    return any(STAGES.index(w.stage) >= STAGES.index(stage) and w.stage != "drain" for w in waves[: upto + 1])


@dataclass(frozen=True)
class WaveState:
    """Everything that exists in one wave."""

    index: int
    wave: Wave
    pool_modes: dict[str, Mode]
    driver_installed: bool
    tiers: tuple[str, ...]
    bridges: tuple[str, ...]
    tenants: tuple[str, ...]
    workloads: tuple[int, ...]
    """Indexes into `Platform.workloads` of the workloads already converted."""
    nim_services: tuple[str, ...]
    validation: bool
    drains: tuple[str, ...] = ()
    """Pools this (`drain`) wave empties because the next wave moves them between allocators."""
    absent: tuple[str, ...] = ()
    """Pools that do not exist yet: new groups (`takesOverFrom`) created in a later wave. Their mode
    is `dra` (what they are born with), but no node, gate or hand-off of theirs exists here."""

    @property
    def name(self) -> str:
        return self.wave.name

    @property
    def dir_name(self) -> str:
        return wave_dir_name(self.index, self.wave)

    @property
    def dra_pools(self) -> tuple[str, ...]:
        """Pools on DRA that exist in this wave."""
        return tuple(n for n, m in self.pool_modes.items() if m == "dra" and n not in self.absent)

    def present(self, pool: str) -> bool:
        """Whether the pool's nodes exist in this wave (False for a new group not created yet)."""
        return pool not in self.absent

    @property
    def legacy_pools(self) -> tuple[str, ...]:
        return tuple(n for n, m in self.pool_modes.items() if m == "legacy")

    @property
    def bridge_allowed(self) -> bool:
        """Whether a bridge may serve unmigrated `nvidia.com/gpu` pods: the wave's stage is at or after
        `compatibility-bridge` (DESIGN.md's order) and it enables a bridge. A bridge the spec declares
        earlier is an early bridge (GP130 refuses it in `check`, `simulate` and `evidence` prove it)."""
        return bool(self.bridges) and STAGES.index(self.wave.stage) >= STAGES.index("compatibility-bridge")

    @property
    def device_plugin_enabled(self) -> bool:
        """`devicePlugin.enabled` of the GPU Operator: off only when no legacy pool remains."""
        return bool(self.legacy_pools)


@dataclass(frozen=True)
class Plan:
    """The wave states of one platform, in order."""

    platform: Platform
    waves: tuple[WaveState, ...]

    @cached_property
    def pools(self) -> dict[str, NodePool]:
        return {p.name: p for p in self.platform.node_pools}

    def wave(self, name: str) -> WaveState:
        """The state of the wave called `name` (KeyError if there is none)."""
        for state in self.waves:
            if state.name == name:
                return state
        raise KeyError(name)

    def no_wave(self, name: str) -> str:
        """What to say about a wave this plan lacks: the waves it has, in order."""
        waves = ", ".join(s.name for s in self.waves)
        return f"platform {self.platform.name!r} has no wave {name!r} (waves: {waves})"

    @cached_property
    def _takeovers(self) -> tuple[tuple[str, str, int], ...]:
        """(new pool, pool it takes nodes from, nodes taken) of every `takesOverFrom`."""
        return tuple(
            (p.name, p.takes_over_from, p.provisioner.min_nodes)
            for p in self.platform.node_pools
            if p.takes_over_from is not None and p.provisioner is not None
        )

    def given(self, state: WaveState, name: str) -> int:
        """Nodes pool `name` has given to the new groups that exist in `state` (`takesOverFrom`)."""
        return self.given_all(state).get(name, 0)

    def given_all(self, state: WaveState) -> dict[str, int]:
        """Pool -> nodes it has given to new groups in `state` (only pools that gave any)."""
        given: dict[str, int] = {}
        for new, source, nodes in self._takeovers:
            if state.present(new):
                given[source] = given.get(source, 0) + nodes
        return given

    def pool_in(self, state: WaveState, name: str) -> NodePool:
        """Pool `name` as it is in `state`: a group that gave nodes to a new group has that many fewer
        (its `minNodes`, `maxNodes` and Karpenter `limits.nodes` lowered; never below 0)."""
        pool = self.pools[name]
        given = self.given(state, name)
        if not given or pool.provisioner is None:
            return pool
        owner = pool.provisioner
        limits = dict(owner.limits)
        if isinstance(limits.get("nodes"), int):
            limits["nodes"] = max(0, int(limits["nodes"]) - given)
        fewer = owner.model_copy(
            update={
                "min_nodes": max(0, owner.min_nodes - given),
                "max_nodes": None if owner.max_nodes is None else max(0, owner.max_nodes - given),
                "limits": limits,
            }
        )
        return pool.model_copy(update={"provisioner": fewer})

    @property
    def active(self) -> WaveState:
        return self.wave(self.platform.active_wave)

    def chart_bridges(self, state: WaveState) -> bool:
        """The chart's `gpu.nvidia.com` class serves `nvidia.com/gpu` in `state`: only from the wave
        that names it as a bridge (`source: chart`); before, the renderer patches the field away."""
        chart = {b.name for b in self.platform.bridges if b.source == "chart"}
        return state.driver_installed and self.chart_bridge_live and bool(chart & set(state.bridges))

    @cached_property
    def chart_bridge_live(self) -> bool:
        """The chart's `gpu.nvidia.com` class serves `nvidia.com/gpu` once the driver is installed.

        True when the chart is 25.12.0 or newer and DRAExtendedResource is on for the target release.
        """
        p = self.platform
        minor = parse_release(p.kubernetes.version).minor
        gate = kube_gate_enabled(p.kubernetes.feature_gates, "DRAExtendedResource", minor)
        return gate and dra_driver_at_least(parse_release(p.dra_driver.chart_version), CHART_BRIDGE_SINCE)


def validator_workaround(platform: Platform, pool: NodePool, device_plugin_enabled: bool) -> bool:
    """Whether the pool's DRA nodes carry `nvidia.com/gpu.deploy.operator-validator=false`: only when the
    pool asks for it (`operatorValidator: false`), and then only while the device plugin is enabled.

    The workaround silences the validator's crash loop in `plugin-validation` on nodes without
    `nvidia.com/gpu` (NVIDIA/gpu-operator#2550; that init container exists only while
    `devicePlugin.enabled`, object_controls.go `TransformValidatorComponent`). It costs more than the
    crash loop: stopping the validator runs its preStop (`rm -f /run/nvidia/validations/*-ready`) and
    nothing else writes `toolkit-ready` again, so after any restart, driver upgrade (the operator's
    upgrade controller runs them unattended) or on a new node, GFD, DCGM and the MIG manager wait
    for it for ever. By default the validator keeps running: its `toolkit-validation` writes the
    marker before `plugin-validation` fails.
    """
    return pool.operator_validator is False and device_plugin_enabled


def drain_wave_moves(platform: Platform) -> list[tuple[int, NodePool, int]]:
    """(pool index, pool, wave index) of every pool whose `migratesIn` names a `drain` wave.

    A drain wave changes no state: it empties the pools the *next* wave moves. A pool that moved in
    the drain wave itself would move while its nodes are being drained, so it must move in the wave
    after the drain (every name is defined: a Platform checks its references when built).
    """
    index = {w.name: i for i, w in enumerate(platform.waves)}
    return [
        (i, pool, index[pool.migrates_in])
        for i, pool in enumerate(platform.node_pools)
        if pool.migrates_in is not None and platform.waves[index[pool.migrates_in]].stage == "drain"
    ]


def plan_platform(platform: Platform) -> Plan:
    """Compute the state of every wave of `platform` (whose references it checked when built)."""
    waves = platform.waves
    index = {w.name: i for i, w in enumerate(waves)}
    cutover = next((i for i, w in enumerate(waves) if w.stage == "final-cutover"), None)
    states: list[WaveState] = []
    tiers: list[str] = []
    bridges: list[str] = []
    tenants: list[str] = []
    for i, wave in enumerate(waves):
        tiers += [t for t in wave.tiers if t not in tiers]
        bridges += [b for b in wave.bridges if b not in bridges]
        tenants += [t for t in wave.tenants if t not in tenants]
        modes: dict[str, Mode] = {}
        absent: list[str] = []
        for pool in platform.node_pools:
            start = index[pool.migrates_in] if pool.migrates_in is not None else cutover
            modes[pool.name] = "dra" if start is not None and i >= start else "legacy"
            if pool.takes_over_from is not None and start is not None:
                modes[pool.name] = "dra"
                absent += [pool.name] * (i < start)
        states.append(
            WaveState(
                index=i,
                wave=wave,
                pool_modes=modes,
                driver_installed=_stage_reached(waves, i, "pilot-pool"),
                tiers=tuple(tiers),
                bridges=tuple(bridges),
                tenants=tuple(tenants),
                workloads=tuple(j for j, w in enumerate(platform.workloads) if index[w.moves_in] <= i),
                nim_services=tuple(n.name for n in platform.nim_services if index[n.moves_in] <= i),
                validation=platform.validation is not None and _stage_reached(waves, i, "native-claim-pilot"),
                absent=tuple(absent),
            )
        )
    for i, state in enumerate(states[:-1]):
        if state.wave.stage == "drain":
            after = states[i + 1].pool_modes
            moving = tuple(p for p, mode in state.pool_modes.items() if after[p] != mode)
            states[i] = replace(state, drains=moving)
    return Plan(platform, tuple(states))
