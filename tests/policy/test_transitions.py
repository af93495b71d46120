"""plan/transitions.py: what a transition changes, its apply order and the refusals that protect rollback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.errors import InputError
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.transitions import platform_transitions, transition
from gpuplatform.plan.waves import Plan, plan_platform
from tests.policy.helpers import codes, findings
from tests.specs import minimal_spec, write_spec


def _plan(tmp_path: Path, doc: dict[str, Any]) -> Plan:
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    return plan_platform(loaded.platform)


def _with_drain() -> dict[str, Any]:
    """claims (tenant on) -> drain -> more (a second pool moves) : the split a drain wave makes."""
    doc = minimal_spec()
    doc["spec"]["nodePools"].append(
        {"name": "more", "nodes": ["gpu-03"], "product": "H100-80GB", "migratesIn": "more"}
    )
    doc["spec"]["waves"][3:3] = [{"name": "drain", "stage": "drain"}, {"name": "more", "stage": "scale"}]
    return doc


def test_forward_transition_lists_changes_and_steps_in_order(tmp_path: Path) -> None:
    t = transition(_plan(tmp_path, minimal_spec()), "base", "pilot")
    assert t.direction == "forward"
    assert "pool new: legacy -> dra" in t.changes and "DRA driver installed" in t.changes
    assert [s.action for s in t.steps] == [
        "taint",
        "cordon",
        "drain-gpu-pods",
        "merge",
        "gates-pre",
        "00-operators",
        "10-nodes",
        "enable",
        "gates-post",
        "uncordon",
    ]
    assert [s.layer for s in t.steps if s.kind == "sync"] == [
        "50-gates/pre",
        "00-operators",
        "10-nodes",
        "15-allocator-switch/enable",
        "50-gates/post",
    ]
    assert [g.split(" ")[0] for g in t.gates] == [
        "rollback-safety",
        "allocator-exclusivity",
        "inventory",
        "operands",
    ]
    assert t.gates[0].startswith("rollback-safety (before 00-operators, 10-nodes): ")
    assert not t.refusals


def test_same_wave_is_no_transition(tmp_path: Path) -> None:
    t = transition(_plan(tmp_path, minimal_spec()), "pilot", "pilot")
    assert (t.direction, t.changes, t.steps, t.refusals) == ("none", (), (), ())


def test_adjacent_waves_that_move_a_pool_and_claims_are_refused(tmp_path: Path) -> None:
    # GIVEN the new pool moving in the wave that adds the tenant
    doc = minimal_spec()
    doc["spec"]["nodePools"][1]["migratesIn"] = "claims"
    # WHEN / THEN both directions are refused, naming a drain wave
    plan = _plan(tmp_path, doc)
    for a, b in (("pilot", "claims"), ("claims", "pilot")):
        (refusal,) = transition(plan, a, b).refusals
        assert "pilot -> claims moves pool(s) new" in refusal and "split them into two waves" in refusal


def test_skipping_a_drain_wave_is_refused_and_stepping_through_it_is_not(tmp_path: Path) -> None:
    plan = _plan(tmp_path, _with_drain())
    assert any("skips drain wave(s) drain" in r for r in transition(plan, "more", "claims").refusals)
    assert transition(plan, "more", "drain").refusals == ()
    assert transition(plan, "drain", "claims").refusals == ()


def test_platform_transitions_refuses_unknown_waves_for_every_platform(tmp_path: Path) -> None:
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", minimal_spec()))
    with pytest.raises(InputError) as caught:
        platform_transitions([loaded], "nope", "also-nope")
    assert [p.file for p in caught.value.problems] == ["--from", "--to"]


def test_the_exporter_runs_in_dra_mode_unless_the_team_turns_it_off(tmp_path: Path) -> None:
    from gpuplatform.render.dcgm_exporter import EXPORTER_ROLE, render_exporter_rbac
    from gpuplatform.render.helm_values import gpu_operator_values
    from tests.admission.lab import lab_plan, lab_spec

    # GIVEN the lab (DRA pools from `pilot`): the operator's values carry the DRA mode, no finding
    plan = lab_plan()
    env = gpu_operator_values(plan, plan.wave("claims"))["dcgmExporter"]["env"]
    assert {"name": "KUBERNETES_ENABLE_DRA", "value": "true"} in env
    assert "GP256" not in codes(tmp_path, lab_spec())
    # and the read it needs, least privilege: resourceslices get/list/watch for its ServiceAccount
    role, binding = render_exporter_rbac(plan, plan.wave("base"))
    assert role["metadata"]["name"] == EXPORTER_ROLE
    assert role["rules"] == [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["get", "list", "watch"]}
    ]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "nvidia-dcgm-exporter", "namespace": "gpu-operator"}
    ]
    # WHEN the team's values set it to false: kept, and GP256 says what it costs
    doc = lab_spec()
    doc["spec"].setdefault("gpuOperator", {})["values"] = {
        "dcgmExporter": {"env": [{"name": "KUBERNETES_ENABLE_DRA", "value": "false"}]}
    }
    [found] = [p for p in findings(tmp_path, doc) if p.code == "GP256"]
    assert found.loc == "spec.gpuOperator.values.dcgmExporter.env"
    # WHEN the operator runs no exporter: no RBAC, no finding
    doc["spec"]["gpuOperator"]["values"] = {"dcgmExporter": {"enabled": False}}
    assert "GP256" not in codes(tmp_path, doc)
    (loaded,) = load_stack(write_spec(tmp_path / "off.yaml", doc))
    off = plan_platform(loaded.platform)
    assert render_exporter_rbac(off, off.wave("base")) == []


def test_check_snapshot_finds_an_exporter_pod_on_a_dra_node_without_dra_mode(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from gpuplatform.cli import main
    from gpuplatform.testing import Cluster
    from tests.conftest import REPO
    from tests.specs import healthy_cluster

    def gp257(cluster: Cluster, folder: str) -> list[str]:
        snap = cluster.write(tmp_path / folder)
        args = ["check", str(REPO / "stacks" / "reference.py"), "--platform", "reference"]
        result = CliRunner().invoke(main, [*args, "--snapshot", str(snap), "--format", "json"])
        (report,) = json.loads(result.stdout)
        return [p["message"] for p in report["problems"] if p["code"] == "GP257"]

    # GIVEN a healthy cluster: its exporter pods carry the env the operator copies from its values
    cluster = healthy_cluster()
    assert not gp257(cluster, "healthy")
    # WHEN the exporter on a DRA node runs without it (values applied, DaemonSet not rolled)
    dra_nodes = {
        p["spec"]["nodeName"]
        for p in cluster.kinds["pods"] or []
        if "kubelet-plugin" in p["metadata"]["name"]
    }
    [stale] = [
        p
        for p in cluster.kinds["pods"] or []
        if p["metadata"]["labels"].get("app") == "nvidia-dcgm-exporter" and p["spec"]["nodeName"] in dra_nodes
    ][:1]
    stale["spec"]["containers"][0]["env"] = []
    # THEN check names the pod and its node
    [message] = gp257(cluster, "stale")
    assert stale["metadata"]["name"] in message and "without KUBERNETES_ENABLE_DRA=true" in message
    # AND it is found on a node of the active wave's DRA pools even while its kubelet plugin is down
    node = stale["spec"]["nodeName"]
    cluster.kinds["pods"] = [
        p
        for p in cluster.kinds["pods"] or []
        if not ("kubelet-plugin" in p["metadata"]["name"] and p["spec"]["nodeName"] == node)
    ]
    [message] = gp257(cluster, "no-plugin")
    assert stale["metadata"]["name"] in message
    # AND the operands gate of `evidence` (its jq program and its Python twin alike) breaks on it
    args = ["evidence", str(REPO / "stacks" / "reference.py"), "--platform", "reference"]
    snap = str(cluster.write(tmp_path / "evidence"))
    result = CliRunner().invoke(
        main, [*args, "--wave", "native-claim-pilot", "--snapshot", snap, "--format", "json"]
    )
    assert result.exit_code == 1, result.output
    [gate] = [g for g in json.loads(result.stdout)["gates"] if g["id"] == "operands"]
    assert any(stale["metadata"]["name"] in v and "KUBERNETES_ENABLE_DRA=true" in v for v in gate["findings"])
    from gpuplatform.snapshot.read import load_snapshot
    from tests.gates.test_twins import _lines

    loaded = next(p for p in load_stack(REPO / "stacks" / "reference.py") if p.platform.name == "reference")
    twin, by_jq = _lines(loaded.platform, "native-claim-pilot", load_snapshot(Path(snap)))["operands"]
    assert twin == by_jq and any("KUBERNETES_ENABLE_DRA=true" in line for line in twin)
