"""Every rollback hand-off undoes its forward one: a node that takes wave b's `NodePoolHandoff` after
wave a's, then a's again, has the labels and taints it had in a, the owner's own included."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.load.stacks import load_stack
from gpuplatform.model import Platform
from gpuplatform.plan.waves import Plan, WaveState, plan_platform
from gpuplatform.render.handoff import render_pool_handoffs
from tests.sdk import lab_platform
from tests.specs import minimal_spec

REPO = Path(__file__).resolve().parents[2]
OWNER_LABELS = {"team.example.com/owner": "gpu", "nvidia.com/gpu.present": "true"}
OWNER_TAINT = {"key": "team.example.com/gpu", "effect": "NoSchedule"}


def _provisioner_spec() -> Platform:
    """The minimal spec with a GKE node group moving in the pilot and a Karpenter pool at cutover."""
    doc = minimal_spec()["spec"]
    doc["nodePools"] = [
        {**doc["nodePools"][0]},
        {
            "name": "new",
            "product": "H100-80GB",
            "migratesIn": "pilot",
            "provisioner": {"kind": "node-group", "cloud": "gke", "name": "h100"},
        },
        {"name": "auto", "product": "L4", "provisioner": {"kind": "karpenter", "name": "gpu-l4"}},
    ]
    return Platform.model_validate({**doc, "name": "lab"})


def _plans() -> list[tuple[str, Plan]]:
    plans = [
        (f"{path.stem}/{loaded.platform.name}", plan_platform(loaded.platform))
        for path in sorted((REPO / "stacks").glob("*.*"))
        if path.suffix in (".py", ".yaml")
        for loaded in load_stack(path)
    ]
    minimal = lab_platform()
    return [*plans, ("minimal", plan_platform(minimal)), ("provisioners", plan_platform(_provisioner_spec()))]


def _apply(node: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """What the owner does with one hand-off: set and remove labels, add and remove taints by key and effect."""
    labels = {k: v for k, v in node["labels"].items() if k not in spec["removeLabels"]}
    labels.update(spec["labels"])
    gone = {(t["key"], t["effect"]) for t in spec["removeTaints"] + spec["taints"]}
    taints = [t for t in node["taints"] if (t["key"], t["effect"]) not in gone] + spec["taints"]
    return {"labels": labels, "taints": sorted(taints, key=lambda t: (t["key"], t["effect"]))}


def _specs(plan: Plan, state: WaveState) -> dict[str, dict[str, Any]]:
    return {
        d["metadata"]["name"]: d["spec"]
        for d in render_pool_handoffs(plan, state)
        if d["kind"] == "NodePoolHandoff"
    }


PLANS = _plans()


@pytest.mark.parametrize(("name", "plan"), PLANS, ids=[name for name, _ in PLANS])
def test_every_rollback_hand_off_undoes_the_forward_one(name: str, plan: Plan) -> None:
    moved = 0
    for a, b in itertools.permutations(plan.waves, 2):
        there, back = _specs(plan, b), _specs(plan, a)
        for pool in plan.platform.node_pools:
            # GIVEN a node of the pool as the owner has it in wave a (their own labels and taint kept)
            start = _apply({"labels": dict(OWNER_LABELS), "taints": [OWNER_TAINT]}, back[pool.name])
            # WHEN the owner applies wave b's hand-off, then rolls back with wave a's
            forward = _apply(start, there[pool.name])
            # THEN b's hand-off gave the node what b declares, from wherever it came
            fresh = _apply({"labels": dict(OWNER_LABELS), "taints": [OWNER_TAINT]}, there[pool.name])
            assert forward == fresh, (name, pool.name, a.name, b.name)
            # AND the rollback gave back exactly what the node had
            assert _apply(forward, back[pool.name]) == start, (name, pool.name, b.name, a.name)
            moved += a.pool_modes[pool.name] != b.pool_modes[pool.name]
    assert moved, f"{name}: no pool changes allocator, the pairs prove nothing"


def test_a_pool_back_to_legacy_loses_the_dra_labels() -> None:
    plan = plan_platform(_provisioner_spec())
    spec = _specs(plan, plan.wave("base"))["new"]
    assert spec["mode"] == "legacy"
    assert "nvidia.com/dra-kubelet-plugin" in spec["removeLabels"]
    assert "nvidia.com/gpu.deploy.device-plugin" in spec["removeLabels"]
    assert not set(spec["removeLabels"]) & set(spec["labels"])
