"""ResourceClaims and DeviceClasses as the allocator reads them (resource.k8s.io/v1 shapes).

Parsing keeps what the stable allocator looks at; problems the allocator reports itself
(unknown selector type, allocation mode or constraint, missing class name) are kept as data and
raised by `Allocator.allocate` in upstream order (k8s.io/dynamic-resource-allocation
structured/internal/stable/allocator_stable.go, `validateDeviceRequest`, kubernetes-1.36.1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ALLOCATION_RESULTS_MAX_SIZE",
    "Claim",
    "ClaimRequest",
    "Constraint",
    "DeviceClass",
    "Request",
    "parse_claim",
    "parse_class",
]

#: resourceapi.AllocationResultsMaxSize: at most 32 devices per claim.
ALLOCATION_RESULTS_MAX_SIZE = 32


@dataclass(frozen=True)
class Request:
    """An `exactly` request or one `firstAvailable` subrequest."""

    name: str
    class_name: str
    mode: str = "ExactCount"
    count: int = 1
    admin_access: bool | None = None
    selectors: tuple[str | None, ...] = ()
    """CEL expressions; None stands for a selector of a type other than `cel`."""
    tolerations: tuple[Mapping[str, Any], ...] = ()

    @property
    def wants_admin(self) -> bool:
        return bool(self.admin_access)


@dataclass(frozen=True)
class ClaimRequest:
    """One entry of `spec.devices.requests`: `exactly` or `firstAvailable`."""

    name: str
    exactly: Request | None
    first_available: tuple[Request, ...] = ()


@dataclass(frozen=True)
class Constraint:
    """`spec.devices.constraints[]`; `match_attribute` None is a constraint type we do not know."""

    match_attribute: str | None
    requests: tuple[str, ...] = ()


@dataclass(frozen=True)
class Claim:
    """A ResourceClaim's `spec.devices` and `metadata`."""

    name: str
    namespace: str = ""
    requests: tuple[ClaimRequest, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    config: tuple[Mapping[str, Any], ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True)
class DeviceClass:
    """A DeviceClass: its selectors, config and the extended resource it serves."""

    name: str
    selectors: tuple[str | None, ...] = ()
    config: tuple[Mapping[str, Any], ...] = ()
    extended_resource_name: str = ""


def _selectors(raw: Sequence[Mapping[str, Any]] | None) -> tuple[str | None, ...]:
    return tuple(
        (s.get("cel") or {}).get("expression") if isinstance(s.get("cel"), Mapping) else None
        for s in raw or ()
    )


def _request(name: str, body: Mapping[str, Any], admin: bool) -> Request:
    return Request(
        name=name,
        class_name=str(body.get("deviceClassName") or ""),
        mode=str(body.get("allocationMode") or "ExactCount"),
        count=int(body.get("count", 1)),
        admin_access=body.get("adminAccess") if admin else None,
        selectors=_selectors(body.get("selectors")),
        tolerations=tuple(body.get("tolerations") or ()),
    )


def parse_claim(obj: Mapping[str, Any]) -> Claim:
    """A claim from a ResourceClaim (or a ResourceClaimTemplate's `spec`) dict."""
    meta = obj.get("metadata") or {}
    devices = (obj.get("spec") or {}).get("devices") or {}
    requests = []
    for raw in devices.get("requests") or ():
        name = str(raw.get("name", ""))
        exactly = raw.get("exactly")
        subs = tuple(_request(str(s.get("name", "")), s, False) for s in raw.get("firstAvailable") or ())
        requests.append(ClaimRequest(name, _request(name, exactly, True) if exactly else None, subs))
    constraints = tuple(
        Constraint(c.get("matchAttribute"), tuple(c.get("requests") or ()))
        for c in devices.get("constraints") or ()
    )
    return Claim(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        requests=tuple(requests),
        constraints=constraints,
        config=tuple(devices.get("config") or ()),
    )


def parse_class(obj: Mapping[str, Any]) -> DeviceClass:
    """A DeviceClass dict."""
    spec = obj.get("spec") or {}
    return DeviceClass(
        name=str((obj.get("metadata") or {}).get("name", "")),
        selectors=_selectors(spec.get("selectors")),
        config=tuple(spec.get("config") or ()),
        extended_resource_name=str(spec.get("extendedResourceName") or ""),
    )
