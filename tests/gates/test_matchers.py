"""A device-plugin pod is recognised by what it is, not only by the GPU Operator's label."""

from __future__ import annotations

import pytest

from gpuplatform.gates.matchers import is_device_plugin_image, is_device_plugin_pod
from tests.evidence.builders import device_plugin_pod
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
