"""Workloads the platform moves but does not own: legacy workloads and NIM services."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpuplatform.kueue.model import QUEUED_KINDS
from gpuplatform.labels import GPU_RESOURCE
from gpuplatform.model.base import (
    INT32_MAX,
    SEMVER,
    DnsLabel,
    DnsSubdomain,
    LabelKey,
    LabelValue,
    Quantity,
    RelativePath,
    SpecModel,
)
from gpuplatform.model.classes import ServiceTier
from gpuplatform.model.containers import ContainerResources, Digest, ImageReference, ResourceAmounts
from gpuplatform.model.fields import Items, OptionalRef, Ref, default
from gpuplatform.model.tenants import Tenant
from gpuplatform.model.waves import Wave

__all__ = [
    "VALIDATION_IMAGE",
    "AttributeSelector",
    "CapacitySelector",
    "GpuProbe",
    "NimService",
    "SelectorOp",
    "Toleration",
    "ValidationWorkload",
    "Workload",
]

SelectorOp = Literal["Equal", "NotEqual", "GreaterThan", "GreaterThanOrEqual", "LessThan", "LessThanOrEqual"]


class Toleration(SpecModel):
    """A pod toleration (core/v1 `Toleration`), read by `gpuplatform capacity`."""

    key: Literal[""] | LabelKey = ""
    """Taint key the toleration matches (empty with `Exists`: every taint)."""
    operator: Literal["Equal", "Exists"] = "Equal"
    """`Equal` matches the value, `Exists` any value."""
    value: LabelValue = ""
    """Taint value to match with `Equal`."""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""
    """Taint effect to match (empty: every effect)."""


class Workload(SpecModel):
    """A legacy workload (`nvidia.com/gpu` limits) that moves to a claim in wave `movesIn`."""

    kind: Literal["Pod", "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"]
    """Kind of the workload object."""
    namespace: DnsLabel
    """Namespace of the workload."""
    name: DnsSubdomain
    """Name of the workload object."""
    gpus: int = Field(default=1, strict=True, ge=1, le=32)
    """GPUs one pod requests (the device plugin's `nvidia.com/gpu`, summed over its containers)."""
    tier: Ref[ServiceTier]
    """Tier the converted workload claims from."""
    moves_in: Ref[Wave]
    """Wave from which the workload uses a claim (its template exists; its owner gets a hand-off)."""
    manifest: RelativePath | None = None
    """Path of the original manifest; when given, the converted file is handed off in full."""
    shared_claim: bool = False
    """All GPU containers share one request (they see the same GPUs); default: each container keeps
    its own distinct GPUs, as with the device plugin."""
    replicas: int = Field(default=1, strict=True, ge=0, le=INT32_MAX)
    """Pods the workload runs at peak (replicas, parallelism, nodes of a DaemonSet); each needs
    `gpus` (read by `gpuplatform capacity`, and sizes the legacy quota)."""
    resource: str = Field(default=GPU_RESOURCE, pattern=r"^nvidia\.com/[a-z0-9.-]+$")
    """Extended resource the legacy pods request (`nvidia.com/mig-3g.40gb` on a MIG pool)."""
    node_selector: dict[LabelKey, LabelValue] = {}
    """The legacy pods' `nodeSelector` (capacity places them only on nodes with these labels)."""
    tolerations: Items[Toleration] = default(())
    """The legacy pods' tolerations (a DRA pool's taint keeps pods that lack one off it)."""
    queue: DnsLabel | None = None
    """LocalQueue the Job is submitted to (its `kueue.x-k8s.io/queue-name` label, on a CronJob's
    `jobTemplate`); a LocalQueue `spec.kueue` renders in the workload's namespace. Without it Kueue
    does not admit the workload (it is not queued)."""

    @model_validator(mode="after")
    def _queue_kind(self) -> Workload:
        if self.queue is not None and self.kind not in QUEUED_KINDS:
            raise ValueError(
                f"queue: the tool models Kueue's batch/v1 Job integration only ({', '.join(QUEUED_KINDS)}), "
                f"not a {self.kind}"
            )
        return self


class AttributeSelector(SpecModel):
    """NIM Operator `attributeSelectors[]` item."""

    key: str = Field(min_length=1, max_length=64)
    """Device attribute (`architecture`, or qualified `gpu.nvidia.com/architecture`)."""
    op: SelectorOp = "Equal"
    """Comparison operator."""
    value: str | int | bool
    """Value to compare with."""
    value_type: Literal["string", "int", "bool", "version"] | None = None
    """Defaults from the value's type; `version` must be given explicitly."""

    @model_validator(mode="after")
    def _value_rules(self) -> AttributeSelector:
        kind = self.value_type or {bool: "bool", int: "int", str: "string"}[type(self.value)]
        if kind == "version" and not (isinstance(self.value, str) and SEMVER.match(self.value)):
            raise ValueError(f"versionValue {self.value!r} is not a semantic version")
        if kind == "int" and (
            isinstance(self.value, bool)
            or not isinstance(self.value, int)
            or not -(2**31) <= self.value < 2**31
        ):
            raise ValueError("intValue must be an int32")
        if kind == "string" and len(str(self.value).encode()) > 64:
            raise ValueError("stringValue is at most 64 bytes")
        return self


class CapacitySelector(SpecModel):
    """NIM Operator `capacitySelectors[]` item."""

    key: str = Field(min_length=1, max_length=64)
    """Device capacity (`memory`)."""
    op: SelectorOp = "Equal"
    """Comparison operator."""
    value: Quantity
    """Quantity to compare with (`80Gi`)."""


class NimService(SpecModel):
    """A NIMService the platform gives DRA resources to (NIM Operator `spec.draResources`).

    Migration is blue/green because `draResources` is immutable: `name` is the new NIMService,
    `replaces` the legacy one removed in a later wave.
    """

    name: DnsSubdomain
    """Name of the new NIMService (the DRA one)."""
    namespace: DnsLabel
    """Namespace of the NIMService: a tenant's namespace."""
    replaces: DnsSubdomain | None = None
    """The legacy NIMService it takes traffic from, retired by its owner in a later wave."""
    tier: OptionalRef[ServiceTier] = default(None)
    """Tier (DeviceClass) of the claims; default: the chart's `gpu.nvidia.com` class."""
    attribute_selectors: Items[AttributeSelector] = default(())
    """NIM Operator `attributeSelectors` of the claim."""
    capacity_selectors: Items[CapacitySelector] = default(())
    """NIM Operator `capacitySelectors` of the claim."""
    cel_expressions: Items[str] = default(())
    """NIM Operator `celExpressions` (instead of attribute and capacity selectors)."""
    count: int = Field(default=1, strict=True, ge=1, le=32)
    """Devices per replica."""
    replicas: int = Field(default=1, strict=True, ge=1, le=INT32_MAX)
    """Replicas of the NIMService."""
    mode: Literal["claimCreationSpec", "template", "claim"] = "claimCreationSpec"
    """How `draResources` asks: the operator creates claims, or a tool-rendered template or claim."""
    moves_in: Ref[Wave]
    """Wave in which the NIMService moves to DRA (its hand-off appears)."""
    manifest: RelativePath | None = None
    """Path of the team's original NIMService manifest, converted in full when given."""
    cache: DnsSubdomain | None = None
    """NIMCache the new service mounts (default: a cache named like the service). Never the legacy
    service's cache: engine profiles are GPU-specific and an RWO volume mounts on one node only."""
    accept_preview: bool = False
    """Accept NIM DRA (Technology Preview) in a production tenant or wave."""

    @model_validator(mode="after")
    def _nim_rules(self) -> NimService:
        if self.cel_expressions and (self.attribute_selectors or self.capacity_selectors):
            raise ValueError("celExpressions cannot be combined with attribute or capacity selectors")
        if self.mode == "claim" and self.replicas > 1:
            raise ValueError("a shared resourceClaimName is not allowed with more than one replica")
        if self.mode != "claimCreationSpec" and self.tier is None:
            raise ValueError(f"mode {self.mode} renders a claim or template of a tier: set tier")
        raw = [s.key for s in self.attribute_selectors] + [s.key for s in self.capacity_selectors]
        keys = [k if "/" in k else f"gpu.nvidia.com/{k}" for k in raw]
        duplicates = sorted({k for k in keys if keys.count(k) > 1})
        if duplicates:
            raise ValueError(
                f"selector keys repeat after normalising to domain/name: {', '.join(duplicates)}"
            )
        return self


VALIDATION_IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"


class GpuProbe(SpecModel):
    """A container that prints its view of the GPUs it was given (`nvidia-smi -L`) and holds them."""

    image: ImageReference = VALIDATION_IMAGE
    """Image with `sh` and `nvidia-smi` (the CUDA base images have both); pin it by digest."""
    image_digest: Digest | None = None
    """Digest of `image` (`sha256:…`): the probe runs `image@imageDigest`."""
    command: tuple[str, ...] = ("nvidia-smi", "-L")
    """What prints the container's view of its GPUs; its output must carry `(UUID: GPU-…)` lines."""
    resources: ContainerResources = ContainerResources(
        requests=ResourceAmounts(cpu="10m", memory="16Mi"),
        limits=ResourceAmounts(cpu="100m", memory="64Mi"),
    )
    """Requests and limits of the probe container."""


class ValidationWorkload(GpuProbe):
    """The pilot workload that proves a claim reaches a container.

    Its pod prints `nvidia-smi -L` and holds the claim while the `claim-pilot` gate reads the
    allocation, the device's UUID in its ResourceSlice and the container's log; the gate then
    removes it and proves the claim was released. The bridge gate's pods run the same probe.
    """

    tenant: Ref[Tenant]
    """Tenant whose namespace runs the pilot Job."""
    claim_template: DnsSubdomain
    """The tenant's claim template the pilot claims from."""
    name: str = Field(default="gpu-dra-validation", pattern=r"^[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?$")
    """Prefix of the validation Job's name (a digest of the wave is appended; at most 52)."""
