"""plan/transitions.py: what a transition changes, its apply order and the refusals that protect rollback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.errors import InputError
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.transitions import platform_transitions, transition
from gpuplatform.plan.waves import Plan, plan_platform
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
