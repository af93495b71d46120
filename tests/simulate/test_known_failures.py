"""The seven transition failures of issue 11, each brought back into the renderer (or the spec) and found.

The team's Helm values are merged under the platform's (mappings merge, lists gain our items), so
a values override cannot drop what the migration sets; where one can still break a transition the
test uses it, otherwise it puts the old renderer back with monkeypatch, as the GP102 tests do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.labels import DRA_PLUGIN_LABEL
from gpuplatform.load.stacks import load_stack
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render import (
    allocator_switch,
    delivery,
    flux_entry,
    gate_jobs,
    helm_values,
    nodes,
    operators,
    tree,
)
from gpuplatform.render.tree import render_tree
from gpuplatform.simulate import run
from gpuplatform.simulate.devices import DeviceMatcher
from gpuplatform.simulate.driver_manager import upgrade_driver
from gpuplatform.simulate.replay import Replayer, declared_modes
from gpuplatform.simulate.world import ViolationFound
from tests.policy.helpers import rule_findings
from tests.simulate.helpers import sim_spec, simulate, violations, without_application_finalizer
from tests.specs import write_spec

ENGINES = ("argocd", "flux")


def _invariants(report: Any, late: bool | None = False) -> set[tuple[str, str, str, str]]:
    return {(e, a, b, v.invariant) for e, a, b, v in violations(report, late=late)}


def _both_labels_in_the_node_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """The old renderer: the DRA node's object carries the kubelet-plugin label next to the mode."""
    original = nodes.node_labels

    def both(platform: Any, pool: Any, mode: Any, *args: Any) -> dict[str, str]:
        labels = original(platform, pool, mode, *args)
        if mode == "dra":
            labels[DRA_PLUGIN_LABEL] = "true"
        return labels

    monkeypatch.setattr(nodes, "node_labels", both)


def _switch_jobs(monkeypatch: pytest.MonkeyPatch, keep: Callable[[dict[str, Any]], bool]) -> None:
    """The tree `simulate` replays renders only the switch Jobs `keep` accepts (the layer table
    holds the renderer, and `render_tree` binds the table as its default: the layers are passed)."""
    original = allocator_switch.render_switch_jobs
    layers = tuple(
        replace(layer, render=lambda plan, state: [j for j in original(plan, state) if keep(j)])
        if layer.render is original
        else layer
        for layer in tree.LAYERS
    )
    assert len({layer.render for layer in layers} - {layer.render for layer in tree.LAYERS}) == 1
    monkeypatch.setattr(run, "render_tree", lambda plan: tree.render_tree(plan, layers))


