"""MIG layout and strategy changes: the MIG manager (NVIDIA/mig-parted v0.14.0
`pkg/mig/reconfigure/reconfigure.go`) and the device plugin per `mig.strategy`
(NVIDIA/k8s-device-plugin v0.19.0 `internal/rm/device_map.go`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplatform.inventory.device_plugin import advertised
from gpuplatform.labels import DEPLOY_LABEL_PREFIX, MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL
from gpuplatform.plan.steps import maintenance_steps
from gpuplatform.render.runbooks import render_runbooks
from gpuplatform.simulate.invariants import check_settled
from gpuplatform.simulate.manual import apply_manual
from gpuplatform.simulate.mig_layouts import layout_of
from gpuplatform.simulate.mig_manager import MIG_PAUSED
from gpuplatform.simulate.model import Group, Release
from gpuplatform.simulate.replay import Replayer
from gpuplatform.simulate.snapshot_nodes import device_list
from gpuplatform.simulate.world import ViolationFound, World
from tests.simulate.helpers import sim_spec, simulate, violations
from tests.simulate.test_known_failures import _replayer

_SEVEN = ("1g.5gb",) * 7


def _pool(world: World, name: str) -> Group:
    return next(g for g in world.cluster.groups if g.pool == name)


def _adopted(tmp_path: Path, doc: dict[str, Any] | None = None) -> Replayer:
    replayer = _replayer(tmp_path, doc or sim_spec(), "flux")
    replayer.bootstrap()
    return replayer


def _relabel(world: World, group: Group, config: str) -> None:
    """The operator changes the node's MIG config by hand (the tree renders none)."""
    group.set_label(MIG_CONFIG_LABEL, config, "kubectl")
    world.record("operator", f"kubectl label node {group.nodes[0]} {MIG_CONFIG_LABEL}={config}")
    world.settle()


def _drain(world: World, group: Group) -> None:
    for w in world.cluster.workloads:
        if w.group == group.id:
            w.moves = True
            w.evict("drained for the MIG change", delete=True)
    world.record("operator", f"kubectl drain {group.nodes[0]}")
    world.settle()


def test_layouts_name_configs_and_what_each_strategy_advertises(tmp_path: Path) -> None:
    doc = sim_spec()
    doc["spec"]["nodePools"][0]["migLayout"] = list(_SEVEN)
    world = _adopted(tmp_path, doc).world
    old = _pool(world, "old")
    assert layout_of(world, old, "all-disabled") == ()
    # a pool's config is read as the pool declares it (the GPU Operator's default name)
    assert layout_of(world, old, "all-1g.5gb") == _SEVEN
    # another all-<profile> is the operator's default config for the node's product (A100-40GB)
    assert layout_of(world, old, "all-1g.10gb") == ("1g.10gb",) * 4
    assert layout_of(world, old, "all-3g.20gb") == ("3g.20gb",) * 2
    # any other name is unknown, as to mig-parted without it in its file
    assert layout_of(world, old, "all-balanced") is None and layout_of(world, old, "all-1g.10gb.me") is None
    assert layout_of(world, old, "all-3g.40gb") is None, "an A100-80GB profile"
    assert advertised((), 4, "single") == {"nvidia.com/gpu": 4}
    assert advertised(_SEVEN, 4, "single") == {"nvidia.com/gpu": 28}
    assert advertised(("3g.20gb", "1g.5gb"), 4, "single") is None
    assert advertised(("3g.20gb", "1g.5gb"), 4, "mixed") == {
        "nvidia.com/mig-3g.20gb": 4,
        "nvidia.com/mig-1g.5gb": 4,
    }


def test_the_operator_labels_a_mig_capable_node_all_disabled_and_the_mig_manager_confirms_it(
    tmp_path: Path,
) -> None:
    # gpu-operator v26.3.1 state_manager.go: no mig.config label -> migManager.config.default
    world = _adopted(tmp_path).world
    old = _pool(world, "old")
    assert (old.labels[MIG_CONFIG_LABEL], old.labels[MIG_CONFIG_STATE_LABEL], old.mig_layout) == (
        "all-disabled",
        "success",
        (),
    )


