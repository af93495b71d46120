"""A node group's runbook commands, run against fake `gcloud`, `az` and `aws` that keep a node group as
each cloud describes it: the flags each CLI documents, the group's own labels and taints kept, and a
rollback that gives the group back what the forward hand-off changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.model import Platform
from gpuplatform.plan.steps import transition_steps
from gpuplatform.plan.waves import Plan, WaveState, plan_platform
from gpuplatform.render.cloud_commands import (
    node_group_create,
    node_group_delete,
    node_group_resize,
    node_group_update,
)
from gpuplatform.render.runbook_pools import pool_actions
from tests.specs import minimal_spec

#: A fake CLI for the three clouds: `describe`/`show` print the group, `update` changes it as the cloud
#: documents (GKE and AKS replace the whole label set and taint list, EKS adds and removes by key).
FAKE = """#!{python}
import json, os, sys
path = {state!r}
group = json.load(open(path))
tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]
if tool == "kubectl":  # the runbook's waits between two updates: one node, its allocators gone
    if args[:2] == ["get", "nodes"]:
        print("node/gpu-01")
    elif args[:2] == ["get", "node/gpu-01"]:
        print(json.dumps({{"status": {{"allocatable": {{"cpu": "8", "nvidia.com/gpu": "0"}}}}}}))
    sys.exit(0)
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
    assert flag("--project") == "lab-project", args
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
elif args[:2] == ["eks", "describe-update"]:  # the update the call below started (asynchronous)
    assert flag("--name") == "prod" and flag("--nodegroup-name") == group["nodegroupName"], args
    assert flag("--update-id") == "u-1" and flag("--query") == "update.status", args
    print(group.pop("updateStatus", "Successful"))
else:
    assert tool == "aws" and args[:2] == ["eks", "update-nodegroup-config"], args
    assert flag("--cluster-name") == "prod" and flag("--nodegroup-name") == group["nodegroupName"]
    assert flag("--query") == "update.id", args
    print("u-1")
    labels, taints = json.loads(flag("--labels") or "{{}}"), json.loads(flag("--taints") or "{{}}")
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


def _fakes(tmp_path: Path, script: str, tools: tuple[str, ...]) -> dict[str, str]:
    """Install `script` as each of `tools` first on PATH; the environment the runbook's commands read."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in tools:
        fake = bin_dir / tool
        fake.write_text(script)
        fake.chmod(0o755)
    path = f"{bin_dir}:{os.environ['PATH']}"
    return {
        **os.environ,
        "PATH": path,
        "PROJECT": "lab-project",
        "CLUSTER": "prod",
        "LOCATION": "europe-west4",
        "RESOURCE_GROUP": "rg",
    }


def _run(plan: Plan, a: WaveState, b: WaveState, state: Path, tmp_path: Path) -> list[str]:
    """Run the runbook's cloud commands of the `apply-handoff` step from `a` to `b`; the commands run."""
    env = _fakes(
        tmp_path, FAKE.format(python=sys.executable, state=str(state)), ("gcloud", "az", "aws", "kubectl")
    )
    [step] = [s for s in transition_steps(plan, a, b) if s.action == "apply-handoff"]
    [action] = pool_actions(plan, a, b, step)
    commands = [c for c in action.commands if not c.startswith("kubectl")]
    subprocess.run(["dash", "-ec", "\n".join(commands)], env=env, check=True, timeout=60)
    return commands


