"""Kueue objects per wave: the quota moves with its pool, flavors follow the pool's nodes and taint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.report import plan_report, plan_text
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.render.kueue import kueue_configuration_handoff, render_kueue
from gpuplatform.validate.schemas import own_validator
from tests.conftest import REPO
from tests.specs import write_spec


def _plan(tmp_path: Path, edit: dict[str, Any] | None = None) -> Plan:
    doc: dict[str, Any] = yaml.safe_load((REPO / "stacks" / "kueue-fleet.yaml").read_text())
    if edit:
        doc["spec"]["kueue"].update(edit)
    tmp_path.mkdir(parents=True, exist_ok=True)
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    return plan_platform(loaded.platform)


def _groups(plan: Plan, wave: int) -> dict[str, dict[str, int]]:
    """resource -> flavor -> quota of the ClusterQueue `training` in the wave."""
    (queue,) = [o for o in render_kueue(plan, plan.waves[wave]) if o["kind"] == "ClusterQueue"]
    return {
        g["coveredResources"][0]: {f["name"]: f["resources"][0]["nominalQuota"] for f in g["flavors"]}
        for g in queue["spec"]["resourceGroups"]
    }


def test_quota_moves_with_the_pool_and_back(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    legacy, dra = "nvidia.com/gpu", "fleet.example.com/gpu"
    h100, a100 = "h100.fleet.example.com", "a100.fleet.example.com"
    assert _groups(plan, 0) == {legacy: {a100: 8, h100: 16}}
    assert _groups(plan, 1) == {legacy: {a100: 8}, dra: {h100: 16}}
    assert _groups(plan, 4) == {dra: {a100: 8, h100: 16}}


def test_dra_flavor_tolerates_the_pool_taint_legacy_does_not(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    flavors = {
        o["metadata"]["name"]: o["spec"]
        for o in render_kueue(plan, plan.waves[1])
        if o["kind"] == "ResourceFlavor"
    }
    assert flavors["h100.fleet.example.com"]["nodeLabels"] == {"gpu-scheduling.fleet.example.com/mode": "dra"}
    assert flavors["h100.fleet.example.com"]["tolerations"] == [
        {
            "operator": "Equal",
            "key": "gpu-scheduling.fleet.example.com/mode",
            "value": "dra",
            "effect": "NoSchedule",
        }
    ]
    assert "tolerations" not in flavors["a100.fleet.example.com"]


def test_local_queue_in_every_wave_and_objects_valid(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    for state in plan.waves:
        objects = render_kueue(plan, state)
        assert [o["metadata"].get("namespace") for o in objects if o["kind"] == "LocalQueue"] == ["training"]
        for obj in objects:
            errors = list(own_validator(obj["apiVersion"], obj["kind"]).iter_errors(obj))
            assert errors == []


def test_configuration_handoff_names_the_gate_of_the_release(tmp_path: Path) -> None:
    new = _plan(tmp_path / "new")
    handoff = kueue_configuration_handoff(new, new.waves[3])
    assert handoff is not None
    assert handoff["spec"]["featureGates"] == {"KueueDRAIntegration": True}
    assert handoff["spec"]["resources"]["deviceClassMappings"] == [
        {"name": "fleet.example.com/gpu", "deviceClassNames": ["any-gpu.fleet.example.com"]}
    ]
    assert kueue_configuration_handoff(new, new.waves[0]) is None
    old = _plan(tmp_path / "old", {"version": "0.16.0"})
    old_handoff = kueue_configuration_handoff(old, old.waves[3])
    assert old_handoff is not None
    assert old_handoff["spec"]["featureGates"] == {"DynamicResourceAllocation": True}


def test_plan_shows_each_queue_total_constant_while_its_quota_moves(tmp_path: Path) -> None:
    report = plan_report(_plan(tmp_path))
    totals = {w["wave"]: {q: sum(r.values()) for q, r in w["kueueQuotas"].items()} for w in report["waves"]}
    assert set(map(str, totals.values())) == {"{'training': 24}"}
    assert "  kueue training: 24 fleet.example.com/gpu (total 24)" in plan_text(report)
