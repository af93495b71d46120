"""What a gate is: an invariant of a wave, what it reads and may do to the API, and its jq program.

A gate is stateless: it checks what must hold in the wave it belongs to, whichever way the wave
is reached (advance or rollback). A Job gate (`job`) runs in the cluster as a Job of its wave:
before the layers it `protects` (pre-transition), or after the wave is applied (post-transition).
An evidence check has no Job: `gpuplatform evidence` runs its program on a snapshot. Each gate is
one module of `gates/catalog/`; which waves have it is its `applies`, over the plan's types (the
plan asks the gates which a wave has, so this package names those types for type checkers only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from gpuplatform.plan.waves import Plan, WaveState

__all__ = [
    "CLAIMS",
    "CLASSES",
    "CLUSTER_QUEUES",
    "KUEUE_WORKLOADS",
    "NODES",
    "PODS",
    "POOLS",
    "SLICES",
    "Access",
    "Gate",
    "Phase",
    "always",
    "driver_and_dra",
    "releases",
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
#: The facts (`render/gate_facts.py`) of every gate that finds the wave's pools' nodes.
POOLS = ("driver", "pools")


@dataclass(frozen=True, kw_only=True)
class Gate:
    """A wave invariant: its id, what it checks, when a wave has it and the program that judges it."""

    id: str
    title: str
    job: bool
    """A Job of its wave (True), or an evidence check run only on a snapshot."""
    protects: tuple[str, ...] = ()
    """The layers a Job gate runs before (empty: after the wave)."""
    reads: tuple[tuple[str, str], ...]
    """(apiGroup, resource) the verdict reads, each listed cluster-wide."""
    data: tuple[str, ...]
    """Keys of the wave's facts (`render/gate_facts.py`) the verdict uses."""
    applies: Callable[[Plan, WaveState], bool]
    access: tuple[Access, ...] = ()
    """Namespaced access beyond listing `reads` (logs, removing validation pods)."""
    logs: str = ""
    """jq selecting the pods whose logs the verdict reads, as `<namespace> <pod>` lines."""
    program: str
    """The jq definition `gate_<id>` (and any helper of its own) over the prelude (`programs.py`)."""

    @property
    def phase(self) -> Phase:
        return "pre" if self.protects else "post"

    @property
    def kinds(self) -> tuple[str, ...]:
        """The snapshot kinds the verdict reads."""
        return tuple(_KIND[r] for r in self.reads)

    def accesses(self) -> tuple[Access, ...]:
        """Everything the gate's identity must be allowed, and nothing more."""
        return (
            tuple(Access("cluster", group, resource, ("list",)) for group, resource in self.reads)
            + self.access
        )


def always(plan: Plan, state: WaveState) -> bool:
    """Every wave has the gate."""
    return True


def driver_and_dra(plan: Plan, state: WaveState) -> bool:
    """The wave installs the DRA driver and declares a DRA pool."""
    return state.driver_installed and bool(state.dra_pools)


def releases(scope: Scope) -> tuple[Access, ...]:
    """Read a validation pod's log, remove the pod, watch its claim go. `kubectl logs` reads the pod
    itself before its log (`get pods`, k8s.io/kubectl v0.36.3 pkg/cmd/logs/logs.go `Complete`, a
    builder GET of the named pod): without it every read of a probe's log is Forbidden (found by the
    rehearsal, where RBAC decides)."""
    return (
        Access(scope, "", "pods", ("get", "delete")),
        Access(scope, "", "pods/log", ("get",)),
        Access(scope, "resource.k8s.io", "resourceclaims", ("get",)),
    )