def test_the_eks_update_is_waited_for_and_a_failed_one_stops_the_runbook(tmp_path: Path) -> None:
    # GIVEN EKS, whose update-nodegroup-config only starts an update
    plan = _plan("eks")
    state = tmp_path / "group.json"
    state.write_text(json.dumps(_live("eks", "h100")))
    # WHEN the pilot's commands run: THEN they ask for the update's status before going on
    _run(plan, plan.wave("base"), plan.wave("pilot"), state, tmp_path)
    calls = [json.loads(line)[1:3] for line in Path(f"{state}.log").read_text().splitlines()]
    assert calls == [["eks", "update-nodegroup-config"], ["eks", "describe-update"]] * 2
    # AND an update that failed stops them
    state.write_text(json.dumps({**_live("eks", "h100"), "updateStatus": "Failed"}))
    with pytest.raises(subprocess.CalledProcessError):
        _run(plan, plan.wave("pilot"), plan.wave("base"), state, tmp_path)


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
    """GKE applies each update to the running nodes: the taint first, the DRA kubelet plugin's label
    in its own last update (after the runbook's wait for the device plugin to go); back, that label
    goes in the first update and the taint in the last."""
    plan = _plan("gke")
    state = tmp_path / "group.json"
    state.write_text(json.dumps(_live("gke", "h100")))
    log = Path(f"{state}.log")

    def updates() -> list[tuple[str, bool]]:
        calls = [json.loads(line) for line in log.read_text().splitlines()]
        log.unlink()
        return [
            (c[-1].split("=")[0], "nvidia.com/dra-kubelet-plugin=true" in c[-1])
            for c in calls
            if c[3] == "update"
        ]

    _run(plan, plan.wave("base"), plan.wave("pilot"), state, tmp_path)
    assert updates() == [("--node-taints", False), ("--node-labels", False), ("--node-labels", True)]
    _run(plan, plan.wave("pilot"), plan.wave("base"), state, tmp_path)
    assert updates() == [("--node-labels", False), ("--node-labels", False), ("--node-taints", False)]


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


#: A fake `gcloud`, `aws`, `az` and `kubectl` for the takeover's commands: a read (`describe`, `show`,
#: `get`) prints the recorded object of its tool (`kubectl get KIND`: of its kind), every call appends
#: its argv (and, for `kubectl create -f -`, the object read from stdin) to the log.
RECORDER = """#!{python}
import json, os, sys
path = {state!r}
tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]
entry = [tool, *args]
if tool == "kubectl" and args[:1] == ["create"]:
    entry.append(json.loads(sys.stdin.read()))
with open(path + ".log", "a") as log:
    log.write(json.dumps(entry) + "\\n")
reads = {{"gcloud": "describe", "aws": "describe-nodegroup", "az": "show", "kubectl": "get"}}
if tool == "aws" and "update-nodegroup-config" in args:
    print("u-1")
elif tool == "aws" and "describe-update" in args:
    print("Successful")
elif reads[tool] in args:
    recorded = json.load(open(path))
    if tool == "kubectl":
        # kubectl get KIND: the KIND of the context named (`--context=C`), else of the current one
        context = next((a.split("=", 1)[1] for a in args if a.startswith("--context=")), None)
        kind = args[args.index("get") + 1]
        key = f"{{kind}}@{{context}}" if f"{{kind}}@{{context}}" in recorded else kind
        print(json.dumps(recorded[key]))
    else:
        print(json.dumps(recorded[tool]))
"""

needs_jq = pytest.mark.skipif(shutil.which("jq") is None, reason="the commands read the live group with jq")

DRA_TAINT = {"key": "gpu-scheduling.lab.example.com/mode", "value": "dra", "effect": "NoSchedule"}
LEGACY_TAINT = {"key": "gpu-scheduling.lab.example.com/mode", "value": "legacy", "effect": "NoSchedule"}
DRA_LABELS = {"nvidia.com/dra-kubelet-plugin": "true", "gpu-scheduling.lab.example.com/mode": "dra"}