def test_1_the_allocator_switch_in_one_patch_gives_a_gpu_two_allocators(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the old renderer: both labels in the Node object, no switch Jobs
    _both_labels_in_the_node_object(monkeypatch)
    with monkeypatch.context() as without_jobs:
        _switch_jobs(without_jobs, lambda job: False)
        # WHEN the pilot transition is replayed
        report = simulate(tmp_path, sim_spec(), "base", "pilot")
    # THEN the DRA kubelet plugin publishes the GPUs before the device plugin has let go of them
    # (kubelet devicemanager: a plugin's devices leave allocatable only when it disconnects)
    assert {(e, v) for e, _, _, v in _invariants(report)} == {(e, "one-allocator") for e in ENGINES}
    # AND check refuses a Node object that carries the kubelet plugin's label
    (loaded,) = load_stack(tmp_path / "lab.yaml")
    assert "GP244" in {p.code for p in rule_findings(loaded)}


def test_1_the_two_phase_switch_holds(tmp_path: Path) -> None:
    assert not violations(simulate(tmp_path, sim_spec(), "base", "pilot"))


def _replayer(tmp_path: Path, doc: dict[str, Any], engine: str) -> Replayer:
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", doc))
    plan = plan_platform(loaded.platform)
    rendered = render_tree(plan)
    return Replayer(plan, rendered, engine, DeviceMatcher(loaded.platform), declared_modes(plan, rendered))


@pytest.mark.parametrize("engine", ENGINES)
def test_2_an_engine_that_owns_the_eviction_label_brings_the_kubelet_plugin_back_during_a_driver_upgrade(
    tmp_path: Path, engine: str
) -> None:
    # GIVEN the pilot pool on DRA, and the engine holding nvidia.com/dra-kubelet-plugin=true
    replayer = _replayer(tmp_path, sim_spec(), engine)
    replayer.bootstrap()
    replayer.transition("base", "pilot")
    world = replayer.world
    [dra] = [g for g in world.cluster.groups if g.pool == "new"]
    dra.applied[DRA_PLUGIN_LABEL] = "true"
    # WHEN the driver manager pauses the label (k8s-driver-manager evictAllGPUOperatorComponents)
    # and the engine corrects drift before the driver unloads (Argo selfHeal, Flux reconcile)
    with pytest.raises(ViolationFound) as found:
        upgrade_driver(world, dra, replayer.engine.correct_drift)
    # THEN the kubelet plugin is back and holds the GPUs the driver manager must unload
    assert found.value.violation.invariant == "driver-upgrade"
    assert "DRA kubelet plugin" in found.value.violation.message


@pytest.mark.parametrize("engine", ENGINES)
def test_2_a_switch_owned_label_stays_paused(tmp_path: Path, engine: str) -> None:
    replayer = _replayer(tmp_path, sim_spec(), engine)
    replayer.bootstrap()
    replayer.transition("base", "pilot")
    [dra] = [g for g in replayer.world.cluster.groups if g.pool == "new"]
    upgrade_driver(replayer.world, dra, replayer.engine.correct_drift)
    assert dra.labels[DRA_PLUGIN_LABEL] == "true" and dra.kubelet_plugin == "running"


def test_3_the_charts_class_bridges_before_the_bridge_wave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the chart's class unpatched (chart 0.4.1 templates/deviceclass-gpu.yaml on resource.k8s.io/v1)
    monkeypatch.setattr(operators, "chart_class_patches", lambda plan, state: [])
    # WHEN the last legacy pool moves and its unmigrated pod (tolerating every taint) is rescheduled
    report = simulate(tmp_path, sim_spec(), "claims", "cutover")
    # THEN the scheduler places it on a DRA node through gpu.nvidia.com, though no wave enables a bridge
    found = violations(report, late=False)
    assert {(e, v.invariant) for e, _, _, v in found} == {(e, "early-bridge") for e in ENGINES}
    assert "DeviceClass/gpu.nvidia.com" in found[0][3].objects
    # AND check/synth refuse the rendering
    (loaded,) = load_stack(tmp_path / "lab.yaml")
    assert "GP241" in {p.code for p in rule_findings(loaded)}


def test_3_the_patched_class_keeps_unmigrated_pods_off_dra_nodes(tmp_path: Path) -> None:
    assert not violations(simulate(tmp_path, sim_spec(), "claims", "cutover"))


def test_4_operands_that_do_not_tolerate_the_dra_taint_are_gone_after_a_driver_upgrade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the old GPU Operator values: no daemonsets.tolerations, no NFD worker tolerations
    original = helm_values.gpu_operator_values

    def untolerant(plan: Any, state: Any) -> dict[str, Any]:
        values = original(plan, state)
        values.pop("daemonsets")
        values.pop("node-feature-discovery")
        return values

    monkeypatch.setattr(operators, "gpu_operator_values", untolerant)
    report = simulate(tmp_path, sim_spec(), "base", "pilot")
    # THEN the driver manager evicts them and the DaemonSet controller cannot place them again
    found = violations(report, late=False)
    assert {(e, v.invariant) for e, _, _, v in found} == {(e, "operands") for e in ENGINES}
    assert "after a driver upgrade" in found[0][3].message and "unschedulable" in found[0][3].message
    (loaded,) = load_stack(tmp_path / "lab.yaml")
    assert "GP242" in {p.code for p in rule_findings(loaded)}


def test_5_without_the_release_job_flux_gives_the_device_plugin_back_while_slices_remain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the old rollback order: the driver pruned in 00-operators, labels back in 10-nodes, no release
    _switch_jobs(monkeypatch, lambda job: "release" not in job["metadata"]["name"])
    report = simulate(tmp_path, sim_spec(), "pilot", "base", engines=("flux",))
    # THEN the Namespace prune kills the kubelet plugin, its ResourceSlices outlive it (the kubelet
    # wipes them after a delay no Kustomization waits for) and the device plugin comes back over them
    [(_, source, target, violation)] = violations(report, late=False)
    assert (source, target, violation.invariant) == ("pilot", "base", "one-allocator")
    assert "stale" in violation.message


def test_5_a_child_application_without_the_resources_finalizer_orphans_the_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_application_finalizer(monkeypatch)
    report = simulate(tmp_path, sim_spec(), "pilot", "base", engines=("argocd",))
    [(_, _, _, violation)] = violations(report, late=False)
    assert violation.invariant == "leftovers" and "orphaned" in violation.message


def test_6_the_validator_turned_off_leaves_operands_waiting_after_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the old lifecycle: the validator off on DRA nodes in every wave, the cutover included
    monkeypatch.setattr(nodes, "validator_workaround", lambda platform, pool, enabled: True)
    report = simulate(tmp_path, sim_spec(), "claims", "cutover")
    # THEN after a restart nothing writes toolkit-ready (only the validator does) and GFD waits
    found = violations(report, late=False)
    assert {(e, v.invariant) for e, _, _, v in found} == {(e, "operands") for e in ENGINES}
    assert "restart" in found[0][3].message and "gpu-feature-discovery (waiting)" in found[0][3].message


def test_6_a_pool_that_turns_the_validator_off_is_proven_with_the_revalidate_step(tmp_path: Path) -> None:
    doc = sim_spec()
    doc["spec"]["nodePools"][1]["operatorValidator"] = False
    assert not violations(simulate(tmp_path, doc))
    (loaded,) = load_stack(tmp_path / "lab.yaml")
    assert "GP245" in {p.code for p in rule_findings(loaded)}


def _claims_on_the_pool_that_goes_back() -> dict[str, Any]:
    """Claims that only the A100 pool can serve, so the rollback from the cutover must release them."""
    doc = sim_spec()
    doc["spec"]["tiers"] = [{"name": "full", "productName": "A100"}]
    return doc


def test_7_a_late_operator_deadlocks_argo_cd_without_sync_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the old gates, which fail at once instead of retrying (no podFailurePolicy), and no retry
    monkeypatch.setattr(gate_jobs, "pod_failure_policy", lambda container: {"rules": []})
    original = operators.argocd_application

    def default_retry(*args: Any, **kwargs: Any) -> dict[str, Any]:
        app = original(*args, **kwargs)
        app["spec"]["syncPolicy"].pop("retry")
        return app

    entry_policy = delivery.entry_sync_policy

    def entry_default_retry(automated: dict[str, Any] | None) -> dict[str, Any]:
        policy = entry_policy(automated)
        policy.pop("retry", None)
        return policy

    monkeypatch.setattr(operators, "argocd_application", default_retry)
    monkeypatch.setattr(delivery, "entry_sync_policy", entry_default_retry)
    report = simulate(
        tmp_path, _claims_on_the_pool_that_goes_back(), "cutover", "claims", engines=("argocd",)
    )
    # THEN the runbook's order works, and with the operator late the five default retries run out
    assert not violations(report, late=False)
    [(_, _, _, violation)] = violations(report, late=True)
    assert violation.invariant == "sync-completes" and "retries ran out" in violation.message


def test_7_unlimited_retry_finishes_the_sync_once_the_late_operator_released_the_claims(
    tmp_path: Path,
) -> None:
    report = simulate(
        tmp_path, _claims_on_the_pool_that_goes_back(), "cutover", "claims", engines=("argocd",)
    )
    assert [r.late for r in report.results] == [False, True]
    assert not violations(report)


def test_a_rendered_flux_chain_against_the_step_sequence_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a renderer that chains the enable Job before the node labels
    original = flux_entry.layer_kustomizations

    def swapped(plan: Any, state: Any, folders: list[str]) -> list[tuple[str, str]]:
        order = original(plan, state, folders)
        i = [f for _, f in order].index("10-nodes")
        order[i], order[i + 1] = order[i + 1], order[i]
        return order

    monkeypatch.setattr(flux_entry, "layer_kustomizations", swapped)
    report = simulate(tmp_path, sim_spec(), "base", "pilot", engines=("flux",))
    assert {v for *_, v in _invariants(report, late=None)} == {"sync-order"}
