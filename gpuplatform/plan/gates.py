"""The gates of each wave: which invariants a wave has, what each reads and may do to the API.

A gate is stateless: it checks what must hold in the wave it belongs to, whichever way the wave
is reached (advance or rollback). Pre-transition gates (`protects` non-empty) run before the
layers they protect and block them; post-transition gates run after the wave is applied. Which
gates a wave has is wave semantics, so the catalog lives here; each gate's program and data are
rendered by `gates/`, and judged on a snapshot by `evidence/`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from gpuplatform.plan.waves import Plan, WaveState

__all__ = [
    "EVIDENCE_CHECKS",
    "GATES",
    "Access",
    "Gate",
    "evidence_checks",
    "gate_data",
    "gates_for_wave",
]

Phase = Literal["pre", "post"]
Scope = Literal["cluster", "validation", "gates"]


@dataclass(frozen=True)
class Access:
    """What a gate's script does to the API: verbs on a resource, cluster-wide or in one namespace."""

    scope: Scope
    group: str
    resource: str
    verbs: tuple[str, ...]


def _lists(*resources: tuple[str, str]) -> tuple[Access, ...]:
    return tuple(Access("cluster", group, resource, ("list",)) for group, resource in resources)


def _releases(scope: Scope) -> tuple[Access, ...]:
    """Read a validation pod's log, remove the pod, watch its claim go. `kubectl logs` reads the pod
    itself before its log (`get pods`, k8s.io/kubectl v0.36.3 pkg/cmd/logs/logs.go `Complete`, a
    builder GET of the named pod): without it every read of a probe's log is Forbidden (found by the
    rehearsal, where RBAC decides)."""
    return (
        Access(scope, "", "pods", ("get", "delete")),
        Access(scope, "", "pods/log", ("get",)),
        Access(scope, "resource.k8s.io", "resourceclaims", ("get",)),
    )


NODES = ("", "nodes")
PODS = ("", "pods")
SLICES = ("resource.k8s.io", "resourceslices")
CLAIMS = ("resource.k8s.io", "resourceclaims")
CLASSES = ("resource.k8s.io", "deviceclasses")
KUEUE_WORKLOADS = ("kueue.x-k8s.io", "workloads")
CLUSTER_QUEUES = ("kueue.x-k8s.io", "clusterqueues")
_KIND = {
    NODES: "nodes",
    PODS: "pods",
    SLICES: "resourceslices",
    CLAIMS: "resourceclaims",
    CLASSES: "deviceclasses",
    KUEUE_WORKLOADS: "workloads",
    CLUSTER_QUEUES: "clusterqueues",
}


@dataclass(frozen=True)
class Gate:
    """A wave invariant: id, what it checks, the layers it runs before (empty: after the wave)."""

    id: str
    title: str
    protects: tuple[str, ...]
    reads: tuple[tuple[str, str], ...]
    """(apiGroup, resource) the verdict reads, each listed cluster-wide."""
    data: tuple[str, ...]
    """Keys of the wave's facts (`render/gate_facts.py`) the verdict uses."""
    applies: Callable[[Plan, WaveState], bool]
    access: tuple[Access, ...] = ()
    """Namespaced access beyond listing `reads` (logs, removing validation pods)."""
    logs: str = ""
    """jq selecting the pods whose logs the verdict reads, as `<namespace> <pod>` lines."""

    @property
    def phase(self) -> Phase:
        return "pre" if self.protects else "post"

    @property
    def kinds(self) -> tuple[str, ...]:
        """The snapshot kinds the verdict reads."""
        return tuple(_KIND[r] for r in self.reads)

    def accesses(self) -> tuple[Access, ...]:
        """Everything the gate's identity must be allowed, and nothing more."""
        return _lists(*self.reads) + self.access


def _driver_and_dra(plan: Plan, state: WaveState) -> bool:
    return state.driver_installed and bool(state.dra_pools)


def _validation_runs(plan: Plan, state: WaveState) -> bool:
    v = plan.platform.validation
    return state.validation and v is not None and v.tenant in state.tenants