#: Each cloud's live legacy group: its owner's label and taint, the legacy mode taint, its hardware.
SOURCES: dict[str, dict[str, Any]] = {
    "gke": {
        "name": "h100",
        "locations": ["europe-west4-a", "europe-west4-b"],
        "autoscaling": {"enabled": True, "totalMinNodeCount": 1, "totalMaxNodeCount": 8},
        "config": {
            "machineType": "a3-highgpu-8g",
            "diskSizeGb": 200,
            "imageType": "UBUNTU_CONTAINERD",
            "serviceAccount": "gpu-nodes@lab.iam.gserviceaccount.com",
            "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"],
            "labels": {**OWNER_LABELS, "gpu-scheduling.lab.example.com/mode": "legacy"},
            "taints": [
                {"key": "team.example.com/gpu", "value": "true", "effect": "NO_EXECUTE"},
                {**LEGACY_TAINT, "effect": "NO_SCHEDULE"},
            ],
            "accelerators": [
                {
                    "acceleratorType": "nvidia-h100-80gb",
                    "acceleratorCount": "8",
                    "gpuDriverInstallationConfig": {"gpuDriverVersion": "INSTALLATION_DISABLED"},
                }
            ],
        },
    },
    "eks": {
        "nodegroup": {
            "nodegroupName": "h100",
            "nodeRole": "arn:aws:iam::111122223333:role/gpu-nodes",
            "subnets": ["subnet-a", "subnet-b"],
            "instanceTypes": ["p5.48xlarge"],
            "amiType": "AL2023_x86_64_NVIDIA",
            "capacityType": "ON_DEMAND",
            "diskSize": 500,
            "scalingConfig": {"minSize": 2, "maxSize": 6, "desiredSize": 4},
            "labels": {**OWNER_LABELS, "gpu-scheduling.lab.example.com/mode": "legacy"},
            "taints": [
                {"key": "team.example.com/gpu", "value": "true", "effect": "NO_EXECUTE"},
                {**LEGACY_TAINT, "effect": "NO_SCHEDULE"},
            ],
        }
    },
    "aks": {
        "name": "h100",
        "vmSize": "Standard_ND96isr_H100_v5",
        "count": 4,
        "availabilityZones": ["1", "2"],
        "osDiskSizeGb": 256,
        "osSku": "Ubuntu",
        "mode": "User",
        "gpuProfile": {"driver": "None"},
        "enableAutoScaling": False,
        "nodeLabels": {**OWNER_LABELS, "gpu-scheduling.lab.example.com/mode": "legacy"},
        "nodeTaints": [
            "team.example.com/gpu=true:NoExecute",
            "gpu-scheduling.lab.example.com/mode=legacy:NoSchedule",
        ],
    },
}


def _record(commands: tuple[str, ...], state: dict[str, Any], tmp_path: Path) -> list[list[Any]]:
    """Run `commands` in one POSIX shell against the fakes holding `state`; the calls they made."""
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    script = RECORDER.format(python=sys.executable, state=str(path))
    env = _fakes(tmp_path, script, ("gcloud", "aws", "az", "kubectl"))
    subprocess.run(["dash", "-ec", "\n".join(commands)], env=env, check=True, timeout=60, capture_output=True)
    log = Path(f"{path}.log")
    return [json.loads(line) for line in log.read_text().splitlines()]


def _after(args: list[Any], flag: str) -> list[str]:
    """The values after `flag` up to the next flag."""
    i = args.index(flag) + 1
    values = []
    while i < len(args) and not str(args[i]).startswith("--"):
        values.append(args[i])
        i += 1
    return values


@needs_jq
def test_gke_copies_the_source_pool_with_the_dra_labels_and_taint(tmp_path: Path) -> None:
    commands = node_group_create("gke", "h100dra", "h100", 4, 6, DRA_LABELS, [DRA_TAINT])
    *_, create = _record(commands, {"gcloud": SOURCES["gke"]}, tmp_path)
    assert create[:5] == ["gcloud", "container", "node-pools", "create", "h100dra"]
    assert _after(create, "--machine-type") == ["a3-highgpu-8g"]
    # the accelerator and the source's driver choice: the GPU Operator's driver, not GKE's
    assert _after(create, "--accelerator") == ["type=nvidia-h100-80gb,count=8,gpu-driver-version=disabled"]
    assert _after(create, "--node-locations") == ["europe-west4-a,europe-west4-b"]
    # 4 nodes over 2 zones: gcloud counts per zone
    assert _after(create, "--num-nodes") == ["2"]
    assert _after(create, "--total-min-nodes") == ["4"] and _after(create, "--total-max-nodes") == ["6"]
    assert _after(create, "--disk-size") == ["200"] and _after(create, "--image-type") == [
        "UBUNTU_CONTAINERD"
    ]
    assert _after(create, "--service-account") == ["gpu-nodes@lab.iam.gserviceaccount.com"]
    assert _after(create, "--scopes") == ["https://www.googleapis.com/auth/cloud-platform"]
    [labels] = _after(create, "--node-labels")
    assert set(labels.split(",")) == {
        "team.example.com/owner=ml",
        "nvidia.com/dra-kubelet-plugin=true",
        "gpu-scheduling.lab.example.com/mode=dra",
    }
    [taints] = _after(create, "--node-taints")
    assert taints.split(",") == [
        "team.example.com/gpu=true:NoExecute",
        "gpu-scheduling.lab.example.com/mode=dra:NoSchedule",
    ]


