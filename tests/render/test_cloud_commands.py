"""A node group's runbook commands, run against fake `gcloud`, `az` and `aws` that keep a node group as
each cloud describes it: the flags each CLI documents, the group's own labels and taints kept, and a
rollback that gives the group back what the forward hand-off changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.model import Platform
from gpuplatform.plan.steps import transition_steps
from gpuplatform.plan.waves import Plan, WaveState, plan_platform
from gpuplatform.render.cloud_commands import node_group_update
from gpuplatform.render.runbook_pools import pool_actions
from tests.specs import minimal_spec

#: A fake CLI for the three clouds: `describe`/`show` print the group, `update` changes it as the cloud
#: documents (GKE and AKS replace the whole label set and taint list, EKS adds and removes by key).
FAKE = """#!{python}
import json, os, sys
path = {state!r}
group = json.load(open(path))
tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]
log = open(path + ".log", "a")
log.write(json.dumps([tool, *args]) + "\\n")


def flag(name):
    for i, a in enumerate(args):
        if a == name:
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def words_after(name):
    i = args.index(name) + 1
    out = []
    while i < len(args) and not args[i].startswith("--"):
        out.append(args[i])
        i += 1
    return out


GKE = {{"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}}


def taint(text):
    kv, effect = text.rsplit(":", 1)
    key, _, value = kv.partition("=")
    return {{"key": key, **({{"value": value}} if value else {{}}), "effect": GKE[effect]}}


if tool == "gcloud":
    assert args[:3] == ["container", "node-pools", args[2]] and args[3] == group["name"], args
    assert flag("--cluster") == "prod" and flag("--location") == "europe-west4", args
    if args[2] == "describe":
        assert flag("--format") == "json"
        print(json.dumps(group))
        sys.exit(0)
    assert args[2] == "update", args
    labels, taints = flag("--node-labels"), flag("--node-taints")
    assert (labels is None) != (taints is None), "one field per update call"
    if labels is not None:
        group["config"]["labels"] = dict(kv.split("=", 1) for kv in labels.split(",") if kv)
    else:
        group["config"]["taints"] = [taint(t) for t in taints.split(",") if t]
elif tool == "az":
    assert args[:3] == ["aks", "nodepool", args[2]], args
    assert flag("--resource-group") == "rg" and flag("--cluster-name") == "prod" and flag("--name") == group["name"]
    if args[2] == "show":
        print(json.dumps(group))
        sys.exit(0)
    assert args[2] == "update", args
    group["nodeLabels"] = dict(kv.split("=", 1) for kv in words_after("--labels"))
    group["nodeTaints"] = [t for t in flag("--node-taints").split(",") if t]
else:
    assert tool == "aws" and args[:2] == ["eks", "update-nodegroup-config"], args
    assert flag("--cluster-name") == "prod" and flag("--nodegroup-name") == group["nodegroupName"]
    labels, taints = json.loads(flag("--labels")), json.loads(flag("--taints"))
    assert set(labels) <= {{"addOrUpdateLabels", "removeLabels"}} and set(taints) <= {{"addOrUpdateTaints", "removeTaints"}}
    group["labels"].update(labels.get("addOrUpdateLabels", {{}}))
    for key in labels.get("removeLabels", []):
        group["labels"].pop(key, None)
    gone = {{t["key"] for t in taints.get("removeTaints", []) + taints.get("addOrUpdateTaints", [])}}
    group["taints"] = [t for t in group["taints"] if t["key"] not in gone] + taints.get("addOrUpdateTaints", [])
json.dump(group, open(path, "w"))
"""

OWNER_LABELS = {"team.example.com/owner": "ml"}


def _live(cloud: str, name: str) -> dict[str, Any]:
    """The node group as the cloud describes it, with its owner's label and taint."""
    if cloud == "gke":
        taint = {"key": "team.example.com/gpu", "value": "true", "effect": "NO_EXECUTE"}
        return {"name": name, "config": {"labels": dict(OWNER_LABELS), "taints": [taint]}}
    if cloud == "aks":
        return {
            "name": name,
            "nodeLabels": dict(OWNER_LABELS),
            "nodeTaints": ["team.example.com/gpu=true:NoExecute"],
        }
    taint = {"key": "team.example.com/gpu", "value": "true", "effect": "NO_EXECUTE"}
    return {"nodegroupName": name, "labels": dict(OWNER_LABELS), "taints": [taint]}


def _plan(cloud: str) -> Plan:
    doc = minimal_spec()["spec"]
    doc["nodePools"][1] = {
        "name": "new",
        "product": "H100-80GB",
        "migratesIn": "pilot",
        "provisioner": {"kind": "node-group", "cloud": cloud, "name": "h100"},
    }
    return plan_platform(Platform.model_validate({**doc, "name": "lab"}))


def _run(plan: Plan, a: WaveState, b: WaveState, state: Path, tmp_path: Path) -> list[str]:
    """Run the runbook's cloud commands of the `apply-handoff` step from `a` to `b`; the commands run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("gcloud", "az", "aws"):
        fake = bin_dir / tool
        fake.write_text(FAKE.format(python=sys.executable, state=str(state)))
        fake.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "CLUSTER": "prod",
        "LOCATION": "europe-west4",
        "RESOURCE_GROUP": "rg",
    }
    [step] = [s for s in transition_steps(plan, a, b) if s.action == "apply-handoff"]
    [action] = pool_actions(plan, a, b, step)
    commands = [c for c in action.commands if not c.startswith("kubectl")]
    subprocess.run(["dash", "-ec", "\n".join(commands)], env=env, check=True, timeout=60)
    return commands


@pytest.mark.parametrize("cloud", ["gke", "eks", "aks"])
def test_the_runbook_gives_the_node_group_the_hand_off_and_the_rollback_gives_it_back(
    cloud: str, tmp_path: Path
) -> None:
    plan = _plan(cloud)
    base, pilot = plan.wave("base"), plan.wave("pilot")
    state = tmp_path / "group.json"
    start = _live(cloud, "h100")
    state.write_text(json.dumps(start))
    # WHEN the operator runs the pilot's cloud commands
    _run(plan, base, pilot, state, tmp_path)
    there = json.loads(state.read_text())
    # THEN the group carries the DRA labels and taint, and its owner's label and taint
    labels = _labels(cloud, there)
    assert labels["nvidia.com/dra-kubelet-plugin"] == "true"
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert labels["team.example.com/owner"] == "ml"
    assert "team.example.com/gpu" in json.dumps(there) and any(
        t.startswith("gpu-scheduling.lab.example.com/mode=dra") for t in _taint_texts(cloud, there)
    )
    # AND rolling back gives the group what it had, with the legacy wave's mode label
    _run(plan, pilot, base, state, tmp_path)
    back = json.loads(state.read_text())
    assert _labels(cloud, back).pop("gpu-scheduling.lab.example.com/mode") == "legacy"
    assert back == start


def _labels(cloud: str, group: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = {
        "gke": group.get("config", {}).get("labels"),
        "aks": group.get("nodeLabels"),
    }.get(cloud) or group["labels"]
    return labels


def _taint_texts(cloud: str, group: dict[str, Any]) -> list[str]:
    if cloud == "aks":
        return list(group["nodeTaints"])
    taints = group["config"]["taints"] if cloud == "gke" else group["taints"]
    return [f"{t['key']}={t.get('value', '')}" for t in taints]


def test_the_taint_goes_on_before_the_dra_labels_on_gke(tmp_path: Path) -> None:
    plan = _plan("gke")
    state = tmp_path / "group.json"
    state.write_text(json.dumps(_live("gke", "h100")))
    forward = _run(plan, plan.wave("base"), plan.wave("pilot"), state, tmp_path)
    assert [c.split()[-1].split("=")[0] for c in forward if c.startswith("gcloud")] == [
        "--node-taints",
        "--node-labels",
    ]
    back = _run(plan, plan.wave("pilot"), plan.wave("base"), state, tmp_path)
    assert [c.split()[-1].split("=")[0] for c in back if c.startswith("gcloud")] == [
        "--node-labels",
        "--node-taints",
    ]


def test_eks_uses_its_effect_names_and_removes_labels_by_key() -> None:
    taint = {"key": "m", "value": "dra", "effect": "NoSchedule"}
    [command] = node_group_update(
        "eks", "h100", {"m": "legacy"}, ["nvidia.com/dra-kubelet-plugin"], [], [taint]
    )
    assert '"removeLabels":["nvidia.com/dra-kubelet-plugin"]' in command
    assert '"removeTaints":[{"effect":"NO_SCHEDULE","key":"m","value":"dra"}]' in command


def test_a_node_group_is_cordoned_and_drained_by_its_selector_before_its_labels_change() -> None:
    # GKE, EKS and AKS change a group's node labels in place: a device-plugin pod left running would
    # share its GPU with the DRA driver the new labels start
    plan = _plan("gke")
    base, pilot = plan.wave("base"), plan.wave("pilot")
    steps = transition_steps(plan, base, pilot)
    actions = [s.action for s in steps if "new" in s.pools and s.kind == "manual"]
    assert actions[:3] == ["cordon", "drain-gpu-pods", "apply-handoff"]
    [drain] = [s for s in steps if s.action == "drain-gpu-pods"]
    commands = [c for a in pool_actions(plan, base, pilot, drain) for c in a.commands]
    assert (
        "kubectl drain -l cloud.google.com/gke-nodepool=h100 --ignore-daemonsets --delete-emptydir-data"
        in commands
    )
    assert "uncordon" in [s.action for s in steps if "new" in s.pools]
    back = [s.action for s in transition_steps(plan, pilot, base) if "new" in s.pools and s.kind == "manual"]
    assert back[0] == "cordon" and "uncordon" in back
