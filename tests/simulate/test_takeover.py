"""The simulator replays a new DRA node group created next to a legacy one: the group is born on
DRA, the old group gives up its nodes and gets them back on rollback, and the gate programs judge
every checkpoint as the replay does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuplatform.capacity.run import stack_capacity
from gpuplatform.cli import main
from gpuplatform.load.stacks import load_stack
from gpuplatform.simulate import jobs, manual
from tests.plan.test_takeover import takeover_spec
from tests.simulate.helpers import replay_judged, simulate, violations
from tests.specs import write_spec


def _sim_takeover() -> dict[str, Any]:
    doc = takeover_spec()
    doc["spec"]["gpuOperator"] = {"managed": True}
    doc["spec"]["delivery"]["engines"] = ["argocd", "flux"]
    return doc


def test_every_transition_of_a_takeover_is_proven_and_every_checkpoint_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs, "holds_claim", lambda pod: True)
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", _sim_takeover()))
    replay_judged(loaded)
    report = simulate(tmp_path, _sim_takeover())
    assert report.results and not violations(report)


def _nodes(folder: Path) -> dict[str, str]:
    items = json.loads((folder / "nodes.json").read_text())["items"]
    return {
        # a node the group had before the migration carries no mode label: legacy all the same
        n["metadata"]["name"]: n["metadata"]["labels"].get("gpu-scheduling.lab.example.com/mode", "legacy")
        + ("+taint" if n["spec"].get("taints") else "")
        for n in items
        if n["metadata"]["labels"].get("cloud.google.com/gke-nodepool", "").startswith("h100")
    }


def _settled(tmp_path: Path, source: str, target: str) -> Path:
    spec = write_spec(tmp_path / "lab.yaml", _sim_takeover())
    out = tmp_path / f"{source}-{target}"
    args = ["simulate", str(spec), "--from", source, "--to", target, "--engine", "flux"]
    done = CliRunner().invoke(main, [*args, "--write-snapshots", str(out)])
    assert done.exit_code == 0, done.output
    return max(
        f for f in out.iterdir() if f.name.endswith(f"-after-{source}-{target}") and "-late-" not in f.name
    )


def test_the_new_group_is_born_on_dra_and_the_rollback_gives_the_nodes_back(tmp_path: Path) -> None:
    # forward: one node of h100 becomes the DRA group's; every node of it is DRA and tainted
    pilot = _nodes(_settled(tmp_path, "base", "pilot"))
    assert sorted(pilot.values()) == ["dra+taint", "legacy", "legacy"], pilot
    assert [n for n, mode in pilot.items() if mode == "dra+taint"] == ["h100-dra-node-0"]
    # back: the group is gone, and h100 has its three nodes again, all on the device plugin
    base = _nodes(_settled(tmp_path, "pilot", "base"))
    assert sorted(base.values()) == ["legacy"] * 3, base
    assert not [n for n in base if n.startswith("h100-dra")]


def test_a_group_created_without_the_handoff_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a runbook that creates the new group as a plain copy of the old one (its legacy labels)
    original = manual.handoff

    def legacy_copy(world: Any, wave: str, pool: str) -> dict[str, Any]:
        source = world.plan.pools[pool].takes_over_from
        return original(world, wave, source if source is not None else pool)

    monkeypatch.setattr(manual, "handoff", legacy_copy)
    # THEN the wave's gates hold the sync: the new group's node runs the device plugin, no DRA driver
    report = simulate(tmp_path, _sim_takeover(), "base", "pilot", engines=("flux",))
    found = violations(report)
    assert found, report.results
    assert all("h100-dra-node-0" in v.message for *_, v in found), found


def test_capacity_on_a_snapshot_counts_the_nodes_the_cluster_shows(tmp_path: Path) -> None:
    # GIVEN the model's cluster once pilot is applied (the spec's activeWave): h100 has given one node
    settled = _settled(tmp_path, "base", "pilot")
    (loaded,) = load_stack(tmp_path / "lab.yaml")
    # WHEN capacity reads it for pilot, and for base (the rollback gives the node back)
    pilot, base = (stack_capacity([loaded], wave, False, str(settled))[0] for wave in ("pilot", "base"))
    # THEN the snapshot's two h100 nodes are not lowered again, and in base h100 has its third back
    pools = {p.name: p for p in pilot.moments[-1].outcome.pools}
    assert (pools["h100"].nodes, pools["h100"].limit) == (2, 3)
    assert (pools["h100-dra"].mode, pools["h100-dra"].nodes) == ("dra", 1)
    pools = {p.name: p for p in base.moments[-1].outcome.pools}
    assert (pools["h100"].nodes, pools["h100"].added, pools["h100"].limit) == (3, 0, 4)
    assert pools["h100-dra"].mode == "absent"


def test_two_new_groups_can_take_every_node_of_the_old_one_and_give_them_back(tmp_path: Path) -> None:
    # GIVEN a group of at most 2 nodes (1 running) whose nodes go to two new groups, in pilot and claims
    doc = _sim_takeover()
    pools = doc["spec"]["nodePools"]
    pools[0]["provisioner"].update(minNodes=1, maxNodes=2)
    second = {**pools[1], "name": "h100-dra-b", "migratesIn": "claims"}
    second["provisioner"] = {**pools[1]["provisioner"], "name": "h100-dra-b"}
    pools.append(second)
    # THEN every transition, forward and back, is proven: the second group is made from the spec,
    # not from the old group's nodes (none are left), and rolling back brings them back
    report = simulate(tmp_path, doc)
    assert report.results and not violations(report)
