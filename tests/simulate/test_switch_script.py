"""The allocator-switch Jobs are replayed from their rendered script: each field of its data, made wrong, is
caught, or covered by another condition of the same Job and shown to change no replay."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.labels import SWITCH_LABEL
from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.plan.waves import Plan, WaveState, plan_platform
from gpuplatform.render import allocator_switch, tree
from gpuplatform.render.meta import Obj
from gpuplatform.render.tree import Tree
from gpuplatform.simulate.run import PlatformReport, prepare
from tests.simulate.helpers import sim_spec, violations
from tests.specs import write_spec

Edit = tuple[str, str]
"""A text of the Job's script and the wrong text that replaces it."""

#: One field of a switch Job's data made wrong: the Job (`release` or `enable`) and its edits.
MUTATIONS: dict[str, tuple[str, tuple[Edit, ...]]] = {
    "release-names-another-pool": ("release", (("NODES='gpu-01 gpu-03'", "NODES='gpu-01 gpu-02'"),)),
    "release-another-label": (
        "release",
        (('"$node" nvidia.com/dra-kubelet-plugin-;', '"$node" nvidia.com/dra-plugin-;'),),
    ),
    "enable-another-mode-label": (
        "enable",
        (("MODE_LABEL='gpu-scheduling.lab.example.com/mode'", "MODE_LABEL='lab.example.com/mode'"),),
    ),
    "enable-another-mode": ("enable", (('"$MODE_LABEL=dra,', '"$MODE_LABEL=legacy,'),)),
    "enable-another-label": (
        "enable",
        (('"$node" nvidia.com/dra-kubelet-plugin=true;', '"$node" nvidia.com/dra-plugin=true;'),),
    ),
    "enable-another-value": ("enable", (("dra-kubelet-plugin=true;", "dra-kubelet-plugin=enabled;"),)),
    "enable-another-request": (
        "enable",
        (('keys[] | select(startswith("nvidia.com/"))', 'keys[] | select(startswith("example.com/"))'),),
    ),
    "enable-does-not-wait": (
        "enable",
        (
            ("until out=$(check 2>&1); do", "until true; do"),
            ('if check_node "$node" >/dev/null; then', "if true; then"),
        ),
    ),
}

#: Waits the model catches only because the engine goes on while pods still terminate (the Job
#: checks the cluster after each step of the controllers and goes on as soon as its check holds;
#: the next sync units apply before the pods it did not wait for are gone: `World.settle_unit`).
MUTATIONS |= {
    "release-another-driver": (
        "release",
        (('.spec.driver == "gpu.nvidia.com"', '.spec.driver == "gpu.example.com"'),),
    ),
    "release-skips-the-slices": ("release", (('ResourceSlices"; rc=1;', 'ResourceSlices";'),)),
    "release-does-not-wait": ("release", (("until out=$(check 2>&1); do", "until true; do"),)),
    "enable-another-resource": (
        "enable",
        (('(.key | startswith("nvidia.com/"))', '(.key | startswith("example.com/"))'),),
    ),
}

#: Conditions another condition of the same Job covers, in the order the controllers act
#: (`simulate/kubelet.py`): the kubelet wipes a DRA plugin's ResourceSlices only after the plugin
#: has unregistered, so `release` waiting for the slices has waited for the plugin's pod; the device
#: plugin's devices leave allocatable only once its pod has gone, so `enable` waiting for
#: allocatable has waited for the pod. Wrong alone, they change no replay.
COVERED: dict[str, tuple[str, tuple[Edit, ...]]] = {
    "release-another-namespace": (
        "release",
        (("DRA_NAMESPACE='nvidia-dra-driver-gpu'", "DRA_NAMESPACE='default'"),),
    ),
    "release-another-daemonset": ("release", (('endswith("-kubelet-plugin")', 'endswith("-controller")'),)),
    "release-skips-the-plugin-pods": (
        "release",
        (('then echo "node $node still runs the DRA kubelet plugin"; rc=1;', "then :;"),),
    ),
    "enable-another-device-plugin-label": (
        "enable",
        (('["app"] == "nvidia-device-plugin-daemonset"', '["app"] == "other"'),),
    ),
}


def _spec() -> dict[str, Any]:
    """The simulator's spec with a third pool, moved in the last wave: going back from it, `release`
    takes that pool off the DRA driver, which stays installed."""
    doc = sim_spec()
    doc["spec"]["nodePools"].append(
        {"name": "more", "nodes": ["gpu-03"], "product": "H100-80GB", "migratesIn": "cutover"}
    )
    return doc


def _render(tmp_path: Path, action: str, edits: tuple[Edit, ...]) -> tuple[LoadedPlatform, Tree, list[str]]:
    """`_spec()` rendered with `edits` made to the script of its switch Jobs `action`; the names of
    the Jobs changed."""
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", _spec()))
    changed: list[str] = []

    def render(plan: Plan, state: WaveState) -> list[Obj]:
        jobs = allocator_switch.render_switch_jobs(plan, state)
        for job in jobs:
            command = job["spec"]["template"]["spec"]["containers"][0]["command"]
            if job["metadata"]["labels"][SWITCH_LABEL] != action:
                continue
            if all(old in command[-1] for old, _ in edits):
                for old, new in edits:
                    command[-1] = command[-1].replace(old, new)
                changed.append(job["metadata"]["name"])
        return jobs

    layers = tuple(
        replace(layer, render=render) if layer.render is allocator_switch.render_switch_jobs else layer
        for layer in tree.LAYERS
    )
    return loaded, tree.render_tree(plan_platform(loaded.platform), layers), changed


def _simulate(tmp_path: Path, action: str = "", edits: tuple[Edit, ...] = ()) -> PlatformReport:
    """Replay every transition of `_render`'s tree under both engines."""
    loaded, rendered, _ = _render(tmp_path, action, edits)
    return prepare(loaded, None, None, ("argocd", "flux"), tree=rendered).replay()


def test_the_switch_jobs_as_rendered_pass(tmp_path: Path) -> None:
    report = _simulate(tmp_path)
    assert report.results and not violations(report)


@pytest.mark.parametrize("mutation", [*MUTATIONS, *COVERED])
def test_each_mutation_edits_a_rendered_switch_job(tmp_path: Path, mutation: str) -> None:
    action, edits = (MUTATIONS | COVERED)[mutation]
    assert _render(tmp_path, action, edits)[2]


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_a_switch_job_with_wrong_data_fails_simulate(tmp_path: Path, mutation: str) -> None:
    # GIVEN the switch Jobs rendered with one field of their script's data wrong
    action, edits = MUTATIONS[mutation]
    # WHEN every transition is replayed
    report = _simulate(tmp_path, action, edits)
    # THEN some replay breaks an invariant
    assert violations(report), mutation


@pytest.mark.parametrize("mutation", COVERED)
def test_a_covered_condition_made_wrong_changes_no_replay(tmp_path: Path, mutation: str) -> None:
    # GIVEN the switch Jobs with a condition wrong that another condition of the Job covers
    action, edits = COVERED[mutation]
    # WHEN every transition is replayed
    report = _simulate(tmp_path, action, edits)
    # THEN the covering condition still holds the Job until the GPUs have one allocator
    assert report.results and not violations(report), mutation