@needs_jq
def test_gke_refuses_a_size_that_does_not_split_over_the_zones(tmp_path: Path) -> None:
    commands = node_group_create("gke", "h100dra", "h100", 3, None, DRA_LABELS, [DRA_TAINT])
    with pytest.raises(subprocess.CalledProcessError) as failed:
        _record(commands, {"gcloud": SOURCES["gke"]}, tmp_path)
    assert b"3 nodes do not split evenly over the 2 zones" in failed.value.stderr
    calls = [json.loads(line) for line in (tmp_path / "state.json.log").read_text().splitlines()]
    assert [c[3] for c in calls] == ["describe"]


@needs_jq
def test_eks_copies_the_source_group_and_waits_for_it(tmp_path: Path) -> None:
    commands = node_group_create("eks", "h100-dra", "h100", 2, None, DRA_LABELS, [DRA_TAINT])
    _, create, wait = _record(commands, {"aws": SOURCES["eks"]}, tmp_path)
    assert create[:6] == ["aws", "eks", "create-nodegroup", "--cluster-name", "prod", "--nodegroup-name"]
    assert create[6] == "h100-dra"
    assert _after(create, "--scaling-config") == ["minSize=2,maxSize=2,desiredSize=2"]
    assert _after(create, "--subnets") == ["subnet-a", "subnet-b"]
    assert _after(create, "--instance-types") == ["p5.48xlarge"]
    assert _after(create, "--ami-type") == ["AL2023_x86_64_NVIDIA"]
    assert _after(create, "--node-role") == ["arn:aws:iam::111122223333:role/gpu-nodes"]
    assert _after(create, "--disk-size") == ["500"]
    [labels] = _after(create, "--labels")
    assert json.loads(labels) == {**OWNER_LABELS, **DRA_LABELS}
    [taints] = _after(create, "--taints")
    assert json.loads(taints) == [
        {"key": "team.example.com/gpu", "value": "true", "effect": "NO_EXECUTE"},
        {**DRA_TAINT, "effect": "NO_SCHEDULE"},
    ]
    assert wait == [
        "aws",
        "eks",
        "wait",
        "nodegroup-active",
        "--cluster-name",
        "prod",
        "--nodegroup-name",
        "h100-dra",
    ]


@needs_jq
def test_eks_gives_no_ami_type_for_a_custom_ami_launch_template(tmp_path: Path) -> None:
    # describe-nodegroup says CUSTOM for a launch template's own AMI, which create-nodegroup refuses
    # (EKS API CreateNodegroup `amiType`: "don't specify amiType, or the node group deployment will fail")
    group = {
        **SOURCES["eks"]["nodegroup"],
        "amiType": "CUSTOM",
        "launchTemplate": {"id": "lt-1", "version": "3"},
    }
    commands = node_group_create("eks", "h100-dra", "h100", 2, None, DRA_LABELS, [DRA_TAINT])
    _, create, _ = _record(commands, {"aws": {"nodegroup": group}}, tmp_path)
    assert "--ami-type" not in create
    assert _after(create, "--launch-template") == ["id=lt-1,version=3"] and "--disk-size" not in create


