"""Each Python twin says exactly the lines of its gate's jq program, on every kind of snapshot."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplatform.evidence.evaluate import _document, evaluate_wave
from gpuplatform.evidence.twins import TWINS, Unlike, found
from gpuplatform.evidence.verdict import jq_input, run_programs
from gpuplatform.gates import EVIDENCE_CHECKS, GATES, gate_data, gates_for_wave
from gpuplatform.load.stacks import load_stack
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.gate_facts import wave_data
from gpuplatform.render.validation import validation_jobs
from gpuplatform.snapshot.read import Snapshot, load_snapshot
from gpuplatform.testing import FAULTS, VALUES, inject_fault, wave_cluster
from tests.conftest import REPO
from tests.gates.harness import fleet_doc, load_platform
from tests.gates.test_projection import (
    _device_plugin_on_a_dra_node,
    _odd_shapes,
    _terminating_claim_holder,
    _unready_operand,
)
from tests.gates.test_scenarios import CASES

_TWINNED = sorted(TWINS)


def _lines(platform: Platform, wave: str, snapshot: Snapshot) -> dict[str, tuple[list[str], list[str]]]:
    """Per twinned gate of the wave: (the twin's lines, the jq program's lines)."""
    plan = plan_platform(platform)
    state = plan.wave(wave)
    facts = wave_data(plan, state, validation_jobs(plan, state).data)
    gates = [g for g in [*gates_for_wave(plan, state), *EVIDENCE_CHECKS] if g.id in TWINS]
    document = _document({kind for g in gates for kind in g.kinds}, snapshot)
    text = jq_input(document)
    out = {}
    for gate in gates:
        data = gate_data(gate, facts)
        pools = found(document, data) if "pools" in data and document.get("nodes") is not None else []
        (by_jq,) = run_programs([(gate.id, gate.kinds, data)], text)
        out[gate.id] = (TWINS[gate.id](document, data, pools), by_jq)
    return out


def _assert_alike(lines: dict[str, tuple[list[str], list[str]]]) -> None:
    for gate_id, (twin, by_jq) in lines.items():
        assert twin == by_jq, gate_id


@pytest.mark.parametrize("name", sorted(CASES))
def test_twins_say_what_the_programs_say_in_every_gate_scenario(tmp_path: Path, name: str) -> None:
    # GIVEN a scenario's cluster (every pool kind, healthy or broken one way)
    case = CASES[name]
    platform = load_platform(tmp_path, case.doc())
    cluster = wave_cluster(platform, case.wave)
    case.mutate(cluster)
    # WHEN each twinned gate is judged by its twin and by its jq program / THEN line for line alike
    _assert_alike(_lines(platform, case.wave, load_snapshot(cluster.write(tmp_path / "snap"))))


@pytest.mark.parametrize(
    "breaks", [None, _unready_operand, _terminating_claim_holder, _device_plugin_on_a_dra_node, _odd_shapes]
)
@pytest.mark.parametrize("wave", ["application", "final-cutover"])
def test_twins_say_what_the_programs_say_on_the_benchmark_fleet(
    wave: str, breaks: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEET_NODES", "40")
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import fleet_snapshot

    kinds, logs = fleet_snapshot.build(wave)
    if breaks is not None:
        breaks(kinds)
    (loaded,) = load_stack(REPO / "benchmarks" / "fleet.py")
    _assert_alike(_lines(loaded.platform, wave, Snapshot(tmp_path, {**kinds}, logs=logs)))


# --- generated clusters ---------------------------------------------------------------------------

_PLATFORM: dict[str, Platform] = {}


def _fleet(tmp_path_factory: pytest.TempPathFactory) -> Platform:
    if "fleet" not in _PLATFORM:
        _PLATFORM["fleet"] = load_platform(tmp_path_factory.mktemp("fleet"), fleet_doc())
    return _PLATFORM["fleet"]


# as many examples as the hypothesis profile runs (tests/conftest.py): a few seconds, deep in CI
@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    wave=st.sampled_from(["base", "claims", "bridge", "app", "cutover"]),
    changes=st.lists(
        st.tuples(st.sampled_from(FAULTS), st.integers(0, 200), st.sampled_from(VALUES)), max_size=6
    ),
)
def test_twins_say_what_the_programs_say_on_generated_clusters(
    tmp_path_factory: pytest.TempPathFactory, wave: str, changes: list[tuple[str, int, str]]
) -> None:
    # GIVEN a healthy cluster of every pool kind in a wave, changed a few ways at random
    platform = _fleet(tmp_path_factory)
    cluster = wave_cluster(platform, wave)
    for fault, i, value in changes:
        inject_fault(cluster, fault, i, value)
    snapshot = load_snapshot(cluster.write(tmp_path_factory.mktemp("snap")))
    # WHEN every gate of the wave is judged by its twin and by its program / THEN alike
    _assert_alike(_lines(platform, wave, snapshot))


def test_a_device_without_uuid_is_looked_up_further_as_jq_does(tmp_path: Path) -> None:
    # GIVEN the pilot's device published twice in its pool: first without a uuid, then with one
    platform = load_platform(tmp_path, fleet_doc())
    cluster = wave_cluster(platform, "claims")
    slices = cluster.list("resourceslices")
    again = copy.deepcopy(slices)
    for slice_ in slices:
        for device in slice_["spec"]["devices"]:
            device["attributes"].pop("uuid")
    slices += again
    # WHEN the claim pilot is judged by its twin and its program / THEN alike, and held
    lines = _lines(platform, "claims", load_snapshot(cluster.write(tmp_path / "snap")))
    _assert_alike(lines)
    assert any(line.startswith("proof: claim ") for line in lines["claim-pilot"][0])


def test_a_twin_leaves_a_value_the_api_never_serves_to_jq(tmp_path: Path) -> None:
    # GIVEN a node whose label is a number, which a twin refuses to read
    platform = load_platform(tmp_path, fleet_doc())
    cluster = wave_cluster(platform, "app")
    cluster.list("nodes")[0]["metadata"]["labels"]["odd"] = 7
    # (a snapshot folder holding it is refused when read: built in memory, as `simulate` builds one)
    snapshot = Snapshot(tmp_path, dict(cluster.kinds))
    plan = plan_platform(platform)
    state = plan.wave("app")
    facts = wave_data(plan, state, validation_jobs(plan, state).data)
    document = _document({"nodes", "pods", "resourceslices", "deviceclasses"}, snapshot)
    data = gate_data(next(g for g in GATES if g.id == "allocator-exclusivity"), facts)
    with pytest.raises(Unlike):
        found(document, data)
    # WHEN the wave is judged / THEN the gates still judge, by jq, as their programs do
    results = {r.id: r for r in evaluate_wave(plan, state, snapshot)}
    runs = [(g.id, g.kinds, gate_data(g, facts)) for g in [*gates_for_wave(plan, state), *EVIDENCE_CHECKS]]
    by_jq = dict(
        zip(
            [g for g, *_ in runs],
            run_programs(runs, jq_input(_document({k for _, ks, _ in runs for k in ks}, snapshot))),
            strict=True,
        )
    )
    assert [f"proof: {p}" for p in results["allocator-exclusivity"].proof] == [
        line for line in by_jq["allocator-exclusivity"] if line.startswith("proof: ")
    ]
    assert results["allocator-exclusivity"].status == "held"


def test_a_twin_shows_null_as_jq_does(tmp_path: Path) -> None:
    # GIVEN a DRA node advertising a device-plugin resource with no value (issue 39: the twin said `None`)
    platform = load_platform(tmp_path, fleet_doc())
    cluster = wave_cluster(platform, "app")
    dra = next(n for n in cluster.list("nodes") if n["metadata"]["name"].startswith("h100-"))
    dra["status"]["allocatable"]["nvidia.com/gpu"] = None
    # WHEN judged by the twin and by the program / THEN alike, null written as jq writes it
    lines = _lines(platform, "app", Snapshot(tmp_path, dict(cluster.kinds)))
    _assert_alike(lines)
    assert any("advertises nvidia.com/gpu=null" in line for line in lines["allocator-exclusivity"][0])
