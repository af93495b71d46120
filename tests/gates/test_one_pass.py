"""Offline, every gate runs in one jq pass over a snapshot whose devices are summed up by kind."""

from __future__ import annotations

from pathlib import Path

from gpuplatform.evidence.evaluate import evaluate_wave
from gpuplatform.evidence.summary import summarise
from gpuplatform.evidence.verdict import jq_input, run_programs
from gpuplatform.gates import EVIDENCE_CHECKS, evidence_checks, gate_data, gates_for_wave
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.gate_facts import wave_data
from gpuplatform.render.validation import validation_jobs
from gpuplatform.snapshot.read import load_snapshot
from gpuplatform.testing import device_plugin_pod, wave_cluster
from tests.gates.harness import fleet_doc, load_platform


def test_one_pass_gives_each_gate_its_own_verdict_on_the_full_snapshot(tmp_path: Path) -> None:
    platform = load_platform(tmp_path, fleet_doc())
    plan = plan_platform(platform)
    state = plan.wave("app")
    cluster = wave_cluster(platform, "app")
    dra_node = next(s["spec"]["nodeName"] for s in cluster.list("resourceslices"))
    cluster.list("pods").append(device_plugin_pod(dra_node))
    for device in cluster.list("resourceslices")[0]["spec"]["devices"]:
        device["capacity"]["memory"]["value"] = "1Gi"
    snapshot = load_snapshot(cluster.write(tmp_path / "snap"))
    facts = wave_data(plan, state, validation_jobs(plan, state).data)
    gates = [*gates_for_wave(plan, state), *evidence_checks(plan, state)]
    slices = summarise(snapshot.items("resourceslices") or [], "resourceslices.json")
    alone = {
        g.id: run_programs(
            [(g.id, g.kinds, gate_data(g, facts))],
            jq_input(
                {kind: slices if kind == "resourceslices" else snapshot.items(kind) for kind in g.kinds}
                | {"logs": snapshot.runtime_logs()}
            ),
        )[0]
        for g in gates
    }
    results = {r.id: r for r in evaluate_wave(plan, state, snapshot)}
    assert any("TWO ALLOCATORS" in f for f in results["allocator-exclusivity"].findings)
    assert any("publishes memory 1Gi" in f for f in results["inventory"].findings)
    for gate in gates:
        lines = alone[gate.id]
        result = results[gate.id]
        assert [line.removeprefix("violation: ") for line in lines if line.startswith("violation: ")] == [
            f for f in result.findings if gate.id != "inventory" or not f.startswith(("tier ", "bridge "))
        ]
        assert [line.removeprefix("proof: ") for line in lines if line.startswith("proof: ")] == [
            p for p in result.proof if not p.startswith(("tier ", "bridge ", "recorded by "))
        ]


def test_inventory_names_only_the_device_that_differs_from_its_alike_neighbours(tmp_path: Path) -> None:
    # GIVEN a node whose devices are alike but for the last one's memory
    platform = load_platform(tmp_path, fleet_doc())
    plan = plan_platform(platform)
    cluster = wave_cluster(platform, "app")
    spec = cluster.list("resourceslices")[0]["spec"]
    odd = spec["devices"][-1]
    odd["capacity"]["memory"]["value"] = "1Gi"
    # WHEN the wave is judged offline
    results = {
        r.id: r for r in evaluate_wave(plan, plan.wave("app"), load_snapshot(cluster.write(tmp_path / "s")))
    }
    # THEN that device alone is a finding, and its node earns no proof
    findings = [f for f in results["inventory"].findings if not f.startswith(("tier ", "bridge "))]
    assert len(findings) == 1
    assert findings[0].startswith(f"{spec['nodeName']}/{odd['name']} publishes memory 1Gi;")
    assert not any(p.startswith(f"node {spec['nodeName']}:") for p in results["inventory"].proof)
    assert results["inventory"].proof


def test_one_pass_shares_the_pools_nodes_and_still_says_when_nodes_could_not_be_read(
    tmp_path: Path,
) -> None:
    # GIVEN a snapshot without nodes (the pools' nodes, computed once for all gates, cannot be)
    platform = load_platform(tmp_path, fleet_doc())
    plan = plan_platform(platform)
    state = plan.wave("app")
    folder = wave_cluster(platform, "app").write(tmp_path / "snap")
    (folder / "nodes.json").unlink()
    snapshot = load_snapshot(folder)
    facts = wave_data(plan, state, validation_jobs(plan, state).data)
    runs = [(g.id, g.kinds, gate_data(g, facts)) for g in [*gates_for_wave(plan, state), *EVIDENCE_CHECKS]]
    document = {kind: snapshot.items(kind) for _, kinds, _ in runs for kind in kinds}
    # WHEN the gates run in one pass and each alone
    text = jq_input(document | {"logs": snapshot.runtime_logs()})
    together = run_programs(runs, text)
    alone = [run_programs([run], text)[0] for run in runs]
    # THEN each gate says the same, and those that read nodes say they could not be read
    assert together == alone
    assert (
        sum(any("nodes" in line and "could not be read" in line for line in lines) for lines in together) >= 3
    )