def test_a_drained_node_goes_from_whole_gpus_to_mig_and_republishes_its_devices(tmp_path: Path) -> None:
    # GIVEN the legacy pool on whole GPUs, drained by the operator
    world = _adopted(tmp_path).world
    old = _pool(world, "old")
    before = device_list(world, old, old.nodes[0])
    _drain(world, old)
    # WHEN its MIG config changes
    _relabel(world, old, "all-1g.5gb")
    # THEN the MIG manager paused the clients, applied the layout, restored them and said success
    texts = [s.text for s in world.trace]
    assert any("pauses the GPU clients" in t for t in texts)
    assert old.labels[MIG_CONFIG_STATE_LABEL] == "success" and old.mig_layout == _SEVEN
    assert old.labels[DEPLOY_LABEL_PREFIX + "device-plugin"] == "true"
    assert old.device_plugin_registered and old.plugin_config == "single:" + ",".join(_SEVEN)
    after = device_list(world, old, old.nodes[0])
    assert len(before) == 4 and len(after) == 28
    check_settled(world, "after the MIG change")


def test_a_layout_change_with_gpu_pods_running_is_caught(tmp_path: Path) -> None:
    world = _adopted(tmp_path).world
    old = _pool(world, "old")
    assert any(w.group == old.id and w.phase == "running" for w in world.cluster.workloads)
    with pytest.raises(ViolationFound) as caught:
        _relabel(world, old, "all-1g.5gb")
    assert caught.value.violation.invariant == "mig-reconfigure"
    assert old.labels[MIG_CONFIG_STATE_LABEL] == "failed" and old.mig_layout == ()
    assert old.labels[DEPLOY_LABEL_PREFIX + "device-plugin"] == MIG_PAUSED


def test_claims_on_a_dra_mig_node_block_its_layout_change(tmp_path: Path) -> None:
    # GIVEN the pilot pool on DRA, partitioned, with the tenant's claims allocated on its MIG devices
    doc = sim_spec()
    doc["spec"]["nodePools"][1]["migLayout"] = ["3g.40gb", "3g.40gb"]
    doc["spec"]["tiers"] = [{"name": "full", "deviceType": "mig"}]
    replayer = _adopted(tmp_path, doc)
    replayer.transition("base", "pilot")
    replayer.transition("pilot", "claims")
    replayer._add_workloads("claims")
    world = replayer.world
    new = _pool(world, "new")
    claims = [w for w in world.cluster.workloads if w.group == new.id and w.allocator == "dra"]
    assert claims and all(w.mig_layout == ("3g.40gb", "3g.40gb") for w in claims)
    # WHEN the operator asks for another layout without draining
    with pytest.raises(ViolationFound) as caught:
        _relabel(world, new, "all-7g.80gb")
    # THEN the reconfiguration fails on the claim pods
    assert caught.value.violation.invariant == "mig-reconfigure"
    assert any(w.key in caught.value.violation.message for w in claims)


def _dra_mig(tmp_path: Path) -> Replayer:
    """The pilot pool on DRA, partitioned 2 x 3g.40gb, with the tenant's claims allocated there."""
    doc = sim_spec()
    doc["spec"]["nodePools"][1]["migLayout"] = ["3g.40gb", "3g.40gb"]
    doc["spec"]["tiers"] = [{"name": "full", "deviceType": "mig"}]
    replayer = _adopted(tmp_path, doc)
    replayer.transition("base", "pilot")
    replayer.transition("pilot", "claims")
    replayer._add_workloads("claims")
    return replayer


