"""The allocator-switch Jobs: their scripts run under dash against a fake kubectl, their identity and order."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.allocator_switch import NOT_YET, UNCHANGED, render_switch_jobs, switch_identity
from gpuplatform.render.switch_script import SwitchScript, parse_switch_job
from tests.admission.admission_env import admit

FAKE = """#!{python}
import json, sys
state = json.load(open({state!r}))
args = sys.argv[1:]
def selected(node, selector):
    for term in filter(None, selector.split(",")):
        labels = node["metadata"].get("labels", {{}})
        if term.startswith("!"):
            if term[1:] in labels: return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k) != v: return False
        elif term not in labels: return False
    return True
def out(items, fmt):
    if fmt.startswith("jsonpath"):
        print(" ".join(i["metadata"]["name"] for i in items)); return
    print(json.dumps({{"items": items}}))
if args[0] == "label":
    node = next(n for n in state["nodes"] if n["metadata"]["name"] == args[2])
    change = args[3]
    labels = node["metadata"].setdefault("labels", {{}})
    if change.endswith("-"): labels.pop(change[:-1])
    else:
        k, v = change.split("=", 1)
        if k in labels: sys.exit(1)
        labels[k] = v
    state.setdefault("calls", []).append(" ".join(args))
    json.dump(state, open({state!r}, "w")); sys.exit(0)
fmt = args[args.index("-o") + 1] if "-o" in args else "json"
kind = args[1]
if kind == "node":
    found = [n for n in state["nodes"] if n["metadata"]["name"] == args[2]]
    if not found: sys.exit(1)
    print(json.dumps(found[0])); sys.exit(0)
if kind == "nodes":
    selector = args[args.index("-l") + 1] if "-l" in args else ""
    out([n for n in state["nodes"] if selected(n, selector)], fmt); sys.exit(0)
if kind == "pods":
    pods = state.get("pods", [])
    if "--field-selector" in args:
        node = args[args.index("--field-selector") + 1].split("=", 1)[1]
        pods = [p for p in pods if p["spec"]["nodeName"] == node]
    if "-n" in args:
        pods = [p for p in pods if p["metadata"]["namespace"] == args[args.index("-n") + 1]]
    out(pods, fmt); sys.exit(0)
