"""Containers the tool itself runs (gate Jobs, validation pods): image pins and resource budgets."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from gpuplatform.model.base import Quantity, SpecModel

__all__ = ["ContainerResources", "Digest", "ImageReference", "ResourceAmounts", "pinned_image"]

_DIGEST = re.compile(r"\Asha256:[0-9a-f]{64}\Z")


def _digest(value: str) -> str:
    if not _DIGEST.match(value):
        raise ValueError(f"{value!r} is not an image digest (sha256: and 64 lower-case hex digits)")
    return value


def _image(value: str) -> str:
    name, at, digest = value.partition("@")
    if (
        not name
        or any(c.isspace() or not c.isprintable() for c in value)
        or (at and not _DIGEST.match(digest))
    ):
        raise ValueError(f"{value!r} is not an image reference (registry/name[:tag][@sha256:<64 hex>])")
    return value


Digest = Annotated[str, AfterValidator(_digest)]
ImageReference = Annotated[str, AfterValidator(_image)]


def pinned_image(image: str, digest: str | None) -> str:
    """`image@digest` (a reference that already carries a digest is kept as it is)."""
    if "@" in image or digest is None:
        return image
    return f"{image}@{digest}"


class ResourceAmounts(SpecModel):
    """CPU and memory of a container's requests or limits."""

    cpu: Quantity
    """CPU (`50m`)."""
    memory: Quantity
    """Memory (`64Mi`)."""


class ContainerResources(SpecModel):
    """Requests and limits; namespaces with a ResourceQuota on CPU or memory refuse pods without both."""

    requests: ResourceAmounts
    """What the scheduler reserves for the container."""
    limits: ResourceAmounts
    """What the container may use at most."""

    def as_k8s(self) -> dict[str, dict[str, str]]:
        """The container's `resources` field."""
        return {
            "limits": {"cpu": self.limits.cpu, "memory": self.limits.memory},
            "requests": {"cpu": self.requests.cpu, "memory": self.requests.memory},
        }
