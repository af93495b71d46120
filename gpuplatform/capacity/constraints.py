"""`constraints[].matchAttribute`: every device of the named requests shares one attribute value.

Source: k8s.io/dynamic-resource-allocation structured/internal/stable/allocator_stable.go
(`matchAttributeConstraint`, `lookupAttribute`), kubernetes-1.36.1. The first device may have any
value type; later ones must have the same type and value; a device without the attribute fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MatchAttribute", "lookup_attribute"]

_KINDS = ("string", "int", "bool", "version")


def lookup_attribute(device: Mapping[str, Any], driver: str, name: str) -> Mapping[str, Any] | None:
    """The attribute by its fully qualified name, or by its short name when the domain is the driver."""
    attributes = device.get("attributes") or {}
    if name in attributes:
        return dict(attributes[name])
    domain, sep, short = name.partition("/")
    if not sep or domain != driver:
        return None
    found = attributes.get(short)
    return dict(found) if found is not None else None


class MatchAttribute:
    """The running state of one constraint during a search (how many devices, which value)."""

    def __init__(self, attribute: str, requests: tuple[str, ...]) -> None:
        self.attribute = attribute
        self.requests = frozenset(requests)
        self.value: Mapping[str, Any] | None = None
        self.count = 0

    def _applies(self, request: str, subrequest: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or (bool(subrequest) and f"{request}/{subrequest}" in self.requests)

    def add(self, request: str, subrequest: str, device: Mapping[str, Any], driver: str) -> bool:
        """Take the device into the set if it agrees; False leaves the state unchanged."""
        if not self._applies(request, subrequest):
            return True
        value = lookup_attribute(device, driver, self.attribute)
        if value is None:
            return False
        if self.count == 0:
            self.value, self.count = value, 1
            return True
        kind = next((k for k in _KINDS if k in value), None)
        if (
            kind is None
            or self.value is None
            or self.value.get(kind) is None
            or value[kind] != self.value[kind]
        ):
            return False
        self.count += 1
        return True

    def remove(self, request: str, subrequest: str) -> None:
        """Undo one successful `add` of the same request."""
        if self._applies(request, subrequest):
            self.count -= 1