@needs_jq
def test_aks_copies_the_source_pool_without_aks_driver(tmp_path: Path) -> None:
    commands = node_group_create("aks", "h100dra", "h100", 2, 4, DRA_LABELS, [DRA_TAINT])
    _, create = _record(commands, {"az": SOURCES["aks"]}, tmp_path)
    assert create[:4] == ["az", "aks", "nodepool", "add"] and _after(create, "--name") == ["h100dra"]
    assert _after(create, "--node-vm-size") == ["Standard_ND96isr_H100_v5"]
    assert _after(create, "--zones") == ["1", "2"]
    assert _after(create, "--node-count") == ["2"]
    assert _after(create, "--gpu-driver") == ["None"]
    assert _after(create, "--min-count") == ["2"] and _after(create, "--max-count") == ["4"]
    assert set(_after(create, "--labels")) == {
        "team.example.com/owner=ml",
        "nvidia.com/dra-kubelet-plugin=true",
        "gpu-scheduling.lab.example.com/mode=dra",
    }
    assert _after(create, "--node-taints") == [
        "team.example.com/gpu=true:NoExecute,gpu-scheduling.lab.example.com/mode=dra:NoSchedule"
    ]


@pytest.mark.parametrize("name", ["h100-dra", "gpudrapool123", "H100dra", "1h100"])
def test_aks_refuses_a_name_it_would_reject(name: str) -> None:
    with pytest.raises(ValueError, match="AKS Linux agent pool name"):
        node_group_create("aks", name, "h100", 2, None, DRA_LABELS, [DRA_TAINT])
    with pytest.raises(ValueError, match="AKS Linux agent pool name"):
        node_group_delete("aks", name)


def test_gke_and_eks_refuse_names_they_would_reject() -> None:
    with pytest.raises(ValueError, match="GKE node pool name"):
        node_group_create("gke", "H100_dra", "h100", 2, None, DRA_LABELS, [])
    with pytest.raises(ValueError, match="EKS node group name"):
        node_group_resize("eks", "-h100", -1)
    # what each accepts
    assert (
        node_group_delete("gke", "h100-dra")
        and node_group_delete("eks", "h100_dra")
        and node_group_delete("aks", "h100dra")
    )


@needs_jq
@pytest.mark.parametrize(
    ("delta", "scaling"),
    [
        (-2, "minSize=2,maxSize=4,desiredSize=2"),
        (-3, "minSize=1,maxSize=3,desiredSize=1"),
        (2, "minSize=2,maxSize=8,desiredSize=6"),
    ],
)
def test_eks_resize_moves_the_size_and_its_limits(delta: int, scaling: str, tmp_path: Path) -> None:
    _, update, wait = _record(node_group_resize("eks", "h100", delta), {"aws": SOURCES["eks"]}, tmp_path)
    assert update[:3] == ["aws", "eks", "update-nodegroup-config"]
    assert _after(update, "--scaling-config") == [scaling]
    assert wait[:3] == ["aws", "eks", "describe-update"] and _after(wait, "--update-id") == ["u-1"]


@needs_jq
def test_gke_resize_sets_the_per_zone_size_after_the_autoscaling_limits(tmp_path: Path) -> None:
    # 4 registered nodes over 2 zones, 2 given up: 1 per zone; the total maximum 8 - 2
    state = {"gcloud": SOURCES["gke"], "nodes@gke_lab-project_europe-west4_prod": {"items": [{}, {}, {}, {}]}}
    calls = _record(node_group_resize("gke", "h100", -2), state, tmp_path)
    update, resize = calls[-2], calls[-1]
    assert update[:5] == ["gcloud", "container", "clusters", "update", "prod"]
    assert _after(update, "--node-pool") == ["h100"] and "--enable-autoscaling" in update
    assert _after(update, "--total-max-nodes") == ["6"] and _after(update, "--total-min-nodes") == ["1"]
    assert resize[:4] == ["gcloud", "container", "clusters", "resize"]
    assert _after(resize, "--node-pool") == ["h100"] and _after(resize, "--num-nodes") == ["1"]


