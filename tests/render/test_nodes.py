"""Partial Node objects: labels only, never pruned, never a `nvidia.com/gpu.deploy.*=true`."""

from __future__ import annotations

from gpuplatform.model import NodePool, Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.nodes import node_folders, node_labels, provisioner_labels


def test_dra_node_labels_leave_the_kubelet_plugin_label_to_the_switch(reference: Platform) -> None:
    pool = reference.node_pools[1]
    assert node_labels(reference, pool, "dra") == {
        "gpu-scheduling.platform.example.com/mode": "dra",
        "nvidia.com/gpu.deploy.device-plugin": "false",
    }


def test_a_pool_may_turn_the_validator_off_only_while_the_device_plugin_is_enabled(
    reference: Platform,
) -> None:
    # plugin-validation only exists while devicePlugin.enabled (gpu-operator object_controls.go)
    off = reference.node_pools[1].model_copy(update={"operator_validator": False})
    assert node_labels(reference, off, "dra")["nvidia.com/gpu.deploy.operator-validator"] == "false"
    assert "nvidia.com/gpu.deploy.operator-validator" not in node_labels(reference, off, "dra", False)


def test_provisioner_labels_let_new_nodes_start_on_dra(reference: Platform) -> None:
    pool = reference.node_pools[1]
    assert provisioner_labels(reference, pool, "dra")["nvidia.com/dra-kubelet-plugin"] == "true"
    assert "nvidia.com/dra-kubelet-plugin" not in provisioner_labels(reference, pool, "legacy")


def test_legacy_nodes_get_only_the_mode_label(reference: Platform) -> None:
    assert node_labels(reference, reference.node_pools[0], "legacy") == {
        "gpu-scheduling.platform.example.com/mode": "legacy"
    }


def test_validator_label_follows_the_pool_override(reference: Platform) -> None:
    keep = NodePool(name="p", nodes=["n"], product="H100-80GB", operator_validator=True)
    assert "nvidia.com/gpu.deploy.operator-validator" not in node_labels(reference, keep, "dra")


def test_no_rendered_node_sets_a_deploy_label_to_true(reference: Platform) -> None:
    plan = plan_platform(reference)
    for state in plan.waves:
        for node in (o for objects in node_folders(plan, state).values() for o in objects):
            labels = node["metadata"]["labels"]
            assert not [
                k for k, v in labels.items() if k.startswith("nvidia.com/gpu.deploy.") and v == "true"
            ]
            assert node["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] == (
                "ServerSideApply=true,Prune=false,Delete=false"
            )
            assert node["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"] == "disabled"
            assert set(node) == {"apiVersion", "kind", "metadata"}
            assert "gpuplatform.dev/wave" not in labels  # one object serves every wave with its labels


def test_provisioner_pools_get_no_node_objects(reference: Platform) -> None:
    karpenter = NodePool.model_validate(
        {"name": "auto", "product": "L40S", "provisioner": {"kind": "karpenter", "name": "gpu-l40s"}}
    )
    platform = reference.model_copy(update={"node_pools": (*reference.node_pools, karpenter)})
    plan = plan_platform(platform)
    names = [
        n["metadata"]["name"] for objects in node_folders(plan, plan.waves[-1]).values() for n in objects
    ]
    assert names == ["gpu-legacy-01", "gpu-dra-01"]
