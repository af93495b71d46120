"""Each invariant and modelled behaviour that no other test would miss: removing it fails one here."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from gpuplatform.charts.model import helm_merge
from gpuplatform.evidence.register import workload_rows
from gpuplatform.labels import DEPLOY_LABEL_PREFIX, DRA_PLUGIN_LABEL
from gpuplatform.load.stacks import load_stack
from gpuplatform.render import helm_values
from gpuplatform.simulate import flux, replay
from gpuplatform.simulate.driver_manager import upgrade_driver
from gpuplatform.simulate.invariants import one_allocator
from gpuplatform.simulate.model import tolerates
from gpuplatform.simulate.replay import Replayer
from gpuplatform.simulate.run import prepare
from gpuplatform.simulate.world import ViolationFound, World
from gpuplatform.snapshot.read import Snapshot
from tests.simulate.helpers import sim_spec, simulate, violations
from tests.simulate.test_known_failures import _replayer
from tests.specs import write_spec


def _on_claims(tmp_path: Path) -> Replayer:
    """The minimal spec walked to `claims`, its workloads running (pool `new` on DRA with the tenant's
    claim), ready for a disturbance."""
    replayer = _replayer(tmp_path, sim_spec(), "flux")
    replayer.bootstrap()
    replayer.transition("base", "pilot")
    replayer.transition("pilot", "claims")
    replayer._add_workloads("claims")
    replayer.world.disturbance = True
    return replayer


def test_a_driver_upgrade_by_hand_without_the_runbooks_drain_strands_the_claims(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN driver upgrades by hand (autoUpgrade off) and the runbook without its drain of claim holders
    monkeypatch.setattr(replay, "maintenance_steps", lambda *args: ((), ()))
    doc = sim_spec()
    doc["spec"]["gpuOperator"]["values"] = {"driver": {"upgradePolicy": {"autoUpgrade": False}}}
    # WHEN the claims wave is reached and a DRA node gets a driver upgrade
    report = simulate(tmp_path, doc, "pilot", "claims", engines=("flux",))
    # THEN the driver manager pauses the kubelet plugin (NODE_LABEL_FOR_GPU_POD_EVICTION) while the
    # tenant's claim is still allocated there
    [(_, _, _, violation)] = violations(report)
    assert violation.invariant == "claim-stranded"
    assert "team-a/one-gpu-user" in violation.message


def test_an_unattended_driver_upgrade_without_the_rendered_drain_strands_the_claims(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN unattended upgrades (autoUpgrade, the chart default) without driver.upgradePolicy.drain:
    # the upgrade controller deletes only nvidia.com/gpu pods (gpu-operator v26.3.1 gpuPodSpecFilter)
    monkeypatch.setattr(helm_values, "UPGRADE_DRAIN", {})
    # WHEN the claims wave is reached and a DRA node gets a driver upgrade nobody attends
    report = simulate(tmp_path, sim_spec(), "pilot", "claims", engines=("flux",))
    # THEN the claim holder is still there when the driver manager pauses the kubelet plugin
    [(_, _, _, violation)] = violations(report)
    assert violation.invariant == "claim-stranded"
    assert "team-a/one-gpu-user" in violation.message
    # AND with the drain the platform renders, the upgrade controller releases it first
    monkeypatch.undo()
    assert not violations(simulate(tmp_path, sim_spec(), "pilot", "claims", engines=("flux",)))


def test_resource_slices_outlive_their_plugin_until_the_kubelet_wipes_them(tmp_path: Path) -> None:
    # kubernetes pkg/kubelet/cm/dra: the driver's slices are wiped only after a delay once it unregisters
    world = _on_claims(tmp_path).world
    [new] = [g for g in world.cluster.groups if g.pool == "new"]
    seen: list[tuple[str, str]] = []

    def watch(w: World) -> None:
        seen.append((new.kubelet_plugin, new.slices))

    world.checks = [watch]
    for w in world.cluster.workloads:
        if w.group == new.id:
            w.moves, w.deleted, w.phase, w.group, w.allocator = True, True, "done", "", ""
    new.set_label(DRA_PLUGIN_LABEL, None, "test")
    world.settle()
    assert ("absent", "stale") in seen
    assert seen[-1] == ("absent", "none")


def test_stale_resource_slices_count_as_the_dra_driver_advertising(tmp_path: Path) -> None:
    # GIVEN a DRA node whose kubelet plugin is gone while its slices are not yet wiped
    world = _on_claims(tmp_path).world
    [new] = [g for g in world.cluster.groups if g.pool == "new"]
    for w in world.cluster.workloads:
        if w.group == new.id:
            w.moves, w.deleted, w.phase, w.group, w.allocator = True, True, "done", "", ""
    new.set_label(DRA_PLUGIN_LABEL, None, "test")
    new.kubelet_plugin, new.slices = "absent", "stale"
    world.checks = [one_allocator]
    # WHEN the device plugin comes back before the kubelet wipes them
    new.set_label(DEPLOY_LABEL_PREFIX + "device-plugin", "true", "test")
    with pytest.raises(ViolationFound) as found:
        world.settle()
    # THEN the scheduler can place pods through both allocators on the same GPUs
    assert found.value.violation.invariant == "one-allocator"
    assert "(stale)" in found.value.violation.message


def _third_allocator_pod(node: str) -> dict[str, Any]:
    """A pod with no GPU request whose container sets NVIDIA_VISIBLE_DEVICES=all (a CUDA base image's default)."""
    container = {"name": "main", "image": "cuda", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}
    return {
        "metadata": {"name": "sneaky", "namespace": "ml"},
        "spec": {"nodeName": node, "containers": [container]},
    }


def test_a_pod_that_reaches_gpus_with_no_allocator_is_a_one_allocator_violation(tmp_path: Path) -> None:
    # GIVEN a snapshot whose only GPU workload reaches the GPUs of gpu-01 through its environment
    # (nvidia-container-toolkit: `all` exposes every GPU to the container, no allocator asked)
    snapshot = Snapshot(tmp_path, {"pods": [_third_allocator_pod("gpu-01")]})
    (loaded,) = load_stack(write_spec(tmp_path / "lab.yaml", sim_spec()))
    # WHEN simulate replays the migration with that workload mix
    report = prepare(loaded, "base", "pilot", ("flux",), snapshot=snapshot).replay()
    # THEN the pod is a third allocator next to the device plugin
    [(_, _, _, violation)] = violations(report)
    assert violation.invariant == "one-allocator" and "ml/sneaky" in violation.message
    assert "NVIDIA_VISIBLE_DEVICES" in violation.message


def test_the_register_lists_a_pod_that_reaches_gpus_with_no_allocator(tmp_path: Path) -> None:
    operand = _third_allocator_pod("gpu-01")
    operand["metadata"] = {
        "name": "nvidia-dcgm-exporter-x",
        "namespace": "gpu-operator",
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "nvidia-dcgm-exporter", "controller": True}
        ],
    }
    # a tenant's pod is listed whatever its labels and owner's name (issue 39 H3)
    disguised = _third_allocator_pod("gpu-01")
    disguised["metadata"] = {
        "name": "nvidia-tools-x",
        "namespace": "ml",
        "labels": {"app": "nvidia-device-plugin-daemonset"},
        "ownerReferences": operand["metadata"]["ownerReferences"],
    }
    pods = [_third_allocator_pod("gpu-01"), operand, disguised]
    rows = workload_rows(Snapshot(tmp_path, {"pods": pods}))
    assert [(r.namespace, r.name, r.as_dict()["visibleDevicesWithoutAllocator"]) for r in rows] == [
        ("ml", "nvidia-dcgm-exporter", "all"),
        ("ml", "sneaky", "all"),
    ]


