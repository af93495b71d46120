"""The GPU stack's pods are recognised by what they are: a device plugin by its image and mount, not only by
the GPU Operator's label; the stack's DaemonSets by name; the NVIDIA_VISIBLE_DEVICES values that show GPUs."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplatform.gates.matchers import (
    is_device_plugin_image,
    is_device_plugin_pod,
    is_gpu_stack_pod,
    shows_gpus,
)
from gpuplatform.testing import device_plugin_pod
from tests.gates.api_shapes import gfd_pod, standalone_plugin_pod


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("nvcr.io/nvidia/k8s-device-plugin:v0.17.1", True),
        ("k8s-device-plugin", True),
        ("registry.example.com:5000/mirror/k8s-device-plugin@sha256:0a1b", True),
        ("nvcr.io/nvidia/k8s-device-plugin-extra:v1", False),
        ("nvcr.io/nvidia/gpu-feature-discovery:v0.8.2", False),
        ("", False),
    ],
)
def test_the_device_plugins_image_by_its_repository_name(image: str, expected: bool) -> None:
    assert is_device_plugin_image(image) is expected


def test_operator_standalone_and_feature_discovery_pods() -> None:
    assert is_device_plugin_pod(device_plugin_pod("n"))
    assert is_device_plugin_pod(standalone_plugin_pod("n"))
    assert not is_device_plugin_pod(gfd_pod("n"))


@pytest.mark.parametrize(
    ("owner", "expected"),
    [
        ("nvidia-dcgm-exporter", True),
        ("gpu-feature-discovery", True),
        ("gpu-operator-node-feature-discovery-worker", True),
        ("dra-driver-nvidia-gpu-kubelet-plugin", True),
        ("metrics-agent", False),
        ("my-nvidia-tool", False),
    ],
)
def test_the_gpu_stacks_pods_by_their_daemonset(owner: str, expected: bool) -> None:
    made = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": owner, "controller": True}
    pod = {"metadata": {"namespace": "gpu-operator", "ownerReferences": [made]}}
    assert is_gpu_stack_pod(pod) is expected
    assert is_gpu_stack_pod(pod, ("nvidia-dra-driver-gpu",)) is False
    assert (
        is_gpu_stack_pod(
            {"metadata": {"namespace": "gpu-operator", "ownerReferences": [{**made, "kind": "ReplicaSet"}]}}
        )
        is False
    )


@pytest.mark.parametrize(
    "pod",
    [
        # a tenant's namespace, whatever the owner's name (issue 39 H3)
        {
            "metadata": {
                "namespace": "team",
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "nvidia-tools", "controller": True}
                ],
            }
        },
        # the operator's namespace, but no DaemonSet controller made it
        {"metadata": {"namespace": "gpu-operator", "labels": {"app": "nvidia-device-plugin-daemonset"}}},
        {
            "metadata": {
                "namespace": "gpu-operator",
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "nvidia-dcgm-exporter"}
                ],
            }
        },
    ],
)
def test_a_pod_is_the_stacks_only_by_its_daemonset_in_the_stacks_namespace(pod: dict[str, Any]) -> None:
    assert is_gpu_stack_pod(pod) is False


def test_a_standalone_device_plugin_is_of_the_stack_in_the_stacks_namespace() -> None:
    assert is_gpu_stack_pod(standalone_plugin_pod("n", namespace="gpu-operator"))
    assert not is_gpu_stack_pod(standalone_plugin_pod("n"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("all", True),
        ("0,1", True),
        ("GPU-1a2b", True),
        ("ALL", True),
        ("", False),
        ("none", False),
        ("VOID", False),
    ],
)
def test_which_visible_devices_values_show_gpus(value: str, expected: bool) -> None:
    assert shows_gpus(value) is expected
