"""Injected faults: each breaks the matching gate both in the replay (`simulate` reports it) and in
`evidence` on the snapshot the replay writes at that checkpoint (`--write-snapshots`).

A fault replaces one behaviour of a controller model (a reaction it never takes, a state it reaches)
or, where the model has no such behaviour yet, adds the object to the written cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.evidence.evaluate import evaluate_gates
from gpuplatform.gates import EVIDENCE_CHECKS, gates_for_wave
from gpuplatform.inventory.catalog import slices_for_node
from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.simulate import apply, jobs, operator, replay, snapshot, snapshot_nodes
from gpuplatform.simulate.model import Group, Workload
from gpuplatform.simulate.run import prepare
from gpuplatform.simulate.world import START, Reaction, World
from gpuplatform.snapshot.read import load_snapshot
from tests.simulate.helpers import sim_spec
from tests.specs import write_spec

ROOT = Path(__file__).resolve().parents[2]
Inject = Callable[[pytest.MonkeyPatch], None]


@dataclass(frozen=True)
class Fault:
    """A fault, the transition it is replayed on, what `simulate` says and what `evidence` finds."""

    transition: tuple[str, str]
    inject: Inject
    caught: str
    """In the first violation's message: the gate or switch Job that stops the sync, or the invariant."""
    gate: str
    finding: str
    stack: str = "lab"
    spec: dict[str, Any] = field(default_factory=dict)


