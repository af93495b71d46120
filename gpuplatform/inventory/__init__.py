"""Devices and clusters as data: ResourceSlice parsing and a catalog of what the NVIDIA driver publishes."""

from __future__ import annotations

from gpuplatform.inventory.catalog import (
    lookup_product,
    mig_profiles,
    product_names,
    published_attributes,
    release_facts,
    slices_for_node,
)
from gpuplatform.inventory.gpu_facts import DriverDeviceClass, driver_device_classes
from gpuplatform.inventory.resource_slices import (
    Pool,
    normalise_slice,
    parse_resource_slices,
    read_resource_slices,
)

__all__ = [
    "DriverDeviceClass",
    "Pool",
    "driver_device_classes",
    "lookup_product",
    "mig_profiles",
    "normalise_slice",
    "parse_resource_slices",
    "product_names",
    "published_attributes",
    "read_resource_slices",
    "release_facts",
    "slices_for_node",
]
