"""Which CEL environment a Kubernetes release gives DRA selectors (libraries, device fields, gates)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpuplatform.cel.errors import CelError
from gpuplatform.cel.types import ANY, BOOL, DYN, QUANTITY, STRING, Type, map_of
from gpuplatform.versions import kube_gates

__all__ = ["DEFAULT_GATES", "SUPPORTED_RELEASES", "Environment", "environment_for"]

SUPPORTED_RELEASES = ("1.34", "1.35", "1.36")

#: Every gate of each release with its default: `versions.KUBE_FEATURE_GATES`, the one table. The
#: environment reads DRAConsumableCapacity and DRAListTypeAttributes; any other gate of the release
#: (DRAExtendedResource...) is accepted and changes nothing here.
DEFAULT_GATES: dict[str, dict[str, bool]] = {release: kube_gates(release) for release in SUPPORTED_RELEASES}


@dataclass(frozen=True)
class Environment:
    """A compiled-in view of one CEL environment (see dra-api.md §7)."""

    release: str
    library_minor: int
    new_expression: bool
    list_attributes: bool
    includes: bool
    allow_multiple_allocations: bool

    @property
    def attribute_type(self) -> Type:
        """Attribute values are Any (scalars only) or Dyn (lists allowed, macros work)."""
        return DYN if self.list_attributes else ANY

    @property
    def device_type(self) -> Type:
        """The `device` variable: an object with driver, attributes, capacity (+ allowMultipleAllocations)."""
        fields = [
            ("driver", STRING),
            ("attributes", map_of(STRING, map_of(STRING, self.attribute_type))),
            ("capacity", map_of(STRING, map_of(STRING, QUANTITY))),
        ]
        if self.allow_multiple_allocations:
            fields.insert(0, ("allowMultipleAllocations", BOOL))
        return Type("kubernetes.DRADevice", fields=tuple(fields))


def environment_for(release: str, new_expression: bool, features: Mapping[str, bool] | None) -> Environment:
    """The environment the API server (new) or scheduler (stored) of `release` compiles selectors in."""
    if release not in SUPPORTED_RELEASES:
        raise CelError(f"Kubernetes {release} is not supported; use one of {', '.join(SUPPORTED_RELEASES)}")
    gates = dict(DEFAULT_GATES[release])
    for name, value in (features or {}).items():
        if name not in gates:
            raise CelError(f"feature gate {name} does not exist in Kubernetes {release}")
        gates[name] = bool(value)
    minor = int(release.split(".")[1])
    lists = gates.get("DRAListTypeAttributes", False)
    return Environment(
        release=release,
        library_minor=minor - 1 if new_expression else minor,
        new_expression=new_expression,
        list_attributes=lists,
        includes=lists if new_expression else minor >= 36,
        allow_multiple_allocations=gates["DRAConsumableCapacity"] if new_expression else True,
    )
