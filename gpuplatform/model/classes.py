"""Service tiers and bridge classes: the DeviceClasses a platform publishes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.model.base import (
    CleanString,
    Description,
    DnsLabel,
    DnsSubdomain,
    ExtendedResourceName,
    JsonObject,
    Quantity,
    SemVer,
    SpecModel,
)
from gpuplatform.model.fields import Items, OptionalRef, default

if TYPE_CHECKING:
    from gpuplatform.model.tenants import Tenant

__all__ = ["BridgeClass", "ServiceTier", "Sharing"]

Sharing = Literal["exclusive", "time-slicing", "mps"]


class ServiceTier(SpecModel):
    """A service tier, rendered as DeviceClass `<name>.<domain>`.

    Either typed predicates (compiled to one CEL selector) or a raw `cel` expression.
    """

    name: DnsLabel
    """Tier name; the DeviceClass is `<name>.<domain>`."""
    description: Description = ""
    """What the tier offers, for people."""
    driver: DnsSubdomain = "gpu.nvidia.com"
    """DRA driver whose devices the tier selects (`device.driver`)."""
    device_type: Literal["gpu", "mig"] = "gpu"
    """Full GPUs or MIG devices (`device.attributes[driver].type`)."""
    architecture: CleanString | None = None
    """Sets `device.attributes['gpu.nvidia.com'].architecture == ...` (e.g. `Hopper`)."""
    product_name: CleanString | None = None
    """Case-insensitive regex on `productName` (RE2 syntax)."""
    min_memory: Quantity | None = None
    """Inclusive lower bound on `capacity.memory`."""
    max_memory: Quantity | None = None
    """Inclusive upper bound on `capacity.memory`."""
    min_compute_capability: SemVer | None = None
    """Lower bound on the `cudaComputeCapability` attribute (`9.0.0`)."""
    min_driver_version: SemVer | None = None
    """Lower bound on the `driverVersion` attribute (`580.0.0`)."""
    mig_profile: CleanString | None = None
    """MIG profile (`profile` attribute, e.g. `1g.10gb`); needs `deviceType: mig`."""
    cel: str | None = Field(default=None, min_length=1, max_length=10240)
    """Raw CEL selector, instead of the typed predicates."""
    config: Items[JsonObject] = default(())
    """Opaque driver parameters (`resource.nvidia.com/v1beta1` GpuConfig...) for `spec.config`."""
    sharing: Sharing = "exclusive"
    """Sharing mode the tier's config enables; non-exclusive tiers are refused for production tenants."""
    owner: OptionalRef["Tenant"] = default(None)  # noqa: UP037 (tenants.py imports this module)
    """Tenant that asked for the tier, when it is tenant-specific."""

    @model_validator(mode="after")
    def _typed_or_raw(self) -> ServiceTier:
        typed = [
            self.architecture,
            self.product_name,
            self.min_memory,
            self.max_memory,
            self.min_compute_capability,
            self.min_driver_version,
            self.mig_profile,
        ]
        if self.cel is not None and any(v is not None for v in typed):
            raise ValueError("a tier has typed predicates or a raw `cel` expression, not both")
        if self.mig_profile is not None and self.device_type != "mig":
            raise ValueError("migProfile needs deviceType: mig")
        return self


class BridgeClass(SpecModel):
    """A DeviceClass with `extendedResourceName`, serving legacy `nvidia.com/gpu` requests from DRA.

    `source: chart` names the DRA driver chart's own `gpu.nvidia.com` class as the bridge instead
    of rendering one (the chart declares `extendedResourceName: nvidia.com/gpu` from 25.12.0).
    """

    name: DnsLabel
    """Bridge name; a platform bridge's DeviceClass is `<name>.<domain>`."""
    extended_resource_name: ExtendedResourceName = GPU_RESOURCE
    """The legacy resource the class serves (`spec.extendedResourceName`)."""
    source: Literal["platform", "chart"] = "platform"
    """`platform` renders a DeviceClass; `chart` names the DRA driver chart's `gpu.nvidia.com` class."""
    tier: OptionalRef[ServiceTier] = default(None)
    """Narrow the bridge to one tier's devices; default: every full GPU of the driver."""
