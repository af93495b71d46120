"""Typed tier predicates compile to one guarded CEL expression."""

from __future__ import annotations

from gpuplatform.model import ServiceTier
from gpuplatform.render.selectors import cel_string, full_gpu_expression, tier_expression


def test_reference_tier_expression(reference: object) -> None:
    tier = ServiceTier(name="t", architecture="Hopper", min_memory="40Gi")
    assert tier_expression(tier) == (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
        " && device.attributes['gpu.nvidia.com'].architecture == 'Hopper'"
        " && device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
    )


def test_every_typed_predicate() -> None:
    tier = ServiceTier(
        name="t",
        device_type="mig",
        product_name="h100|h200",
        mig_profile="3g.40gb",
        max_memory="48Gi",
        min_compute_capability="9.0.0",
        min_driver_version="580.0.0",
    )
    expression = tier_expression(tier)
    assert "device.attributes['gpu.nvidia.com'].type == 'mig'" in expression
    assert "device.attributes['gpu.nvidia.com'].productName.matches('(?i)h100|h200')" in expression
    assert "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'" in expression
    assert "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('48Gi')) <= 0" in expression
    assert "cudaComputeCapability.compareTo(semver('9.0.0')) >= 0" in expression
    assert "driverVersion.compareTo(semver('580.0.0')) >= 0" in expression
    assert expression.startswith("device.driver == 'gpu.nvidia.com' && ")


def test_raw_cel_passes_through_and_strings_are_escaped() -> None:
    assert tier_expression(ServiceTier(name="t", cel="device.driver == 'x'")) == "device.driver == 'x'"
    assert cel_string("it's a \\ test") == "'it\\'s a \\\\ test'"
    assert (
        full_gpu_expression()
        == "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
    )
