"""Typed tier predicates -> one CEL selector expression, guards first."""

from __future__ import annotations

from gpuplatform.model.classes import ServiceTier

__all__ = ["cel_string", "full_gpu_expression", "tier_expression"]


def cel_string(value: str) -> str:
    """A single-quoted CEL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _attr(driver: str, name: str) -> str:
    return f"device.attributes[{cel_string(driver)}].{name}"


def _capacity(driver: str, name: str) -> str:
    return f"device.capacity[{cel_string(driver)}].{name}"


def full_gpu_expression(driver: str = "gpu.nvidia.com") -> str:
    """Every full GPU of the driver (what the chart's `gpu.nvidia.com` class selects)."""
    return f"device.driver == {cel_string(driver)} && {_attr(driver, 'type')} == 'gpu'"


def tier_expression(tier: ServiceTier) -> str:
    """The tier's CEL selector.

    One expression, not one selector per predicate: the driver and type tests come first so that
    `&&` short-circuits before an attribute another driver's devices lack is read.
    """
    if tier.cel is not None:
        return tier.cel
    d = tier.driver
    parts = [f"device.driver == {cel_string(d)}", f"{_attr(d, 'type')} == {cel_string(tier.device_type)}"]
    if tier.architecture is not None:
        parts.append(f"{_attr(d, 'architecture')} == {cel_string(tier.architecture)}")
    if tier.product_name is not None:
        parts.append(f"{_attr(d, 'productName')}.matches({cel_string('(?i)' + tier.product_name)})")
    if tier.mig_profile is not None:
        parts.append(f"{_attr(d, 'profile')} == {cel_string(tier.mig_profile)}")
    if tier.min_memory is not None:
        parts.append(f"{_capacity(d, 'memory')}.compareTo(quantity({cel_string(tier.min_memory)})) >= 0")
    if tier.max_memory is not None:
        parts.append(f"{_capacity(d, 'memory')}.compareTo(quantity({cel_string(tier.max_memory)})) <= 0")
    for attribute, minimum in (
        ("cudaComputeCapability", tier.min_compute_capability),
        ("driverVersion", tier.min_driver_version),
    ):
        if minimum is not None:
            parts.append(f"{_attr(d, attribute)}.compareTo(semver({cel_string(minimum)})) >= 0")
    return " && ".join(parts)