out(state.get(kind, []), fmt)
"""


def _kubectl(tmp_path: Path, state: dict[str, Any]) -> tuple[dict[str, str], Path]:
    data = tmp_path / "state.json"
    data.write_text(json.dumps(state))
    script = tmp_path / "kubectl"
    script.write_text(FAKE.format(python=sys.executable, state=str(data)))
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}, data


def _run(reference: Platform, action: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """One attempt of the pilot-pool switch Job `action` against the fake kubectl in `env`."""
    script = _script(reference, "pilot-pool", action)
    return subprocess.run(["dash", "-c", script], env=env, capture_output=True, text=True, timeout=60)


def _job(reference: Platform, wave: str, action: str) -> dict[str, Any]:
    plan = plan_platform(reference)
    [job] = [
        j
        for j in render_switch_jobs(plan, plan.wave(wave))
        if j["metadata"]["labels"]["gpuplatform.dev/switch"] == action
    ]
    return job


def _script(reference: Platform, wave: str, action: str) -> str:
    script = str(_job(reference, wave, action)["spec"]["template"]["spec"]["containers"][0]["command"][2])
    return re.sub(r"\+ \d+ \)\)", "+ 0 ))", script)  # one attempt, no waiting


def _node(
    name: str, labels: dict[str, str], gpus: str | None = None, resource: str = "nvidia.com/gpu"
) -> dict[str, Any]:
    allocatable = {resource: gpus} if gpus is not None else {}
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": allocatable}}


MODE = "gpu-scheduling.platform.example.com/mode"


@pytest.mark.parametrize(
    ("gpus", "pods", "switched"),
    [
        (None, [], True),
        ("0", [], True),
        ("8", [], False),
        (
            None,
            [
                {
                    "metadata": {"name": "train", "namespace": "t"},
                    "spec": {
                        "nodeName": "gpu-dra-01",
                        "containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                    },
                    "status": {"phase": "Running"},
                }
            ],
            False,
        ),
        (
            None,
            [
                {
                    "metadata": {
                        "name": "dp",
                        "namespace": "gpu-operator",
                        "labels": {"app": "nvidia-device-plugin-daemonset"},
                    },
                    "spec": {"nodeName": "gpu-dra-01", "containers": [{}]},
                    "status": {"phase": "Running"},
                }
            ],
            False,
        ),
    ],
    ids=["no-allocatable", "zero", "still-advertised", "pod-holds-a-gpu", "device-plugin-pod"],
)
@pytest.mark.parametrize("resource", ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared"])
def test_enable_labels_a_dra_node_only_once_the_device_plugin_is_gone(
    reference: Platform,
    tmp_path: Path,
    gpus: str | None,
    pods: list[dict[str, Any]],
    switched: bool,
    resource: str,
) -> None:
    # a MIG slice or a shared resource advertised or held blocks the switch as a whole GPU does
    for pod in pods:
        for container in pod["spec"]["containers"]:
            limits = container.get("resources", {}).get("limits", {})
            if "nvidia.com/gpu" in limits:
                container["resources"]["limits"] = {resource: limits["nvidia.com/gpu"]}
    node = _node("gpu-dra-01", {MODE: "dra"}, gpus, resource)
    env, data = _kubectl(tmp_path, {"nodes": [node], "pods": pods})
    done = _run(reference, "enable", env)
    labels = json.loads(data.read_text())["nodes"][0]["metadata"]["labels"]
    assert ("nvidia.com/dra-kubelet-plugin" in labels) is switched
    assert done.returncode == (0 if switched else NOT_YET), done.stderr


def test_enable_waits_for_an_init_container_holding_a_mig_slice(reference: Platform, tmp_path: Path) -> None:
    pod = {
        "metadata": {"name": "prep", "namespace": "t"},
        "spec": {
            "nodeName": "gpu-dra-01",
            "initContainers": [{"resources": {"requests": {"nvidia.com/mig-1g.10gb": "1"}}}],
            "containers": [{}],
        },
        "status": {"phase": "Running"},
    }
    env, data = _kubectl(tmp_path, {"nodes": [_node("gpu-dra-01", {MODE: "dra"})], "pods": [pod]})
    done = _run(reference, "enable", env)
    assert (
        "nvidia.com/dra-kubelet-plugin" not in json.loads(data.read_text())["nodes"][0]["metadata"]["labels"]
    )
    assert done.returncode == NOT_YET, done.stderr


def test_enable_never_overwrites_a_paused_label(reference: Platform, tmp_path: Path) -> None:
    paused = {MODE: "dra", "nvidia.com/dra-kubelet-plugin": "paused-for-driver-upgrade"}
    env, data = _kubectl(tmp_path, {"nodes": [_node("gpu-dra-01", paused)]})
    done = _run(reference, "enable", env)
    assert done.returncode == 0 and "calls" not in json.loads(data.read_text())


@pytest.mark.parametrize(
    ("plugin", "released"), [(False, True), (True, False)], ids=["plugin-gone", "plugin-still-runs"]
)
def test_release_removes_the_label_and_waits_for_the_plugin_to_go(
    reference: Platform, tmp_path: Path, plugin: bool, released: bool
) -> None:
    pods = (
        [
            {
                "metadata": {
                    "name": "kp",
                    "namespace": "nvidia-dra-driver-gpu",
                    "ownerReferences": [
                        {"kind": "DaemonSet", "name": "dra-driver-nvidia-gpu-kubelet-plugin"}
                    ],
                },
                "spec": {"nodeName": "gpu-legacy-01"},
                "status": {"phase": "Running"},
            }
        ]
        if plugin
        else []
    )
    state = {
        "nodes": [_node("gpu-legacy-01", {MODE: "legacy", "nvidia.com/dra-kubelet-plugin": "true"})],
        "pods": pods,
    }
    env, data = _kubectl(tmp_path, state)
    done = _run(reference, "release", env)
    read = parse_switch_job(_job(reference, "pilot-pool", "release"), "release")
    assert json.loads(data.read_text())["calls"] == [f"label node {n} {read.label}-" for n in read.nodes]
    assert done.returncode == (0 if released else NOT_YET), done.stderr


def test_the_parser_reads_the_data_the_renderer_embeds(reference: Platform) -> None:
    assert parse_switch_job(_job(reference, "pilot-pool", "release"), "release") == SwitchScript(
        action="release",
        nodes=("gpu-legacy-01",),
        namespace="nvidia-dra-driver-gpu",
        selects=(),
        label="nvidia.com/dra-kubelet-plugin",
        value=None,
        waits=True,
        plugin_suffix="-kubelet-plugin",
        slice_driver="gpu.nvidia.com",
        allocatable=None,
        pod_label=None,
        requested=None,
    )
    assert parse_switch_job(_job(reference, "pilot-pool", "enable"), "enable") == SwitchScript(
        action="enable",
        nodes=(),
        namespace=None,
        selects=((MODE, "dra"), ("nvidia.com/dra-kubelet-plugin", None)),
        label="nvidia.com/dra-kubelet-plugin",
        value="true",
        waits=True,
        plugin_suffix=None,
        slice_driver=None,
        allocatable="nvidia.com/",
        pod_label=("app", "nvidia-device-plugin-daemonset"),
        requested="nvidia.com/",
    )


def test_the_enable_script_sets_what_the_parser_reads(reference: Platform, tmp_path: Path) -> None:
    # GIVEN a safe DRA node, a node of another mode, and what the parser reads from the enable Job
    read = parse_switch_job(_job(reference, "pilot-pool", "enable"), "enable")
    nodes = [_node("gpu-dra-01", {MODE: "dra"}), _node("gpu-legacy-01", {MODE: "legacy"})]
    env, data = _kubectl(tmp_path, {"nodes": nodes})
    # WHEN the script runs under dash
    assert _run(reference, "enable", env).returncode == 0
    # THEN it labelled the node the parser's selector picks, with the parser's label and value
    picked = [
        n["metadata"]["name"]
        for n in nodes
        if all(
            (k not in n["metadata"]["labels"]) if v is None else n["metadata"]["labels"].get(k) == v
            for k, v in read.selects
        )
    ]
    assert json.loads(data.read_text())["calls"] == [
        f"label node {n} {read.label}={read.value}" for n in picked
    ]


def test_switch_jobs_retry_by_themselves_and_run_as_a_label_only_identity(reference: Platform) -> None:
    plan = plan_platform(reference)
    jobs = render_switch_jobs(plan, plan.wave("pilot-pool"))
    assert {j["metadata"]["labels"]["gpuplatform.dev/switch"] for j in jobs} == {"release", "enable"}
    for job in jobs:
        rules = job["spec"]["podFailurePolicy"]["rules"]
        assert {
            "action": "Ignore",
            "onExitCodes": {"containerName": "switch", "operator": "In", "values": [NOT_YET]},
        } in rules
        assert job["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "Sync"
    identity = {o["kind"]: o for o in switch_identity(plan, "pilot-pool")}
    verbs = {tuple(r["resources"]): r["verbs"] for r in identity["ClusterRole"]["rules"]}
    assert verbs[("nodes",)] == ["get", "list", "patch"] and "delete" not in str(verbs)
    policy = identity["ValidatingAdmissionPolicy"]["spec"]
    assert "gpuplatform-switch" in policy["matchConditions"][0]["expression"]
    assert len(policy["validations"]) == len(UNCHANGED) + 2


def test_no_switch_jobs_before_any_pool_moves_or_driver_exists(reference: Platform) -> None:
    plan = plan_platform(reference)
    baseline = render_switch_jobs(plan, plan.wave("baseline"))
    assert [j["metadata"]["labels"]["gpuplatform.dev/switch"] for j in baseline] == ["release"]
    legacy_only = reference.model_copy(
        update={
            "node_pools": reference.node_pools[:1],
            "waves": reference.waves[:1],
            "active_wave": "baseline",
        }
    )
    plan = plan_platform(legacy_only)
    assert render_switch_jobs(plan, plan.waves[0]) == []


SWITCH_USER = "system:serviceaccount:gpuplatform-gates:gpuplatform-switch"


def _policy(reference: Platform) -> dict[str, Any]:
    plan = plan_platform(reference)
    return next(o for o in switch_identity(plan, "pilot-pool") if o["kind"] == "ValidatingAdmissionPolicy")


@pytest.mark.parametrize(
    ("after", "allowed"),
    [
        ({"labels": {"a": "1", "nvidia.com/dra-kubelet-plugin": "true"}}, True),
        ({"labels": {"a": "1"}}, True),
        ({"labels": {"a": "2", "nvidia.com/dra-kubelet-plugin": "true"}}, False),
        ({"labels": {"nvidia.com/dra-kubelet-plugin": "true"}}, False),
        ({"labels": {"a": "1", "nvidia.com/dra-kubelet-plugin": "false"}}, False),
        ({"labels": {"a": "1"}, "spec": {"unschedulable": True}}, False),
    ],
    ids=["set-label", "remove-label", "other-label-changed", "other-label-removed", "other-value", "cordon"],
)
def test_the_switch_identity_may_change_only_its_label(
    reference: Platform, after: dict[str, Any], allowed: bool
) -> None:
    old = {"metadata": {"name": "n", "labels": {"a": "1"}}, "spec": {}}
    new = {"metadata": {"name": "n", "labels": after["labels"]}, "spec": after.get("spec", {})}
    denied = admit(_policy(reference), new, old=old, user=SWITCH_USER)
    assert (denied == []) is allowed, denied
    assert admit(_policy(reference), new, old=old, user="someone-else") == []