@pytest.mark.parametrize("restart", [False, True], ids=["runbook-without-restart", "runbook"])
def test_a_mig_change_on_a_dra_node_is_published_only_once_its_kubelet_plugin_restarts(
    tmp_path: Path, restart: bool
) -> None:
    """DRA driver v0.4.1 enumerates the devices when its kubelet plugin starts and republishes that
    list only (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 cmd/gpu-kubelet-plugin/device_state.go
    `NewDeviceState`, driver.go `publishResources`): the runbook's MIG change restarts the plugin."""
    # GIVEN claims on the DRA pool's MIG devices, drained as the runbook's MIG change says
    replayer = _dra_mig(tmp_path)
    world, plan = replayer.world, replayer.plan
    new = _pool(world, "new")
    before, after = maintenance_steps(plan, plan.wave("claims"), "new", "mig-change")
    assert [s.action for s in before] == ["drain-claims"]
    assert [s.action for s in after] == ["restart-kubelet-plugin", "uncordon-node"]
    for step in before:
        apply_manual(world, step, "claims", "claims")
    # WHEN the MIG manager applies another layout
    _relabel(world, new, "all-7g.80gb")
    assert new.labels[MIG_CONFIG_STATE_LABEL] == "success" and new.mig_layout == ("7g.80gb",)
    assert new.published_layout == ("3g.40gb", "3g.40gb")  # the slices still list the old devices
    # THEN without the plugin's restart the node is unsafe; with the runbook's steps it publishes the new layout
    if not restart:
        with pytest.raises(ViolationFound) as caught:
            check_settled(world, "after the MIG change")
        assert caught.value.violation.invariant == "mig-slices"
        # and once uncordoned, a claim pod is allocated a device the layout no longer has
        with pytest.raises(ViolationFound) as caught:
            apply_manual(world, after[-1], "claims", "claims")
        assert caught.value.violation.invariant == "mig-devices"
        return
    for step in after:
        apply_manual(world, step, "claims", "claims")
    check_settled(world, "after the MIG change")
    assert new.published_layout == ("7g.80gb",) and not new.cordoned
    claims = [w for w in world.cluster.workloads if w.group == new.id and w.allocator == "dra"]
    assert claims and all(w.mig_layout == ("7g.80gb",) and w.phase == "running" for w in claims)


def test_the_runbook_renders_the_mig_change_of_a_dra_pool(tmp_path: Path) -> None:
    replayer = _dra_mig(tmp_path)
    text = render_runbooks(replayer.plan, {})["02-claims.md"]
    section = text[text.index("## Node maintenance") :]
    assert "Before a MIG change (`nvidia.com/mig.config`) of the node" in section
    assert "restart the DRA kubelet plugin on the node" in section
    assert "-kubelet-plugin- | xargs -r kubectl -n nvidia-dra-driver-gpu delete --wait" in section


def test_a_claim_left_on_devices_the_layout_removed_is_caught(tmp_path: Path) -> None:
    world = _adopted(tmp_path).world
    old = _pool(world, "old")
    holder = next(w for w in world.cluster.workloads if w.group == old.id)
    old.mig_layout = _SEVEN  # the GPUs repartitioned under a pod that still holds a whole GPU
    with pytest.raises(ViolationFound) as caught:
        world.record("test", "the GPUs are repartitioned")
    assert caught.value.violation.invariant == "mig-devices" and holder.key in caught.value.violation.message


def test_the_device_plugin_restarts_when_mig_strategy_changes_and_keeps_its_pods(tmp_path: Path) -> None:
    world = _adopted(tmp_path).world
    old = _pool(world, "old")
    running = [w for w in world.cluster.workloads if w.group == old.id and w.phase == "running"]
    release = world.cluster.releases["gpu-operator"]
    values = {**release.values, "mig": {"strategy": "mixed"}}
    world.cluster.releases["gpu-operator"] = Release(
        release.name, release.chart, release.version, values, release.patches, release.owner
    )
    world.record("flux", "helm upgrade gpu-operator (mig.strategy: mixed)")
    world.settle()
    assert any("device plugin on old" in s.text and "restarts" in s.text for s in world.trace)
    assert old.device_plugin_registered and old.plugin_config == "mixed:whole GPUs"
    assert all(w.phase == "running" for w in running)


@pytest.mark.parametrize(("strategy", "fails"), [(None, True), ("mixed", False)])
def test_mixed_profiles_under_the_single_strategy_crash_the_device_plugin(
    tmp_path: Path, strategy: str | None, fails: bool
) -> None:
    # k8s-device-plugin v0.19.0 device_map.go: `single` needs every MIG device of one profile
    doc = sim_spec()
    doc["spec"]["nodePools"][0]["migLayout"] = ["3g.20gb", "2g.10gb", "1g.5gb"]
    doc["spec"]["nodePools"][0]["migConfig"] = "team-mixed"
    if strategy:
        doc["spec"]["gpuOperator"]["values"] = {"mig": {"strategy": strategy}}
    found = violations(simulate(tmp_path, doc, "base", "pilot", ("flux",)))
    assert bool(found) == fails
    if fails:
        assert found[0][3].invariant == "operands" and "device-plugin (crashloop)" in found[0][3].message