def test_spec_workloads_keep_their_node_selector_and_tolerations(tmp_path: Path) -> None:
    # GIVEN a spec workload selecting a label no node carries yet, tolerating a taint of its own
    doc = sim_spec()
    toleration = {"key": "example.com/batch", "operator": "Exists", "effect": "NoSchedule"}
    doc["spec"]["workloads"] = [
        {
            "kind": "Deployment",
            "namespace": "team-a",
            "name": "train",
            "tier": "full",
            "movesIn": "cutover",
            "nodeSelector": {"example.com/rack": "r1"},
            "tolerations": [toleration],
        }
    ]
    replayer = _replayer(tmp_path, doc, "flux")
    # THEN it keeps both, the scheduler leaves it pending, and a declared workload with nowhere to run
    # is a violation
    with pytest.raises(ViolationFound) as found:
        replayer.bootstrap()
    assert found.value.violation.invariant == "workload-disrupted"
    assert "workload team-a/train has nowhere to run" in found.value.violation.message
    world = replayer.world
    world.settled_checks = []
    [train] = [w for w in world.cluster.workloads if w.workload == "train"]
    assert tolerates(train.tolerations, {"key": "example.com/batch", "value": "", "effect": "NoSchedule"})
    assert train.phase == "pending"
    # WHEN a node gets the label, it is placed there (NodeAffinity filter)
    [old] = [g for g in world.cluster.groups if g.pool == "old"]
    old.set_label("example.com/rack", "r1", "test")
    world.settle()
    assert (train.phase, train.group) == ("running", old.id)


