"""Wave order and preview features: prove each step before the next, and keep alpha out of production."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

from gpuplatform.model.waves import Wave
from gpuplatform.plan.transitions import claim_changes, pool_moves
from gpuplatform.plan.waves import drain_wave_moves
from gpuplatform.policy.registry import Finding, RuleContext, rule
from gpuplatform.versions import DRA_DRIVER_FEATURE_GATES

__all__ = ["SHARING_GATES", "risky_waves"]

#: Tier sharing modes and the alpha driver gate each needs.
SHARING_GATES = {"time-slicing": "TimeSlicingSettings", "mps": "MPSSupport"}


def _first(waves: tuple[Wave, ...], stage: str) -> int | None:
    return next((i for i, w in enumerate(waves) if w.stage == stage), None)


def risky_waves(ctx: RuleContext) -> list[int]:
    """Waves where preview features are refused: production waves and the final cutover."""
    return [i for i, w in enumerate(ctx.platform.waves) if w.production or w.stage == "final-cutover"]


@rule(
    "GP130",
    "error",
    "a transition moves nodes and claim-bearing objects at once",
    """
Argo CD and Flux apply a wave's layers in one direction: operators, nodes, classes, policy,
tenants. If two adjacent waves differ both in which allocator a pool has and in the claim-bearing
objects (tenants, bridges, converted workloads, NIM services, the validation workload), then
rolling back relabels the nodes before the claims on them are released. Split the two changes into
two waves: the pool moves in a wave of its own (its `migratesIn`), the claim-bearing objects in
another (their wave's `tenants`/`bridges`, their `movesIn`). A `drain` wave alone splits nothing:
it changes no state, so the wave after it still does both.
""",
)
def drain_needed(ctx: RuleContext) -> Iterator[Finding]:
    states = ctx.plan.waves
    pools = {p.name: i for i, p in enumerate(ctx.platform.node_pools)}
    for left, right in pairwise(states):
        moves, claims = pool_moves(left, right), claim_changes(left, right)
        if moves and claims:
            fields = ", ".join(f"spec.nodePools[{pools[p]}].migratesIn" for p in moves)
            yield Finding(
                f"spec.waves[{right.index}]",
                f"wave {right.name!r} moves pool(s) {', '.join(moves)} and changes {', '.join(claims)}",
                f"split the changes: migrate pool(s) {', '.join(moves)} in a wave of their own "
                f"({fields}), apart from the wave that changes {', '.join(claims)}; "
                "a drain wave alone does not split them",
            )


@rule(
    "GP270",
    "warning",
    "a drain wave that drains nothing",
    """
A `drain` wave changes no state of its own: it is the stop where the nodes of the pools the next
wave moves between allocators are emptied (no device-plugin GPU pod before they move to DRA; no
allocated ResourceClaim before they move back), and its runbook says which nodes and how to check.
A drain wave whose next wave moves no pool has nothing to drain: remove it, or place it right
before the wave that moves the pools.
""",
)
def drain_without_pool(ctx: RuleContext) -> Iterator[Finding]:
    states = ctx.plan.waves
    for state in states:
        if state.wave.stage == "drain" and not state.drains:
            nxt = (
                f"the next wave {states[state.index + 1].name!r}"
                if state.index + 1 < len(states)
                else "no wave"
            )
            yield Finding(
                f"spec.waves[{state.index}]",
                f"drain wave {state.name!r} drains nothing: {nxt} moves no pool between allocators",
                "remove the wave, or move it right before the wave in which pools migrate",
            )


@rule(
    "GP271",
    "error",
    "a pool migrates in a drain wave",
    """
A `drain` wave changes no state of its own: it drains the pools the next wave moves between
allocators. A pool whose `migratesIn` names the drain wave itself would switch allocators while its
nodes are being drained, and the drain wave would both move it and (per GP270) drain nothing.
The pool moves in the wave after the drain; the drain wave then drains it
(`gpuplatform/plan/waves.py`, docs/guide.md "Waves").
""",
)
def pool_moves_in_drain_wave(ctx: RuleContext) -> Iterator[Finding]:
    waves = ctx.platform.waves
    for i, pool, at in drain_wave_moves(ctx.platform):
        yield Finding(
            f"spec.nodePools[{i}].migratesIn",
            f"pool {pool.name!r} migrates in drain wave {waves[at].name!r}: a drain wave moves no pool, "
            "it drains the pools the next wave moves",
            f"move it in the wave after the drain: migratesIn: {waves[at + 1].name}",
        )


@rule(
    "GP131",
    "error",
    "a pool migrates before the DRA driver is installed and validated",
    """
The pilot pool moves in the `pilot-pool` wave, which installs the DRA driver; every other pool
moves only after a `driver-validation` wave has proved that the kubelet plugin runs and publishes
ResourceSlices. A pool that migrates earlier loses the device plugin with nothing to replace it.
""",
)
def pool_before_driver(ctx: RuleContext) -> Iterator[Finding]:
    waves = ctx.platform.waves
    index = {w.name: i for i, w in enumerate(waves)}
    validated = _first(waves, "driver-validation")
    for i, pool in enumerate(ctx.platform.node_pools):
        if pool.migrates_in is None:
            continue
        at = index[pool.migrates_in]
        if validated is not None and at > validated:
            continue
        if waves[at].stage != "pilot-pool":
            yield Finding(
                f"spec.nodePools[{i}].migratesIn",
                f"pool {pool.name!r} migrates in wave {pool.migrates_in!r} ({waves[at].stage}), "
                "before a driver-validation wave",
                "move migratesIn to a wave after the driver-validation wave, or to the pilot-pool wave",
            )


@rule(
    "GP132",
    "error",
    "a bridge before the native claim pilot",
    """
The extended-resource bridge sends unmodified `nvidia.com/gpu` pods to DRA devices. Enable it only
after a `native-claim-pilot` wave has proved one full-GPU claim end to end.
""",
)
def bridge_before_pilot(ctx: RuleContext) -> Iterator[Finding]:
    pilot = _first(ctx.platform.waves, "native-claim-pilot")
    for i, wave in enumerate(ctx.platform.waves):
        if wave.bridges and (pilot is None or i <= pilot):
            yield Finding(
                f"spec.waves[{i}].bridges",
                f"wave {wave.name!r} enables bridge(s) {', '.join(wave.bridges)} before a native-claim-pilot wave",
                "enable bridges in a compatibility-bridge wave after the native-claim-pilot wave",
            )


@rule(
    "GP133",
    "error",
    "MIG tiers before a full-GPU tier is validated",
    """
MIG devices add partitioning to everything a full-GPU claim already exercises. Publish a MIG tier
only after a full-GPU tier has been through a `native-claim-pilot` wave.
""",
)
def mig_before_full_gpu(ctx: RuleContext) -> Iterator[Finding]:
    waves = ctx.platform.waves
    tiers = {t.name: t for t in ctx.platform.tiers}
    proven: int | None = None
    for i, wave in enumerate(waves):
        has_gpu = any(tiers[t].device_type == "gpu" for t in ctx.plan.waves[i].tiers)
        if proven is None and wave.stage == "native-claim-pilot" and has_gpu:
            proven = i
        for j, name in enumerate(wave.tiers):
            if tiers[name].device_type == "mig" and (proven is None or i <= proven):
                yield Finding(
                    f"spec.waves[{i}].tiers[{j}]",
                    f"MIG tier {name!r} is published in wave {wave.name!r} before a full-GPU tier is validated",
                    "publish it in a wave after a native-claim-pilot wave with a full-GPU tier",
                )


@rule(
    "GP140",
    "error",
    "an alpha driver feature in production or in the final cutover",
    """
Dynamic MIG, MPS, time-slicing and passthrough are alpha in the NVIDIA DRA driver: off by default,
without compatibility guarantees, and able to disturb every claim on a node. They are refused in
waves marked `production: true` and in the final cutover unless named in
`spec.accept.alphaFeatures` (gate names, e.g. `DynamicMIG`).
""",
)
def alpha_in_production(ctx: RuleContext) -> Iterator[Finding]:
    risky = risky_waves(ctx)
    accepted = set(ctx.platform.accept.alpha_features)
    if not risky:
        return
    first = ctx.platform.waves[risky[0]].name
    for name, enabled in sorted(ctx.platform.dra_driver.feature_gates.items()):
        gate = DRA_DRIVER_FEATURE_GATES.get(name)
        if enabled and gate is not None and gate.stage == "alpha" and name not in accepted:
            yield Finding(
                f"spec.draDriver.featureGates.{name}",
                f"alpha driver gate {name} is on in wave {first!r}",
                f"add {name} to spec.accept.alphaFeatures, or turn it off",
            )
    for i, tier in enumerate(ctx.platform.tiers):
        gate_name = SHARING_GATES.get(tier.sharing)
        used = [w for w in risky if tier.name in ctx.plan.waves[w].tiers]
        if gate_name is not None and used and gate_name not in accepted:
            yield Finding(
                f"spec.tiers[{i}].sharing",
                f"tier {tier.name!r} uses {tier.sharing} (alpha {gate_name}) in wave {ctx.platform.waves[used[0]].name!r}",
                f"add {gate_name} to spec.accept.alphaFeatures, or keep the tier out of that wave",
            )


@rule(
    "GP115",
    "error",
    "a sharing tier without the driver feature gate that implements it",
    """
A tier with `sharing: mps` or `sharing: time-slicing` passes sharing settings in its opaque
GpuConfig; the NVIDIA DRA driver accepts them only with the MPSSupport or TimeSlicingSettings
gate on (both alpha, off by default), and otherwise fails to prepare every claim on the tier.
Enable the gate in `spec.draDriver.featureGates` (and accept it for production, GP140).
""",
)
def sharing_without_gate(ctx: RuleContext) -> Iterator[Finding]:
    gates = ctx.platform.dra_driver.feature_gates
    for i, tier in enumerate(ctx.platform.tiers):
        gate_name = SHARING_GATES.get(tier.sharing)
        if gate_name is not None and not gates.get(gate_name, False):
            yield Finding(
                f"spec.tiers[{i}].sharing",
                f"tier {tier.name!r} uses {tier.sharing}, but DRA driver gate {gate_name} is not enabled",
                f"set spec.draDriver.featureGates.{gate_name}: true",
            )
