"""The DeviceClasses the NVIDIA DRA driver chart installs, per release, as data."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplatform.inventory.catalog import release_facts
from gpuplatform.labels import GPU_RESOURCE

__all__ = ["SOURCE", "DriverDeviceClass", "driver_device_classes"]

SOURCE = (
    "kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/*/templates/deviceclass-*.yaml "
    "@95932046 (rendered in samples/dra-driver-helm/); extendedResourceName since v25.12.0, absent at v25.8.1"
)


@dataclass(frozen=True)
class DriverDeviceClass:
    """One chart-installed class: name, CEL selector, optional extendedResourceName, what enables it."""

    name: str
    selector: str
    extended_resource_name: str | None
    enabled_by: str


def _typed(driver: str, kind: str) -> str:
    return f"device.driver == '{driver}' && device.attributes['{driver}'].type == '{kind}'"


def driver_device_classes(driver_release: str = "0.4.1") -> list[DriverDeviceClass]:
    """The classes of `driver_release` (`extendedResourceName` only where the chart renders it for v1)."""
    facts = release_facts(driver_release)
    classes = [
        DriverDeviceClass(
            "gpu.nvidia.com",
            _typed("gpu.nvidia.com", "gpu"),
            GPU_RESOURCE if facts.extended_resource_name else None,
            "resources.gpus.enabled",
        ),
        DriverDeviceClass("mig.nvidia.com", _typed("gpu.nvidia.com", "mig"), None, "resources.gpus.enabled"),
    ]
    if facts.vfio_class:
        classes.append(
            DriverDeviceClass(
                "vfio.gpu.nvidia.com", _typed("gpu.nvidia.com", "vfio"), None, "resources.gpus.enabled"
            )
        )
    classes += [
        DriverDeviceClass(
            "compute-domain-daemon.nvidia.com",
            _typed("compute-domain.nvidia.com", "daemon"),
            None,
            "resources.computeDomains.enabled (IMEX mode not hostManaged)",
        ),
        DriverDeviceClass(
            "compute-domain-default-channel.nvidia.com",
            _typed("compute-domain.nvidia.com", "channel")
            + " && device.attributes['compute-domain.nvidia.com'].id == 0",
            None,
            "resources.computeDomains.enabled",
        ),
    ]
    return classes