_POOLS = ("driver", "pools")
GATES: tuple[Gate, ...] = (
    Gate(
        "rollback-safety",
        "no claim is allocated, and no pod holding a claim is terminating, on a node this wave does not declare DRA",
        ("00-operators", "10-nodes"),
        (NODES, PODS, CLAIMS),
        (*_POOLS, "driverInstalled"),
        lambda plan, state: bool(state.legacy_pools) or not state.driver_installed,
    ),
    Gate(
        "allocator-exclusivity",
        "no node has both allocators; DRA nodes run a ready kubelet plugin and no device-plugin pod or "
        "nvidia.com/* resource; legacy nodes run no kubelet plugin, publish no devices and have a ready device plugin; "
        "no pod on a GPU node reaches GPUs through NVIDIA_VISIBLE_DEVICES with no request or claim (a third allocator)",
        (),
        (NODES, PODS, SLICES),
        (
            *_POOLS,
            "modeLabel",
            "driverNamespace",
            "operatorNamespace",
            "devicePluginLabel",
            "devicePluginEnabled",
        ),
        lambda plan, state: state.driver_installed,
    ),
    Gate(
        "inventory",
        "every DRA node publishes the devices its pool declares (count, product, memory); every tier's DeviceClass exists",
        (),
        (NODES, SLICES, CLASSES),
        (*_POOLS, "inventory", "deviceClasses"),
        _driver_and_dra,
    ),
    Gate(
        "operands",
        "the GPU Operator's operands are Ready on every DRA node that schedules them; the DRA driver controller is Ready where the release renders it",
        (),
        (NODES, PODS),
        (*_POOLS, "operands", "operatorNamespace", "driverNamespace", "driverController"),
        _driver_and_dra,
    ),
    Gate(
        "claim-pilot",
        "the validation pod's claim is allocated on a DRA node, its container saw that device's UUID, "
        "and the claim is released once the gate removes the pod",
        (),
        (NODES, PODS, CLAIMS, SLICES),
        (*_POOLS, "validation"),
        _validation_runs,
        _releases("validation"),
        "$data.validation as $v | job_pods($in; $v.namespace; $v.job)[]",
    ),
    Gate(
        "bridge",
        "an unchanged nvidia.com/gpu pod sees exactly one GPU on a legacy node (device plugin) and on a DRA node (bridge claim)",
        (),
        (NODES, PODS, CLAIMS, SLICES),
        (*_POOLS, "bridge"),
        lambda plan, state: bool(state.bridges),
        _releases("gates"),
        "$data.bridge as $b | $b.sides[] | job_pods($in; $b.namespace; .job)[]",
    ),
)


#: Evidence with no Job of its own: `gpuplatform evidence` checks these against a snapshot.
EVIDENCE_CHECKS: tuple[Gate, ...] = (
    Gate(
        "early-bridge",
        "no DeviceClass serves nvidia.com/gpu and no pod holds it through a bridge claim before a "
        "compatibility-bridge wave enables a bridge",
        (),
        (PODS, CLASSES),
        ("bridgeAllowed",),
        lambda plan, state: True,
    ),
    Gate(
        "claim-placement",
        "claims are allocated only on nodes this wave declares DRA",
        (),
        (NODES, CLAIMS),
        _POOLS,
        lambda plan, state: True,
    ),
    Gate(
        "cleanup",
        "no claim stays reserved for, or allocated to, a pod that finished or no longer exists",
        (),
        (PODS, CLAIMS),
        (),
        lambda plan, state: True,
    ),
    Gate(
        "drained",
        "no live pod on a node of a pool this drain wave empties holds a GPU: any nvidia.com/* request or "
        "limit (whole GPUs, MIG slices, time-sliced or renamed resources) or a resource claim",
        (),
        (NODES, PODS),
        ("pools", "drains"),
        lambda plan, state: bool(state.drains),
    ),
    Gate(
        "kueue-admission",
        "no Kueue workload of a migrated namespace waits for a GPU resource its ClusterQueue does not "
        "cover, and every such ClusterQueue is active",
        (),
        (KUEUE_WORKLOADS, CLUSTER_QUEUES),
        ("kueue",),
        lambda plan, state: plan.platform.kueue is not None,
    ),
    Gate(
        "spec-nodes-exist",
        "every node the spec names exists (a misspelt SSA Node would be a phantom), every pool can be found",
        (),
        (NODES,),
        ("pools",),
        lambda plan, state: True,
    ),
)


def gates_for_wave(plan: Plan, state: WaveState) -> list[Gate]:
    """The gates that apply to `state`, pre-transition gates first."""
    return sorted((g for g in GATES if g.applies(plan, state)), key=lambda g: (g.phase != "pre", g.id))


def evidence_checks(plan: Plan, state: WaveState) -> list[Gate]:
    """The evidence-only checks that apply to `state` (`drained` only in a drain wave)."""
    return [g for g in EVIDENCE_CHECKS if g.applies(plan, state)]


def gate_data(gate: Gate, facts: dict[str, Any]) -> dict[str, Any]:
    """The facts `gate` judges by, out of the wave's `facts` (`wave_data`, computed once per wave)."""
    return {key: facts[key] for key in gate.data}