@needs_jq
def test_gke_resize_counts_the_nodes_of_the_cluster_it_resizes(tmp_path: Path) -> None:
    # issue 39: the current context is a 16-node staging cluster; the resized pool has 4 nodes in
    # the cluster the gcloud commands name, whose kubectl context is gcloud's `gke_<project>_<location>_<cluster>`
    state = {
        "gcloud": SOURCES["gke"],
        "nodes": {"items": [{}] * 16},
        "nodes@gke_lab-project_europe-west4_prod": {"items": [{}] * 4},
    }
    calls = _record(node_group_resize("gke", "h100", -2), state, tmp_path)
    [count] = [c for c in calls if c[0] == "kubectl"]
    assert "--context=gke_lab-project_europe-west4_prod" in count
    assert _after(calls[-1], "--num-nodes") == ["1"]
    assert all("--project=lab-project" in c for c in calls if c[0] == "gcloud")


@needs_jq
def test_gke_resize_refuses_a_size_that_does_not_split_over_the_zones(tmp_path: Path) -> None:
    state = {"gcloud": SOURCES["gke"], "nodes@gke_lab-project_europe-west4_prod": {"items": [{}, {}, {}, {}]}}
    with pytest.raises(subprocess.CalledProcessError) as failed:
        _record(node_group_resize("gke", "h100", -1), state, tmp_path)
    assert b"3 nodes do not split evenly" in failed.value.stderr


@needs_jq
def test_aks_resize_scales_a_fixed_pool_and_moves_an_autoscaled_pools_limits(tmp_path: Path) -> None:
    *_, scale = _record(node_group_resize("aks", "h100", -2), {"az": SOURCES["aks"]}, tmp_path)
    assert scale[:4] == ["az", "aks", "nodepool", "scale"] and _after(scale, "--node-count") == ["2"]
    autoscaled = {**SOURCES["aks"], "enableAutoScaling": True, "minCount": 3, "maxCount": 6}
    (tmp_path / "state.json.log").unlink()
    *_, update = _record(node_group_resize("aks", "h100", -2), {"az": autoscaled}, tmp_path)
    assert update[:4] == ["az", "aks", "nodepool", "update"] and "--update-cluster-autoscaler" in update
    assert _after(update, "--min-count") == ["2"] and _after(update, "--max-count") == ["4"]


@needs_jq
@pytest.mark.parametrize("cloud", ["gke", "eks", "aks"])
def test_the_copy_is_deleted_and_waited_for(cloud: str, tmp_path: Path) -> None:
    calls = _record(node_group_delete(cloud, "h100dra"), {}, tmp_path)
    verbs = [c[:4] for c in calls]
    assert (
        verbs
        == {
            "gke": [["gcloud", "container", "node-pools", "delete"]],
            "eks": [
                ["aws", "eks", "delete-nodegroup", "--cluster-name"],
                ["aws", "eks", "wait", "nodegroup-deleted"],
            ],
            "aks": [["az", "aks", "nodepool", "delete"]],
        }[cloud]
    )
    assert all("h100dra" in c for c in calls)
    if cloud == "gke":
        assert "--quiet" in calls[0]


@needs_jq
@pytest.mark.parametrize(
    ("commands", "state", "error"),
    [
        (node_group_resize("eks", "h100", -5), {"aws": SOURCES["eks"]}, b"has 4 nodes, it cannot lose 5"),
        (node_group_resize("aks", "h100", -5), {"az": SOURCES["aks"]}, b"has 4 nodes, it cannot lose 5"),
    ],
)
def test_a_group_cannot_give_up_more_nodes_than_it_has(
    commands: tuple[str, ...], state: dict[str, Any], error: bytes, tmp_path: Path
) -> None:
    with pytest.raises(subprocess.CalledProcessError) as failed:
        _record(commands, state, tmp_path)
    assert error in failed.value.stderr
    calls = [json.loads(line) for line in (tmp_path / "state.json.log").read_text().splitlines()]
    assert not [c for c in calls if {"update-nodegroup-config", "scale", "update", "patch"} & set(c)]


def test_a_copy_needs_a_node_and_room_for_it() -> None:
    with pytest.raises(ValueError, match="at least one node"):
        node_group_create("eks", "h100-dra", "h100", 0, None, DRA_LABELS, [])
    with pytest.raises(ValueError, match="max_nodes 1 is below nodes 2"):
        node_group_create("eks", "h100-dra", "h100", 2, 1, DRA_LABELS, [])