def _operator_values(world: World, values: dict[str, Any]) -> None:
    """The installed GPU Operator release with `values` merged over its own."""
    release = world.cluster.releases["gpu-operator"]
    world.cluster.releases["gpu-operator"] = dataclasses.replace(
        release, values=helm_merge(release.values, values)
    )


def test_the_upgrade_controller_deletes_gpu_request_pods_before_the_driver_restarts(tmp_path: Path) -> None:
    # gpu-operator v26.3.1 cmd/gpu-operator/main.go gpuPodSpecFilter, autoUpgrade the chart default
    world = _on_claims(tmp_path).world
    [old] = [g for g in world.cluster.groups if g.pool == "old"]
    upgrade_driver(world, old, lambda w: [])
    assert not [w for w in world.cluster.workloads if w.group == old.id and w.phase == "running"]
    assert any(s.actor == "gpu-operator upgrade controller" for s in world.trace)


def test_without_any_eviction_a_gpu_pod_keeps_the_driver_loaded(tmp_path: Path) -> None:
    # GIVEN autoUpgrade off and the driver manager's ENABLE_GPU_POD_EVICTION off
    world = _on_claims(tmp_path).world
    _operator_values(
        world,
        {
            "driver": {
                "upgradePolicy": {"autoUpgrade": False},
                "manager": {"env": [{"name": "ENABLE_GPU_POD_EVICTION", "value": "false"}]},
            }
        },
    )
    [old] = [g for g in world.cluster.groups if g.pool == "old"]
    # WHEN the driver is upgraded THEN the legacy pods still hold the GPUs the driver must unload
    with pytest.raises(ViolationFound) as found:
        upgrade_driver(world, old, lambda w: [])
    assert found.value.violation.invariant == "driver-upgrade"
    assert "pod gpu-legacy/legacy-old (running)" in found.value.violation.message


@pytest.mark.parametrize(("version", "claim_pod"), [("v0.10.0", "running"), ("v0.12.0", "stuck-terminating")])
def test_each_driver_manager_drains_what_its_source_says(
    tmp_path: Path, version: str, claim_pod: str
) -> None:
    # k8s-driver-manager v0.10.0 gpuPodSpecFilter vs v0.12.0 podUsesGPU (claims too), both after
    # evictAllGPUOperatorComponents paused the kubelet plugin's label
    world = _on_claims(tmp_path).world
    _operator_values(
        world, {"driver": {"upgradePolicy": {"autoUpgrade": False}, "manager": {"version": version}}}
    )
    [new] = [g for g in world.cluster.groups if g.pool == "new"]
    [claim] = [w for w in world.cluster.workloads if w.group == new.id and w.kind == "claim"]
    world.checks = []
    with pytest.raises(ViolationFound):
        upgrade_driver(world, new, lambda w: [])
    assert claim.phase == claim_pod


def test_an_engine_that_prunes_a_node_is_caught(tmp_path: Path) -> None:
    # GIVEN the minimal spec adopted under Flux and a Node object as its wave renders it
    replayer = _replayer(tmp_path, sim_spec(), "flux")
    replayer.bootstrap()
    node = next(o for u in replayer.rendered("base").units for o in u.objects if o["kind"] == "Node")
    key = f"Node//{node['metadata']['name']}"
    # WHEN the Node leaves a Kustomization's inventory: as rendered (`prune: disabled`) it stays
    assert flux._prune(replayer.world, {key: node}, {}) == []
    # THEN without that annotation the prune deletes the Node, which the invariant refuses
    bare = copy.deepcopy(node)
    bare["metadata"].pop("annotations", None)
    with pytest.raises(ViolationFound) as found:
        flux._prune(replayer.world, {key: bare}, {})
    assert found.value.violation.invariant == "never-delete-nodes"


def test_a_workload_the_transition_does_not_move_is_not_evicted(tmp_path: Path) -> None:
    # GIVEN the minimal spec walked to `claims` under Flux, its workloads running
    replayer = _on_claims(tmp_path)
    world = replayer.world
    world.disturbance = False
    stays = next(
        w
        for w in world.cluster.workloads
        if w.phase == "running" and not w.moves and w.origin != "validation"
    )
    # WHEN something evicts it outside a disturbance
    stays.evict("evicted by a test")
    # THEN the next step is a `workload-disrupted` violation naming it
    with pytest.raises(ViolationFound) as found:
        world.record("test", f"evict {stays.key}")
    assert found.value.violation.invariant == "workload-disrupted"
    assert stays.key in found.value.violation.message
