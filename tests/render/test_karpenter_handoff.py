"""The Karpenter hand-off validates as what it is: the runbook's patches, applied to a NodePool valid
under the upstream CRD (1.0.0 and the newest, schema and CEL rules: `tests/upstream_crds.py`), give
a valid NodePool with the wave's labels and taint and the owner's rest."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.steps import transition_steps
from gpuplatform.plan.waves import Plan, WaveState, plan_platform
from gpuplatform.render.handoff import render_pool_handoffs
from gpuplatform.render.meta import file_name
from gpuplatform.render.nodes import pool_taint
from gpuplatform.render.runbook_pools import pool_actions
from tests.upstream_crds import crd_errors

REPO = Path(__file__).resolve().parents[2]
OWNER_TAINT = {"key": "team.example.com/gpu", "effect": "NoSchedule"}

FAKE = """#!{python}
import json, os, sys, yaml
path = {state!r}
live = json.load(open(path))
args = sys.argv[1:]
assert args[1] == "nodepool" and args[2] == live["metadata"]["name"], args


def pointer(doc, ptr):
    parts = [p.replace("~1", "/").replace("~0", "~") for p in ptr.split("/")[1:]]
    for part in parts[:-1]:
        doc = doc[part]
    return doc, parts[-1]


def merge(target, patch):
    if not isinstance(patch, dict):
        return patch
    target = dict(target) if isinstance(target, dict) else {{}}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = merge(target.get(key), value)
    return target


if args[0] == "get":
    print(json.dumps(live))
    between = os.environ.get("BETWEEN")  # another writer, between this read and the next write
    if between:
        live = merge(live, json.loads(between))
        live["metadata"]["resourceVersion"] = str(int(live["metadata"]["resourceVersion"]) + 1)
        json.dump(live, open(path, "w"))
    sys.exit(0)
assert args[0] == "patch", args
kind = args[args.index("--type") + 1]
if kind == "json":
    for op in json.loads(args[args.index("-p") + 1]):
        parent, key = pointer(live, op["path"])
        if op["op"] == "test":
            if parent.get(key) != op["value"]:
                sys.exit("test failed")
        elif op["op"] == "add":
            parent[key] = op["value"]
        else:
            sys.exit("unexpected op " + op["op"])
else:
    assert kind == "merge", args
    live = merge(live, yaml.safe_load(open(args[args.index("--patch-file") + 1])))
live["metadata"]["resourceVersion"] = str(int(live["metadata"]["resourceVersion"]) + 1)
json.dump(live, open(path, "w"))
"""


def _owner_nodepool(name: str) -> dict[str, Any]:
    """A NodePool as its owner wrote it, valid under the CRD: its own labels, taints and requirements."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {
            "template": {
                "metadata": {"labels": {"team.example.com/owner": "gpu"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                    "requirements": [
                        {
                            "key": "node.kubernetes.io/instance-type",
                            "operator": "In",
                            "values": ["g6e.xlarge"],
                        }
                    ],
                    "taints": [OWNER_TAINT],
                },
            }
        },
    }


def _transitions(plan: Plan) -> list[tuple[WaveState, WaveState]]:
    pairs = list(itertools.pairwise(plan.waves))
    return pairs + [(b, a) for a, b in pairs]


@pytest.fixture(scope="module")
def fleet() -> Plan:
    return plan_platform(load_stack(REPO / "stacks" / "mixed-fleet.yaml")[0].platform)


def test_the_owner_nodepool_is_valid(fleet: Plan) -> None:
    owner = _owner_nodepool("gpu-l40s")
    assert crd_errors(owner, "newest") == crd_errors(owner, "minimum") == []


def test_the_runbook_patches_give_a_valid_nodepool_with_the_wave_labels_and_taint(
    fleet: Plan, tmp_path: Path
) -> None:
    moved = 0
    for a, b in _transitions(fleet):
        for step in transition_steps(fleet, a, b):
            if step.action != "apply-handoff":
                continue
            for pool_name in step.pools:
                pool = fleet.pools[pool_name]
                if pool.provisioner is None or pool.provisioner.kind != "karpenter":
                    continue
                # GIVEN the owner's NodePool as it is in wave `a`, and the hand-off files of wave `b`
                live = _owner_nodepool(pool.provisioner.name)
                handoffs = render_pool_handoffs(fleet, b)
                env, state = _fake_kubectl(fleet, b, live, tmp_path)
                # WHEN the operator runs the runbook's commands, in order
                commands = [c for action in pool_actions(fleet, a, b, step) for c in action.commands]
                for command in commands:
                    if "kubectl patch nodepool" in command:
                        subprocess.run(["dash", "-c", command], env=env, cwd=tmp_path, check=True, timeout=60)
                result = json.loads(state.read_text())
                # THEN the NodePool is valid, carries the wave's labels and taint, and the owner's rest
                assert crd_errors(result, "newest") == crd_errors(result, "minimum") == []
                template = result["spec"]["template"]
                spec = next(
                    d["spec"]
                    for d in handoffs
                    if d["kind"] == "NodePoolHandoff" and d["metadata"]["name"] == pool.name
                )
                assert template["metadata"]["labels"] == {"team.example.com/owner": "gpu", **spec["labels"]}
                taint = pool_taint(fleet.platform, pool)
                expected = [OWNER_TAINT, taint] if b.pool_modes[pool.name] == "dra" else [OWNER_TAINT]
                assert template["spec"]["taints"] == expected, (a.name, b.name)
                assert template["spec"]["nodeClassRef"] == live["spec"]["template"]["spec"]["nodeClassRef"]
                moved += 1
    assert moved >= 2


