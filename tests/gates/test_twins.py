"""Each Python twin says exactly the lines of its gate's jq program, on every kind of snapshot."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplatform.evidence.evaluate import _document, evaluate_wave
from gpuplatform.evidence.snapshot import Snapshot, load_snapshot
from gpuplatform.evidence.twins import TWINS, Unlike, found
from gpuplatform.evidence.verdict import jq_input, run_programs
from gpuplatform.gates import EVIDENCE_CHECKS, GATES, gate_data, gates_for_wave
from gpuplatform.load.stacks import load_stack
from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.gate_facts import wave_data
from gpuplatform.render.validation import validation_jobs
from tests.conftest import REPO
from tests.evidence.builders import Cluster, build
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
    cluster = build(platform, case.wave)
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


def _pick(items: list[Any], i: int) -> Any:
    return items[i % len(items)] if items else None


def _mutate(cluster: Cluster, op: str, i: int, value: str) -> None:
    """One change a cluster may show: pods gone, unready or finished, labels and resources moved,
    slices dropped or republished, devices of another kind."""
    pods, nodes, slices = cluster.list("pods"), cluster.list("nodes"), cluster.list("resourceslices")
    pod, node, slice_ = _pick(pods, i), _pick(nodes, i), _pick(slices, i)
    if op == "drop-pod" and pod is not None:
        pods.remove(pod)
    elif op == "unready" and pod is not None:
        pod["status"]["containerStatuses"] = [
            {"name": "main", "ready": False},
            {"name": value, "ready": True},
        ]
    elif op == "no-statuses" and pod is not None:
        pod["status"].pop("containerStatuses", None)
    elif op == "phase" and pod is not None:
        pod["status"]["phase"] = value
    elif op == "move-pod" and pod is not None and node is not None:
        pod["spec"]["nodeName"] = _pick(nodes, i + 1)["metadata"]["name"]
    elif op == "mode-label" and node is not None:
        labels = node["metadata"]["labels"]
        for key in [k for k in labels if k.endswith("/mode")]:
            labels[key] = value
    elif op == "drop-label" and node is not None:
        labels = node["metadata"]["labels"]
        labels.pop(_pick(sorted(labels), i), None)
    elif op == "deploy-label" and node is not None:
        node["metadata"]["labels"][f"nvidia.com/gpu.deploy.{value}"] = _pick(["true", "false"], i)
    elif op == "allocatable" and node is not None:
        node["status"]["allocatable"][_pick(["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "cpu"], i)] = value
    elif op == "drop-node" and node is not None:
        nodes.remove(node)
    elif op == "drop-slice" and slice_ is not None:
        slices.remove(slice_)
    elif op == "republish" and slice_ is not None:
        newer = copy.deepcopy(slice_)
        newer["spec"]["pool"]["generation"] = slice_["spec"]["pool"].get("generation", 0) + 1
        newer["spec"]["devices"] = newer["spec"]["devices"][: i % 3]
        slices.append(newer)
    elif op == "device" and slice_ is not None and slice_["spec"].get("devices"):
        device = _pick(slice_["spec"]["devices"], i)
        field = _pick(["memory", "productName", "profile", "type", "name"], i)
        if field == "memory":
            device.setdefault("capacity", {})["memory"] = {
                "value": _pick(["1Gi", "81559Mi", "80G", "5e3", "40Gi"], i)
            }
        elif field == "name":
            device["name"] = value
        else:
            device["attributes"][field] = {"string": value}
    elif op == "drop-memory" and slice_ is not None and slice_["spec"].get("devices"):
        _pick(slice_["spec"]["devices"], i).get("capacity", {}).pop("memory", None)
    elif op == "driver" and slice_ is not None:
        slice_["spec"]["driver"] = value
    else:
        _mutate_claims(cluster, op, i, value)


def _mutate_claims(cluster: Cluster, op: str, i: int, value: str) -> None:
    """Claims moved, released or reserved for pods gone; claim holders terminating; logs that saw
    another GPU or none."""
    pods, claims, nodes = cluster.list("pods"), cluster.list("resourceclaims"), cluster.list("nodes")
    claim_, pod = _pick(claims, i), _pick(pods, i)
    holders = [p for p in pods if p["spec"].get("resourceClaims") or p["status"].get("resourceClaimStatuses")]
    if op == "claim-node" and claim_ is not None and nodes:
        for result in claim_.get("status", {}).get("allocation", {}).get("devices", {}).get("results", []):
            result["pool"] = _pick(nodes, i + 1)["metadata"]["name"]
    elif op == "release" and claim_ is not None:
        claim_.get("status", {}).pop("allocation", None)
    elif op == "drop-claim" and claim_ is not None:
        claims.remove(claim_)
    elif op == "reserve" and claim_ is not None and pod is not None:
        uid = pod["metadata"].get("uid") if value != "x" else "uid-gone"
        claim_.setdefault("status", {}).setdefault("reservedFor", []).append(
            {"resource": "pods", "name": pod["metadata"]["name"], "uid": uid}
        )
    elif op == "terminating" and holders:
        _pick(holders, i)["metadata"]["deletionTimestamp"] = "2026-12-03T00:00:00Z"
    elif op == "claim-status" and holders:
        holder = _pick(holders, i)
        for status in holder["status"].get("resourceClaimStatuses", []):
            status["resourceClaimName"] = value or None
    elif op == "bridge-claim" and pod is not None:
        pod["status"]["extendedResourceClaimStatus"] = {"resourceClaimName": value or "gone"}
    elif op == "second-attempt" and pod is not None:
        job_pods = [
            p
            for p in pods
            if "job-name" in p["metadata"]["labels"]
            or "batch.kubernetes.io/job-name" in p["metadata"]["labels"]
        ]
        if job_pods:
            attempt = copy.deepcopy(_pick(job_pods, i))
            attempt["metadata"]["name"] += "-retry"
            attempt["metadata"]["uid"] = attempt["metadata"].get("uid", "") + "-retry"
            attempt["status"]["phase"] = value
            original = _pick(job_pods, i)
            original["status"]["phase"] = "Pending"
            pods.insert(pods.index(original), attempt)
    elif op == "claim-nodes" and claim_ is not None and nodes:
        allocation = claim_.setdefault("status", {}).setdefault("allocation", {})
        names = [_pick(nodes, i + k)["metadata"]["name"] for k in (3, 1)]
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": names}]}
        allocation["nodeSelector"] = {"nodeSelectorTerms": [term]}
    elif op == "drop-uuid":
        for slice_ in cluster.list("resourceslices")[i % 2 :: 2]:
            for device in slice_["spec"].get("devices") or []:
                device.get("attributes", {}).pop("uuid", None)
    elif op == "log" and cluster.logs:
        key = _pick(sorted(cluster.logs), i)
        if value == "x":
            del cluster.logs[key]
        else:
            cluster.logs[key] = _pick(
                [
                    "",
                    "GPU 0: x (UUID: GPU-other)\n",
                    "GPU 0: a (UUID: GPU-a)\nGPU 1: b (UUID: GPU-b)\n",
                    "no gpu\n",
                ],
                i,
            ) + cluster.logs[key] * (i % 2)


_OPS = st.sampled_from(
    [
        "drop-pod",
        "unready",
        "no-statuses",
        "phase",
        "move-pod",
        "mode-label",
        "drop-label",
        "deploy-label",
        "allocatable",
        "drop-node",
        "drop-slice",
        "republish",
        "device",
        "drop-memory",
        "driver",
        "claim-node",
        "release",
        "drop-claim",
        "reserve",
        "terminating",
        "claim-status",
        "bridge-claim",
        "log",
        "second-attempt",
        "claim-nodes",
        "drop-uuid",
    ]
)
_VALUES = st.sampled_from(
    [
        "dra",
        "legacy",
        "",
        "Failed",
        "Succeeded",
        "Pending",
        "driver",
        "mig-manager",
        "4",
        "0",
        "gpu",
        "mig",
        "x",
    ]
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    wave=st.sampled_from(["base", "claims", "bridge", "app", "cutover"]),
    changes=st.lists(st.tuples(_OPS, st.integers(0, 200), _VALUES), max_size=6),
)
def test_twins_say_what_the_programs_say_on_generated_clusters(
    tmp_path_factory: pytest.TempPathFactory, wave: str, changes: list[tuple[str, int, str]]
) -> None:
    # GIVEN a healthy cluster of every pool kind in a wave, changed a few ways at random
    platform = _fleet(tmp_path_factory)
    cluster = build(platform, wave)
    for op, i, value in changes:
        _mutate(cluster, op, i, value)
    snapshot = load_snapshot(cluster.write(tmp_path_factory.mktemp("snap")))
    # WHEN every gate of the wave is judged by its twin and by its program / THEN alike
    _assert_alike(_lines(platform, wave, snapshot))


def test_a_device_without_uuid_is_looked_up_further_as_jq_does(tmp_path: Path) -> None:
    # GIVEN the pilot's device published twice in its pool: first without a uuid, then with one
    platform = load_platform(tmp_path, fleet_doc())
    cluster = build(platform, "claims")
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
    cluster = build(platform, "app")
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
    cluster = build(platform, "app")
    dra = next(n for n in cluster.list("nodes") if n["metadata"]["name"].startswith("h100-"))
    dra["status"]["allocatable"]["nvidia.com/gpu"] = None
    # WHEN judged by the twin and by the program / THEN alike, null written as jq writes it
    lines = _lines(platform, "app", Snapshot(tmp_path, dict(cluster.kinds)))
    _assert_alike(lines)
    assert any("advertises nvidia.com/gpu=null" in line for line in lines["allocator-exclusivity"][0])
