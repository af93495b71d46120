"""Kueue objects per wave: the quota moves with its pool, flavors follow the pool's nodes and taint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplatform.errors import InputError
from gpuplatform.gates.nodes import pool_selector
from gpuplatform.kueue.render import kueue_configuration_handoff, render_kueue
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.report import plan_report, plan_text
from gpuplatform.plan.steps import transition_steps
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.render.handoff import handoff_labels
from gpuplatform.render.nodes import node_folders
from tests.conftest import REPO
from tests.specs import write_spec
from tests.upstream_crds import crd_errors


def _plan(
    tmp_path: Path, edit: dict[str, Any] | None = None, pools: list[dict[str, Any]] | None = None
) -> Plan:
    doc: dict[str, Any] = yaml.safe_load((REPO / "stacks" / "kueue-fleet.yaml").read_text())
    if edit:
        doc["spec"]["kueue"].update(edit)
    if pools is not None:
        doc["spec"]["nodePools"] = pools
    tmp_path.mkdir(parents=True, exist_ok=True)
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    return plan_platform(loaded.platform)


def _groups(plan: Plan, wave: int) -> dict[str, dict[str, int]]:
    """resource -> flavor -> quota of the ClusterQueue `training` in the wave."""
    (queue,) = [o for o in render_kueue(plan, plan.waves[wave]) if o["kind"] == "ClusterQueue"]
    return {
        g["coveredResources"][0]: {f["name"]: f["resources"][0]["nominalQuota"] for f in g["flavors"]}
        for g in queue["spec"]["resourceGroups"]
        if g["flavors"][0]["name"] != "any-node.fleet.example.com"  # the queue's cpu and memory
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
            assert crd_errors(obj, "newest") == crd_errors(obj, "minimum") == []


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


#: kueue-fleet on EKS: the H100 node group moves in `pilot`, the A100 one only at the cutover.
_EKS_POOLS = [
    {
        "name": "h100",
        "provisioner": {"kind": "node-group", "name": "h100-ng", "cloud": "eks", "minNodes": 2},
        "product": "H100-80GB",
        "migratesIn": "pilot",
    },
    {
        "name": "a100",
        "provisioner": {"kind": "node-group", "name": "a100-ng", "cloud": "eks", "minNodes": 1},
        "product": "A100-40GB",
    },
]


def _applied_forward(plan: Plan, upto: int, pool: str) -> dict[str, str]:
    """The labels the pool's nodes carry when wave `upto`'s 40-tenants layer syncs, reached forward from
    the first wave: a static pool's Node objects of that wave (10-nodes syncs first); a provisioner
    pool's own labels plus the hand-off of the last transition whose runbook applies it."""
    spec = plan.pools[pool]
    state = plan.waves[upto]
    if spec.provisioner is None:
        nodes = [
            o
            for objects in node_folders(plan, state).values()
            for o in objects
            if o["metadata"]["name"] in spec.nodes
        ]
        return dict(nodes[0]["metadata"]["labels"])
    labels = dict(pool_selector(spec).labels)
    for i in range(1, upto + 1):
        steps = transition_steps(plan, plan.waves[i - 1], plan.waves[i])
        if any(s.action in ("apply-handoff", "create-node-group") and pool in s.pools for s in steps):
            labels = dict(pool_selector(spec).labels) | handoff_labels(plan, plan.waves[i], spec)
    return labels


@pytest.mark.parametrize("pools", [None, _EKS_POOLS], ids=["static", "eks"])
def test_flavors_select_only_labels_the_forward_path_applies_first(tmp_path: Path, pools: Any) -> None:
    # GIVEN kueue-fleet, with static pools and with EKS node groups (whose labels only a hand-off sets)
    plan = _plan(tmp_path, pools=pools)
    for i, state in enumerate(plan.waves):
        flavors = [o for o in render_kueue(plan, state) if o["kind"] == "ResourceFlavor"]
        assert len(flavors) == 3  # the pools' and the any-node flavor of the queue's cpu and memory
        for flavor in flavors:
            if not flavor["spec"]:
                continue
            pool = flavor["metadata"]["name"].split(".")[0]
            # THEN every label a flavor adds to an admitted Job's nodeSelector is on the pool's nodes
            applied = _applied_forward(plan, i, pool)
            wanted = flavor["spec"]["nodeLabels"]
            assert wanted and wanted.items() <= applied.items(), (state.name, pool, wanted, applied)


def test_cluster_queue_keeps_the_teams_other_resources(tmp_path: Path) -> None:
    queue = {"name": "training", "cohort": "gpu", "tenants": ["training"], "quotas": {"h100": 16, "a100": 8}}
    queue["resources"] = {"cpu": "96", "memory": "768Gi"}
    plan = _plan(tmp_path, {"clusterQueues": [queue]})
    for state in plan.waves:
        objects = render_kueue(plan, state)
        (cq,) = [o for o in objects if o["kind"] == "ClusterQueue"]
        other = cq["spec"]["resourceGroups"][-1]
        assert other == {
            "coveredResources": ["cpu", "memory"],
            "flavors": [
                {
                    "name": "any-node.fleet.example.com",
                    "resources": [
                        {"name": "cpu", "nominalQuota": "96"},
                        {"name": "memory", "nominalQuota": "768Gi"},
                    ],
                }
            ],
        }
        flavors = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceFlavor"}
        assert flavors["any-node.fleet.example.com"]["spec"] == {}
        for obj in objects:
            assert crd_errors(obj, "newest") == crd_errors(obj, "minimum") == []
    # the GPU totals are the GPU quotas only (GP404 sums them per wave)
    assert _groups(plan, 1)["fleet.example.com/gpu"] == {"h100.fleet.example.com": 16}


@pytest.mark.parametrize(
    ("edit", "loc", "words"),
    [
        (
            {"resources": {"nvidia.com/gpu": "8"}},
            "spec.kueue.clusterQueues[0].resources.nvidia.com/gpu",
            "is a GPU resource",
        ),
        (
            {"resources": {"fleet.example.com/gpu": "8"}},
            "spec.kueue.clusterQueues[0].resources.fleet.example.com/gpu",
            "is a GPU resource",
        ),
    ],
)
def test_a_queues_other_resources_are_not_gpus(tmp_path: Path, edit: Any, loc: str, words: str) -> None:
    queue = {"name": "training", "tenants": ["training"], "quotas": {"h100": 16, "a100": 8}, **edit}
    with pytest.raises(InputError) as err:
        _plan(tmp_path, {"clusterQueues": [queue]})
    assert any(p.loc == loc and words in p.message for p in err.value.problems), err.value.problems


def test_the_logical_resource_is_no_extended_resource_a_bridge_serves(tmp_path: Path) -> None:
    doc: dict[str, Any] = yaml.safe_load((REPO / "stacks" / "kueue-fleet.yaml").read_text())
    doc["spec"]["bridges"] = [{"name": "bridge", "extendedResourceName": "fleet.example.com/gpu"}]
    with pytest.raises(InputError) as err:
        load_stack(write_spec(tmp_path / "lab.yaml", doc))
    assert [p.loc for p in err.value.problems if "bridge class serves" in p.message] == [
        "spec.kueue.resource"
    ]