def test_the_labels_patch_removes_every_label_of_another_wave(fleet: Plan) -> None:
    seen: set[str] = set()
    for state in fleet.waves:
        for doc in render_pool_handoffs(fleet, state):
            if doc["kind"] == "NodePool":
                seen |= set(doc["spec"]["template"]["metadata"]["labels"])
                assert "taints" not in doc["spec"]["template"].get("spec", {})
    for state in fleet.waves:
        for doc in render_pool_handoffs(fleet, state):
            if doc["kind"] == "NodePool":
                assert set(doc["spec"]["template"]["metadata"]["labels"]) == seen


def _fake_kubectl(
    fleet: Plan, b: WaveState, live: dict[str, Any], tmp_path: Path
) -> tuple[dict[str, str], Path]:
    """Wave `b`'s hand-off files where the runbook reads them, and a fake kubectl on PATH patching
    `live` (kept in the returned state file)."""
    handoff_dir = tmp_path / "handoff" / b.dir_name
    handoff_dir.mkdir(parents=True, exist_ok=True)
    for doc in render_pool_handoffs(fleet, b):
        (handoff_dir / file_name(doc)).write_text(yaml.safe_dump(doc))
    state = tmp_path / "nodepool.json"
    state.write_text(json.dumps(live))
    fake = tmp_path / "bin" / "kubectl"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(FAKE.format(python=sys.executable, state=str(state)))
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}, state


def _run_runbook(
    fleet: Plan, a: WaveState, b: WaveState, live: dict[str, Any], tmp_path: Path
) -> dict[str, Any]:
    """The NodePool after the operator runs the `kubectl patch nodepool` commands of `a` to `b`."""
    env, state = _fake_kubectl(fleet, b, live, tmp_path)
    for step in transition_steps(fleet, a, b):
        if step.action == "apply-handoff":
            for action in pool_actions(fleet, a, b, step):
                for command in action.commands:
                    if "kubectl patch nodepool" in command:
                        subprocess.run(["dash", "-c", command], env=env, cwd=tmp_path, check=True, timeout=60)
    result: dict[str, Any] = json.loads(state.read_text())
    return result


def test_the_rollback_patches_give_back_the_nodepool_the_forward_ones_changed(
    fleet: Plan, tmp_path: Path
) -> None:
    pairs = 0
    for a, b in itertools.pairwise(fleet.waves):
        for pool in fleet.platform.node_pools:
            if pool.provisioner is None or pool.provisioner.kind != "karpenter":
                continue
            if a.pool_modes[pool.name] == b.pool_modes[pool.name]:
                continue
            # GIVEN the owner's NodePool as it is in wave a
            start = _run_runbook(fleet, b, a, _owner_nodepool(pool.provisioner.name), tmp_path)
            # WHEN the runbook moves it to wave b, then rolls it back to a
            there = _run_runbook(fleet, a, b, start, tmp_path)
            back = _run_runbook(fleet, b, a, there, tmp_path)
            # THEN the template is the one it had in a: the owner's labels and taints as they were
            assert there["spec"]["template"] != start["spec"]["template"]
            assert back["spec"]["template"] == start["spec"]["template"], (a.name, b.name)
            pairs += 1
    assert pairs >= 1


def _taint_command(fleet: Plan, a: WaveState, b: WaveState) -> str:
    [command] = [
        c
        for step in transition_steps(fleet, a, b)
        if step.action == "apply-handoff"
        for action in pool_actions(fleet, a, b, step)
        for c in action.commands
        if "--type json" in c
    ]
    return command


def test_the_taint_patch_ignores_karpenters_own_writes_and_refuses_a_taint_changed_meanwhile(
    fleet: Plan, tmp_path: Path
) -> None:
    # GIVEN the rollback of `scale`, whose labels' merge patch makes Karpenter write the NodePool's
    # hash annotation right away (and its status, as nodes come and go)
    scale, nim = fleet.wave("scale"), fleet.wave("nim")
    pool = fleet.pools["l40s"]
    taint = pool_taint(fleet.platform, pool)
    live = _owner_nodepool("gpu-l40s")
    live["spec"]["template"]["spec"]["taints"] = [OWNER_TAINT, taint]
    command = _taint_command(fleet, scale, nim)
    env, state = _fake_kubectl(fleet, nim, live, tmp_path)
    # WHEN Karpenter writes between the command's read and its patch
    hashed = {"metadata": {"annotations": {"karpenter.sh/nodepool-hash": "123"}}}
    done = subprocess.run(["dash", "-c", command], env={**env, "BETWEEN": json.dumps(hashed)}, cwd=tmp_path)
    # THEN the taint goes all the same
    assert done.returncode == 0
    assert json.loads(state.read_text())["spec"]["template"]["spec"]["taints"] == [OWNER_TAINT]
    # WHEN the owner changes the taints in between instead
    other = {"key": "team.example.com/other", "effect": "NoSchedule"}
    owner = {"spec": {"template": {"spec": {"taints": [OWNER_TAINT, taint, other]}}}}
    env, state = _fake_kubectl(fleet, nim, live, tmp_path)
    done = subprocess.run(["dash", "-c", command], env={**env, "BETWEEN": json.dumps(owner)}, cwd=tmp_path)
    # THEN the patch is refused, and the owner's list stays as the owner left it
    assert done.returncode != 0
    assert json.loads(state.read_text())["spec"]["template"]["spec"]["taints"] == [OWNER_TAINT, taint, other]
