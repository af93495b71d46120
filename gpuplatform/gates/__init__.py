"""Wave gates: each wave's invariants as data, evaluated in the cluster by Jobs (kubectl + jq).

A gate is stateless: it checks what must hold in the wave it belongs to, whichever way the wave
is reached (advance or rollback). Pre-transition gates (`protects` non-empty) run before the
layers they protect and block them; post-transition gates run after the wave is applied and retry
until the invariant holds or their timeout passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gpuplatform.gates import scripts
from gpuplatform.plan.waves import Plan, WaveState

__all__ = ["GATES", "Gate", "gate_reads", "gate_script", "gates_for_wave", "node_names"]

Phase = Literal["pre", "post"]


@dataclass(frozen=True)
class Gate:
    """A wave invariant: id, what it checks, the layers it must run before (empty: after the wave)."""

    id: str
    title: str
    protects: tuple[str, ...]
    reads: tuple[tuple[str, str], ...]
    applies: Callable[[Plan, WaveState], bool]
    body: Callable[[], str]

    @property
    def phase(self) -> Phase:
        return "pre" if self.protects else "post"


def node_names(plan: Plan, state: WaveState, mode: str) -> list[str]:
    """The named nodes of the static pools in `mode` in this wave."""
    return [n for pool in plan.platform.node_pools if state.pool_modes[pool.name] == mode for n in pool.nodes]


GATES: tuple[Gate, ...] = (
    Gate(
        "rollback-safety",
        "no ResourceClaim is allocated on a node this wave declares legacy",
        ("00-operators", "10-nodes"),
        (("resource.k8s.io", "resourceclaims"),),
        lambda plan, state: bool(node_names(plan, state, "legacy")),
        scripts.rollback_safety,
    ),
    Gate(
        "allocator-exclusivity",
        "no device-plugin pod and no nvidia.com/gpu allocatable on DRA nodes; the DRA kubelet plugin on each",
        (),
        (("", "nodes"), ("", "pods")),
        lambda plan, state: state.driver_installed and bool(node_names(plan, state, "dra")),
        scripts.allocator_exclusivity,
    ),
    Gate(
        "inventory",
        "every DRA node publishes a ResourceSlice; every tier's DeviceClass exists",
        (),
        (("resource.k8s.io", "resourceslices"), ("resource.k8s.io", "deviceclasses")),
        lambda plan, state: state.driver_installed and bool(node_names(plan, state, "dra")),
        scripts.inventory,
    ),
    Gate(
        "claim-pilot",
        "the validation claim is allocated on a DRA node and the container saw its device UUID",
        (),
        (
            ("", "pods"),
            ("", "pods/log"),
            ("resource.k8s.io", "resourceclaims"),
            ("resource.k8s.io", "resourceslices"),
        ),
        lambda plan, state: state.validation,
        scripts.claim_pilot,
    ),
)


def gates_for_wave(plan: Plan, state: WaveState) -> list[Gate]:
    """The gates that apply to `state`, pre-transition gates first."""
    return sorted((g for g in GATES if g.applies(plan, state)), key=lambda g: (g.phase != "pre", g.id))


def gate_script(gate: Gate, plan: Plan, state: WaveState) -> str:
    """The POSIX sh script the gate's Job runs (exit 0 = the invariant holds)."""
    p = plan.platform
    variables = {
        "LEGACY_NODES": " ".join(node_names(plan, state, "legacy")),
        "DRA_NODES": " ".join(node_names(plan, state, "dra")),
        "DRA_NAMESPACE": p.dra_driver.namespace,
        "DEVICE_CLASSES": " ".join(p.class_name(t) for t in state.tiers),
    }
    if p.validation is not None:
        tenant = next(t for t in p.tenants if t.name == p.validation.tenant)
        variables |= {"NAMESPACE": tenant.ns, "JOB": p.validation.name}
    used = {k: v for k, v in variables.items() if f"${k}" in gate.body() or f'"${k}"' in gate.body()}
    timeout = 0 if gate.phase == "pre" else p.delivery.timeout_minutes * 60
    return scripts.wrap(gate.id, used, gate.body(), timeout)


def gate_reads(gate: Gate) -> list[tuple[str, str]]:
    """(apiGroup, resource) the gate's script reads: its RBAC is exactly get/list/watch on these."""
    return sorted(gate.reads)
