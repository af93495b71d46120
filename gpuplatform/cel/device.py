"""ResourceSlice v1 devices as CEL input, and a column store of them for memoised matching."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpuplatform.cel.quantity import QuantityError, parse_quantity
from gpuplatform.cel.runtime import EvalError
from gpuplatform.cel.semver import SemverError, parse_semver

__all__ = ["DeviceSet", "device_variable", "split_name"]

_SCALARS = ("string", "int", "bool", "version")
_LISTS = ("strings", "ints", "bools", "versions")
MISSING = ("missing",)


class _DomainMap(dict[str, Any]):
    """Attribute or capacity domains: an unknown domain reads as an empty map."""

    missing: dict[str, Any] = {}


def split_name(name: str, driver: str) -> tuple[str, str]:
    """`productName` → (driver, productName); `resource.kubernetes.io/pcieRoot` → its own domain."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _attribute(name: str, value: Mapping[str, Any], lists: bool) -> Any:
    kinds = [k for k in (*_SCALARS, *(_LISTS if lists else ())) if k in value]
    if len(kinds) != 1:
        raise EvalError(f"attribute {name}: unsupported attribute value")
    kind, raw = kinds[0], value[kinds[0]]
    try:
        if kind == "version":
            return parse_semver(str(raw))
        if kind == "versions":
            return [parse_semver(str(v)) for v in raw]
    except SemverError as exc:
        raise EvalError(f"attribute {name}: parse semantic version: {exc}") from None
    return list(raw) if kind in _LISTS else raw


def device_variable(driver: str, device: Mapping[str, Any], lists: bool) -> dict[str, Any]:
    """The `device` variable the scheduler builds for one device (compile.go `DeviceMatches`)."""
    attributes: _DomainMap = _DomainMap()
    for name, value in (device.get("attributes") or {}).items():
        domain, ident = split_name(name, driver)
        attributes.setdefault(domain, {})[ident] = _attribute(name, value, lists)
    capacity: _DomainMap = _DomainMap()
    for name, value in (device.get("capacity") or {}).items():
        domain, ident = split_name(name, driver)
        raw = value.get("value") if isinstance(value, Mapping) else value
        try:
            capacity.setdefault(domain, {})[ident] = parse_quantity(str(raw))
        except QuantityError as exc:
            raise EvalError(f"capacity {name}: {exc}") from None
    return {
        "driver": driver,
        "allowMultipleAllocations": bool(device.get("allowMultipleAllocations") or False),
        "attributes": attributes,
        "capacity": capacity,
    }


def _freeze(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if isinstance(inner, str | int | float | bool):
            return ((key, inner),)
    if isinstance(value, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


class DeviceSet:
    """Devices of one driver, flattened once; `column()` gives one hashable value per device."""

    def __init__(self, driver: str, devices: Sequence[Mapping[str, Any]]) -> None:
        self.driver = driver
        self.devices = list(devices)
        self._flat: list[dict[tuple[str, str, str], Any]] = []
        names: dict[tuple[str, str], tuple[str, str, str]] = {}
        for device in self.devices:
            flat: dict[tuple[str, str, str], Any] = {}
            for kind in ("attributes", "capacity"):
                for name, value in (device.get(kind) or {}).items():
                    triple = names.get((kind, name))
                    if triple is None:
                        triple = names[(kind, name)] = (kind, *split_name(name, driver))
                    flat[triple] = _freeze(value)
            self._flat.append(flat)
        self._columns: dict[tuple[Any, ...], list[Any]] = {}

    def __len__(self) -> int:
        return len(self.devices)

    def column(self, read: tuple[Any, ...]) -> list[Any]:
        """Per-device values of one read: a (kind, domain, name) triple, a whole domain, or everything."""
        cached = self._columns.get(read)
        if cached is not None:
            return cached
        values: list[Any]
        if read == ("allowMultipleAllocations",):
            values = [bool(d.get("allowMultipleAllocations")) for d in self.devices]
        elif read == ("all",):
            values = [_freeze(d) for d in self.devices]
        elif read[2] is not None:
            triple = (str(read[0]), str(read[1]), str(read[2]))
            values = [flat.get(triple, MISSING) for flat in self._flat]
        else:
            kind, domain = read[0], read[1]
            values = [
                tuple(sorted((k, v) for k, v in flat.items() if k[0] == kind and domain in (None, k[1])))
                for flat in self._flat
            ]
        self._columns[read] = values
        return values

    def scalar_problems(self) -> list[Any]:
        """Per device: whether it has a list-valued attribute (an error while list attributes are off)."""
        key = ("problems",)
        if key not in self._columns:
            self._columns[key] = [
                any(k[0] == "attributes" and v and v[0][0] in _LISTS for k, v in flat.items())
                for flat in self._flat
            ]
        return self._columns[key]