def _without(reactor: str, text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller never takes the reactions whose text starts with `text`."""
    original = getattr(replay, reactor)

    def reactions(world: World) -> list[Reaction]:
        return [r for r in original(world) if not r.text.startswith(text)]

    monkeypatch.setattr(replay, reactor, reactions)


def _skip_manual(action: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator leaves out one step of the runbook."""
    original = replay.apply_manual

    def apply_manual(world: World, step: Any, source: str, target: str) -> None:
        if step.action != action:
            original(world, step, source, target)

    monkeypatch.setattr(replay, "apply_manual", apply_manual)


def _claim_left_on_old_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """A claim workload runs on pool `old` in cutover, and the operator skips `release-claims`."""
    _skip_manual("release-claims", monkeypatch)
    original = replay.workload_mix

    def mix(plan: Any, state: Any, observed: Any = None) -> list[Workload]:
        out = original(plan, state, observed)
        if state.name == "cutover":
            user = next(w for w in out if w.kind == "claim" and w.origin == "default")
            out.append(replace(user, name="pinned-user", pools=("old",)))
        return out

    monkeypatch.setattr(replay, "workload_mix", mix)


def _unready(operand: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`operand` crash-loops on the nodes the target wave declares DRA."""
    ready, reactions = operator._ready, replay.gpu_operator_reactions

    def _ready(world: World, group: Group, name: str) -> str:
        return "crashloop" if name == operand and world.mode(group) == "dra" else ready(world, group, name)

    def crash(group: Group) -> None:
        group.operands[operand] = "crashloop"

    def with_crash(world: World) -> list[Reaction]:
        out = reactions(world)
        for g in world.cluster.groups:
            if world.mode(g) == "dra" and g.operands.get(operand) == "running":
                out.append(Reaction(START, f"{operand} crash-loops on {g.name}", partial(crash, g)))
        return out

    monkeypatch.setattr(operator, "_ready", _ready)
    monkeypatch.setattr(replay, "gpu_operator_reactions", with_crash)


def _both_allocators(monkeypatch: pytest.MonkeyPatch) -> None:
    """The enable Job does not wait for the device plugin, whose GPUs the kubelet keeps advertising."""
    monkeypatch.setattr(jobs, "_handover", lambda world, script, group: [])
    _without("kubelet_reactions", "kubelet marks nvidia.com/gpu unhealthy", monkeypatch)
    _without("gpu_operator_reactions", "device-plugin leaves", monkeypatch)


def _other_product(monkeypatch: pytest.MonkeyPatch) -> None:
    """gpu-02's driver publishes A100 devices where the pool declares H100."""
    original = snapshot_nodes._slices

    def _slices(name: str, product: str, gpus: int, release: str, layout: tuple[str, ...]) -> Any:
        if name != "gpu-02":
            return original(name, product, gpus, release, layout)
        return tuple(slices_for_node(name, "A100-80GB", gpus, driver_release=release))

    monkeypatch.setattr(snapshot_nodes, "_slices", _slices)


def _smi(text: Callable[[str], str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The probes' containers print `text(what they should have printed)`."""
    original = snapshot._smi
    monkeypatch.setattr(snapshot, "_smi", lambda world, group, devices: text(original(world, group, devices)))


def _no_class(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tier's DeviceClass is never created (an admission webhook refuses it)."""
    original = apply._put_class

    def put(world: World, name: str, spec: dict[str, Any], owner: str) -> None:
        if not name.startswith("full."):
            original(world, name, spec, owner)

    monkeypatch.setattr(apply, "_put_class", put)


def _third_allocator(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod on the DRA node sees every GPU through NVIDIA_VISIBLE_DEVICES=all and requests none."""
    original = snapshot._workloads

    def workloads(world: World, every_node: bool) -> Any:
        pods, claims, logs = original(world, every_node)
        pod = snapshot_nodes.pod_object("sees-all", "team-a", "gpu-02", {"app": "sees-all"}, ["main"])
        pod["spec"]["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
        return [*pods, pod], claims, logs

    monkeypatch.setattr(snapshot, "_workloads", workloads)


COMPUTE_DOMAINS = {
    "draDriver": {"chartRepository": "oci://registry.example.com/charts", "computeDomains": True}
}

FAULTS: dict[str, Fault] = {
    "device-plugin-left-on-a-dra-node": Fault(
        ("base", "pilot"),
        partial(_without, "gpu_operator_reactions", "device-plugin leaves"),
        "the device plugin still runs on new/gpu-02",
        "allocator-exclusivity",
        "DRA node gpu-02 runs device-plugin pod",
    ),
    "kubelet-plugin-missing": Fault(
        ("base", "pilot"),
        partial(_without, "kubelet_reactions", "DRA kubelet plugin starts"),
        "Job gate-allocator-exclusivity",
        "allocator-exclusivity",
        "DRA node gpu-02 runs no DRA kubelet plugin",
    ),
    "stale-slices": Fault(
        ("cutover", "claims"),
        partial(_without, "kubelet_reactions", "kubelet wipes the stale ResourceSlices"),
        "ResourceSlices remain on old/gpu-01",
        "allocator-exclusivity",
        "legacy node gpu-01 publishes gpu.nvidia.com devices",
    ),
    "claim-on-a-leaving-node": Fault(
        ("cutover", "claims"),
        _claim_left_on_old_pool,
        "Job gate-rollback-safety",
        "rollback-safety",
        "is allocated on node gpu-01, which this wave does not declare DRA",
    ),
    "an-operand-unready": Fault(
        ("base", "pilot"),
        partial(_unready, "dcgm-exporter"),
        "Job gate-operands",
        "operands",
        "dcgm-exporter pod",
    ),
    "the-drivers-daemonset-not-ready": Fault(
        ("base", "pilot"),
        partial(_unready, "driver"),
        "Job gate-operands",
        "operands",
        "driver pod gpu-operator/nvidia-driver-daemonset",
    ),
    "controller-missing-with-compute-domains": Fault(
        ("base", "pilot"),
        lambda monkeypatch: monkeypatch.setattr(snapshot, "_controller", lambda world: []),
        "Job gate-operands",
        "operands",
        "the DRA driver controller runs no pod",
        spec=COMPUTE_DOMAINS,
    ),
    "devices-of-another-product": Fault(
        ("base", "pilot"),
        _other_product,
        "Job gate-inventory",
        "inventory",
        "pool new declares NVIDIA H100 80GB HBM3",
    ),
    "a-node-with-both-allocators": Fault(
        ("base", "pilot"),
        _both_allocators,
        "one-allocator",
        "allocator-exclusivity",
        "node gpu-02 has TWO ALLOCATORS",
    ),
    "a-device-class-missing": Fault(
        ("pilot", "claims"),
        _no_class,
        "Job gate-inventory",
        "inventory",
        "DeviceClass full.lab.example.com is missing",
    ),
    "a-probe-that-saw-another-gpu": Fault(
        ("driver-validation", "native-claim-pilot"),
        partial(_smi, lambda text: text.replace("(UUID: GPU-", "(UUID: GPU-0ther-")),
        "Job gate-claim-pilot",
        "claim-pilot",
        "saw GPU-0ther-",
        stack="reference",
    ),
    "a-bridge-probe-that-saw-two-gpus": Fault(
        ("native-claim-pilot", "compatibility-bridge"),
        partial(_smi, lambda text: text + text.replace("GPU 0:", "GPU 1:")),
        "Job gate-bridge",
        "bridge",
        "requested one nvidia.com/gpu and saw 2 GPUs",
        stack="reference",
    ),
}


def _loaded(fault: Fault, tmp_path: Path) -> LoadedPlatform:
    if fault.stack == "reference":
        return load_stack(ROOT / "stacks" / "reference.py")[0]
    doc = sim_spec()
    doc["spec"] |= fault.spec
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    return loaded


def _first_checkpoint(out: Path, transition: str) -> Path:
    """The first checkpoint of the transition where a Job waits or an invariant broke."""
    return next(
        f
        for f in sorted(out.iterdir())
        if f"-flux-{transition}-step" in f.name and (f.name.endswith("-waits") or "-violation-" in f.name)
    )


def _evidence(loaded: LoadedPlatform, wave: str, gate_id: str, folder: Path) -> tuple[str, str]:
    """`evidence`'s verdict on the gate at the checkpoint folder, and what it found."""
    plan = plan_platform(loaded.platform)
    state = plan.wave(wave)
    (gate,) = [g for g in [*gates_for_wave(plan, state), *EVIDENCE_CHECKS] if g.id == gate_id]
    (result,) = evaluate_gates([gate], plan, state, load_snapshot(folder))
    return result.status, "\n".join(result.findings + result.unknowns)


def _replayed(fault: Fault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, str]:
    """(what simulate reports, evidence's verdict on the gate, what evidence found)."""
    monkeypatch.setattr(jobs, "holds_claim", lambda pod: True)
    fault.inject(monkeypatch)
    loaded = _loaded(fault, tmp_path)
    a, b = fault.transition
    out = tmp_path / "checkpoints"
    report = prepare(loaded, a, b, ("flux",), checkpoints=(out, 1)).replay()
    (violation,) = [r.violation for r in report.results if not r.late and r.violation is not None]
    reported = f"{violation.invariant}: {violation.message}"
    return reported, *_evidence(loaded, b, fault.gate, _first_checkpoint(out, f"{a}-to-{b}"))


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_an_injected_fault_breaks_the_matching_gate_in_simulate_and_in_evidence(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fault = FAULTS[name]
    # WHEN the transition is replayed with the fault and its checkpoints written
    reported, status, found = _replayed(fault, tmp_path, monkeypatch)
    # THEN simulate reports it, and evidence on the written snapshot breaks the matching gate
    assert fault.caught in reported
    assert status != "held"
    assert fault.finding in found


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_without_the_fault_the_same_replay_is_proven(name: str, tmp_path: Path) -> None:
    fault = FAULTS[name]
    report = prepare(_loaded(fault, tmp_path), *fault.transition, ("flux",)).replay()
    assert [r.violation for r in report.results if r.violation is not None] == []


def test_a_third_allocator_pod_breaks_allocator_exclusivity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    finding = "pod team-a/sees-all on DRA node gpu-02 reaches GPUs through NVIDIA_VISIBLE_DEVICES=all"
    fault = Fault(
        ("base", "pilot"),
        _third_allocator,
        "Job gate-allocator-exclusivity",
        "allocator-exclusivity",
        finding,
    )
    reported, status, found = _replayed(fault, tmp_path, monkeypatch)
    assert fault.caught in reported and status != "held"
    assert fault.finding in found
