"""DeviceClasses for tiers and platform bridges, only in the waves that enable them."""

from __future__ import annotations

from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.device_classes import render_device_classes


def test_classes_appear_in_their_waves(reference_with_platform_bridge: Platform) -> None:
    plan = plan_platform(reference_with_platform_bridge)
    names = {s.name: [o["metadata"]["name"] for o in render_device_classes(plan, s)] for s in plan.waves}
    assert names["driver-validation"] == []
    assert names["native-claim-pilot"] == ["nvidia-hopper-large-memory.platform.example.com"]
    assert names["compatibility-bridge"] == [
        "nvidia-hopper-large-memory.platform.example.com",
        "nvidia-gpu-legacy-bridge.platform.example.com",
    ]


def test_bridge_class_selects_full_gpus_and_names_the_extended_resource(
    reference_with_platform_bridge: Platform,
) -> None:
    plan = plan_platform(reference_with_platform_bridge)
    bridge = render_device_classes(plan, plan.wave("compatibility-bridge"))[1]
    assert bridge["spec"] == {
        "selectors": [
            {
                "cel": {
                    "expression": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
                }
            }
        ],
        "extendedResourceName": "nvidia.com/gpu",
    }


def test_chart_sourced_bridge_renders_no_class(reference: Platform) -> None:
    # the reference stack names the chart's class as its bridge
    assert reference.bridges[0].source == "chart"
    plan = plan_platform(reference)
    names = [o["metadata"]["name"] for o in render_device_classes(plan, plan.wave("application"))]
    assert names == ["nvidia-hopper-large-memory.platform.example.com"]


def test_tier_config_becomes_opaque_driver_config(reference: Platform) -> None:
    tier = reference.tiers[0].model_copy(
        update={"config": ({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"},)}
    )
    plan = plan_platform(reference.model_copy(update={"tiers": (tier,)}))
    [cls] = render_device_classes(plan, plan.wave("native-claim-pilot"))
    assert cls["spec"]["config"] == [
        {
            "opaque": {
                "driver": "gpu.nvidia.com",
                "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"},
            }
        }
    ]
