"""A new DRA node group created next to a legacy one (`takesOverFrom`): the load's refusals, the
waves in which it exists, the steps that create and delete it, and what the gates and `capacity`
count on both groups."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.capacity.report import plan_capacity
from gpuplatform.errors import InputError
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.steps import transition_steps
from gpuplatform.plan.waves import Plan, plan_platform
from gpuplatform.render.gate_facts import wave_data
from gpuplatform.render.handoff import render_pool_handoffs
from gpuplatform.render.overview import render_overview
from gpuplatform.render.overview_mermaid import overview_mermaid
from gpuplatform.render.runbooks import render_runbooks
from tests.specs import minimal_spec, write_spec


def takeover_spec() -> dict[str, Any]:
    """The minimal spec with a 3-node GKE H100 group `h100`, legacy until cutover, and a new group
    `h100-dra` of one node created in `pilot`."""
    doc = minimal_spec()
    doc["spec"]["nodePools"] = [
        {
            "name": "h100",
            "product": "H100-80GB",
            "provisioner": {
                "kind": "node-group",
                "cloud": "gke",
                "name": "h100",
                "minNodes": 3,
                "maxNodes": 4,
            },
        },
        {
            "name": "h100-dra",
            "product": "H100-80GB",
            "provisioner": {"kind": "node-group", "cloud": "gke", "name": "h100-dra", "minNodes": 1},
            "takesOverFrom": "h100",
            "migratesIn": "pilot",
        },
    ]
    return doc


def _plan(tmp_path: Path, doc: dict[str, Any]) -> Plan:
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    return plan_platform(loaded.platform)


def _refused(tmp_path: Path, doc: dict[str, Any]) -> str:
    with pytest.raises(InputError) as exc:
        load_stack(write_spec(tmp_path / "lab.yaml", doc))
    return "\n".join(p.line() for p in exc.value.problems)


def _new(doc: dict[str, Any]) -> dict[str, Any]:
    pool: dict[str, Any] = doc["spec"]["nodePools"][1]
    return pool


def _old(doc: dict[str, Any]) -> dict[str, Any]:
    pool: dict[str, Any] = doc["spec"]["nodePools"][0]
    return pool


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: _new(d)["provisioner"].update(kind="karpenter", cloud=None), "Karpenter adds nodes only"),
        (lambda d: _new(d).pop("migratesIn"), "takesOverFrom needs migratesIn"),
        (lambda d: _new(d)["provisioner"].update(minNodes=0), "minNodes must be 1 or more"),
        (lambda d: _new(d).update(selector={"matchLabels": {"a": "b"}}), "it has no selector"),
        (lambda d: _new(d).update(takesOverFrom="nope"), "'nope' is not defined in spec.nodePools"),
        (lambda d: _new(d).update(takesOverFrom="h100-dra"), "is this pool itself"),
        (lambda d: _old(d)["provisioner"].update(cloud="eks"), "a node-group pool on eks"),
        (lambda d: _old(d).update(product="A100-80GB"), "has other GPUs"),
        (
            lambda d: _old(d).update(selector={"matchLabels": {"a": "b"}}),
            "resizing the group would take nodes",
        ),
        (lambda d: _old(d).update(migratesIn="pilot"), "is no longer legacy in wave 'pilot'"),
        (lambda d: _new(d).update(migratesIn="base"), "cannot exist in the first wave"),
        (
            lambda d: _new(d)["provisioner"].update(minNodes=5),
            "has at most 4 node(s) and its takeovers take 5",
        ),
        (lambda d: _new(d)["provisioner"].update(name="h100.dra"), "is not a valid gke node group name"),
        (
            lambda d: [p["provisioner"].update(cloud="aks") for p in d["spec"]["nodePools"]],
            "'h100-dra' is not a valid aks node group name",
        ),
        (
            lambda d: _old(d)["provisioner"].update(name="h100.old"),
            "the runbook resizes its group: 'h100.old' is not a valid gke",
        ),
    ],
)
def test_the_load_refuses_a_takeover_it_cannot_carry_out(tmp_path: Path, change: Any, message: str) -> None:
    doc = takeover_spec()
    change(doc)
    found = _refused(tmp_path, doc)
    assert message in found, found
    assert "nodePools" in found


def test_the_new_group_exists_from_its_wave_and_the_old_one_gives_up_its_nodes(tmp_path: Path) -> None:
    plan = _plan(tmp_path, takeover_spec())
    base, pilot, cutover = plan.wave("base"), plan.wave("pilot"), plan.wave("cutover")
    assert base.absent == ("h100-dra",) and not pilot.absent
    assert base.dra_pools == () and pilot.dra_pools == ("h100-dra",)
    assert base.legacy_pools == ("h100",) and pilot.legacy_pools == ("h100",)
    assert cutover.dra_pools == ("h100", "h100-dra")
    old = plan.pool_in(pilot, "h100").provisioner
    assert old is not None and (old.min_nodes, old.max_nodes) == (2, 3)
    assert plan.pool_in(base, "h100") is plan.pools["h100"]


def test_no_handoff_and_no_gate_looks_for_a_group_that_does_not_exist(tmp_path: Path) -> None:
    plan = _plan(tmp_path, takeover_spec())
    base, pilot = plan.wave("base"), plan.wave("pilot")
    assert [o["metadata"]["name"] for o in render_pool_handoffs(plan, base)] == ["h100"]
    handoff = {o["metadata"]["name"]: o["spec"] for o in render_pool_handoffs(plan, pilot)}
    assert handoff["h100-dra"]["mode"] == "dra" and handoff["h100-dra"]["taints"]
    pools = {p["name"]: p for p in wave_data(plan, base, {})["pools"]}
    assert set(pools) == {"h100"} and pools["h100"]["minNodes"] == 3
    pools = {p["name"]: p for p in wave_data(plan, pilot, {})["pools"]}
    assert pools["h100"]["minNodes"] == 2 and pools["h100-dra"]["mode"] == "dra"
    assert set(wave_data(plan, pilot, {})["inventory"]) == {"h100-dra"}


def test_the_group_is_created_before_the_merge_and_deleted_after_its_claims_are_released(
    tmp_path: Path,
) -> None:
    plan = _plan(tmp_path, takeover_spec())
    base, pilot = plan.wave("base"), plan.wave("pilot")
    forward = [(s.kind, s.action, s.pools) for s in transition_steps(plan, base, pilot)]
    merge = forward.index(("merge", "merge", ()))
    assert forward[:merge] == [
        ("manual", "create-node-group", ("h100-dra",)),
        ("manual", "take-nodes", ("h100-dra",)),
    ]
    back = [(s.action, s.pools) for s in transition_steps(plan, pilot, base) if s.kind == "manual"]
    assert back == [
        ("give-back-nodes", ("h100-dra",)),
        ("release-claims", ("h100-dra",)),
        ("delete-node-group", ("h100-dra",)),
    ]
    # moving on between waves in which the group exists creates nothing
    claims = plan.wave("claims")
    assert not [s for s in transition_steps(plan, pilot, claims) if "node-group" in s.action]


def test_the_runbooks_count_the_nodes_the_old_group_has_left(tmp_path: Path) -> None:
    """Once `h100-dra` has taken its node, `h100` has 2: the cutover's drain checks count at least 2,
    not the 3 it had before the pilot (its check would fail on every cluster)."""
    plan = _plan(tmp_path, takeover_spec())
    runbook = render_runbooks(plan, {})["03-cutover.md"]
    counts = set(re.findall(r"pool h100: \$# node\(s\) found, at least (\d+) expected", runbook))
    assert counts == {"2"}


def _pool_nodes(plan: Plan, wave: str) -> dict[str, tuple[str, int]]:
    (report,) = plan_capacity(plan, [wave])
    return {p.name: (p.mode, p.nodes) for p in report.moments[-1].outcome.pools}


def test_capacity_counts_the_nodes_on_the_side_that_has_them(tmp_path: Path) -> None:
    plan = _plan(tmp_path, takeover_spec())
    assert _pool_nodes(plan, "base") == {"h100": ("legacy", 3), "h100-dra": ("absent", 0)}
    assert _pool_nodes(plan, "pilot") == {"h100": ("legacy", 2), "h100-dra": ("dra", 1)}


def test_capacity_refuses_a_takeover_that_leaves_the_legacy_pods_no_room(tmp_path: Path) -> None:
    doc = takeover_spec()
    doc["spec"]["workloads"] = [
        {
            "kind": "Deployment",
            "namespace": "team-a",
            "name": "legacy-serving",
            "gpus": 8,
            "replicas": 3,
            "tier": "full",
            "movesIn": "cutover",
        }
    ]
    _old(doc)["provisioner"]["maxNodes"] = 3
    plan = _plan(tmp_path, doc)
    base, pilot = plan_capacity(plan, ["base", "pilot"])
    assert base.fits and not pilot.fits
    assert "h100" in "\n".join(f.reason for m in pilot.moments for f in m.outcome.failures)


def test_the_overview_shows_the_group_as_not_created_before_its_wave(tmp_path: Path) -> None:
    plan = _plan(tmp_path, takeover_spec())
    text = overview_mermaid(plan)
    assert text.count("not created") == 1 and "classDef absent" in text
    row = next(line for line in render_overview(plan).splitlines() if line.startswith("| h100-dra |"))
    assert row == "| h100-dra | node-group, new: 1 node(s) of h100 | 01-pilot | - |"
