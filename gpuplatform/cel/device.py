"""ResourceSlice v1 devices as CEL input, and a device set prepared once for many selectors.

A `DeviceSet` reduces every device to a *row*: the values the selectors it serves read (see
`DeviceSelector.reads`) plus whether the scheduler could build the device's CEL variable at all.
Devices with equal rows get equal verdicts, so a selector is evaluated once per distinct row, on one
representative device, however many devices share it. Only representatives are kept, so a modelled
fleet of 64,000 devices costs the memory of its few hundred distinct rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from gpuplatform.cel.quantity import QuantityError, parse_quantity
from gpuplatform.cel.runtime import EvalError
from gpuplatform.cel.semver import SemverError, parse_semver

__all__ = ["MISSING", "DeviceSet", "Read", "device_variable", "split_name"]

Read = tuple[str | None, ...]
_SCALARS = ("string", "int", "bool", "version")
_LISTS = ("strings", "ints", "bools", "versions")
_PLAIN = frozenset({"string", "int", "bool"})
MISSING = ("missing",)
_ALLOW_MULTIPLE = ("allowMultipleAllocations",)
_ALL = ("all",)


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
    if type(value) is dict and len(value) == 1:
        ((key, inner),) = value.items()
        if type(inner) in (str, int, bool, float):
            return ((key, inner),)
    if isinstance(value, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


@cache
def _parses(kind: str, raw: str) -> bool:
    """Whether `raw` is a valid semantic version (`kind` "version") or quantity ("quantity")."""
    try:
        parse_semver(raw) if kind == "version" else parse_quantity(raw)
    except (SemverError, QuantityError):
        return False
    return True


def _attribute_ok(value: Any, lists: bool) -> bool:
    """Whether `_attribute` accepts the value (one known kind, versions that parse)."""
    if not isinstance(value, Mapping):
        return False
    kinds = [k for k in (*_SCALARS, *(_LISTS if lists else ())) if k in value]
    if len(kinds) != 1:
        return False
    if kinds[0] == "version":
        return _parses("version", str(value["version"]))
    if kinds[0] == "versions":
        return all(_parses("version", str(v)) for v in value["versions"])
    return True


def _health(device: Mapping[str, Any]) -> tuple[bool | str, bool | str]:
    """Whether the device's CEL variable can be built with list attributes off, and on.

    True, or the name of the attribute or capacity that makes building it fail.
    """
    scalar: bool | str = True
    listed: bool | str = True
    for name, value in (device.get("attributes") or {}).items():
        if type(value) is dict and len(value) == 1:
            kind = next(iter(value))
            if kind in _PLAIN or (kind == "version" and _parses("version", str(value[kind]))):
                continue
        if scalar is True and not _attribute_ok(value, False):
            scalar = name
        if listed is True and not _attribute_ok(value, True):
            listed = name
    for name, value in (device.get("capacity") or {}).items():
        raw = value.get("value") if isinstance(value, Mapping) else value
        if not _parses("quantity", str(raw)):
            return name, name
    return scalar, listed


def _getter(read: Read, driver: str) -> Callable[[Mapping[str, Any]], Any]:
    """A function giving one device's hashable value of `read` (MISSING when absent)."""
    if read == _ALLOW_MULTIPLE:
        return lambda d: bool(d.get("allowMultipleAllocations"))
    if read == _ALL:
        return _freeze
    kind, domain, name = str(read[0]), read[1], read[2]
    if name is not None:
        keys = (f"{domain}/{name}", name) if domain == driver else (f"{domain}/{name}",)

        def one(device: Mapping[str, Any]) -> Any:
            values = device.get(kind) or {}
            for key in keys:
                value = values.get(key)
                if value is not None:
                    return _freeze(value)
            return MISSING

        return one

    def domain_values(device: Mapping[str, Any]) -> Any:
        values = device.get(kind) or {}
        return tuple(
            sorted(
                (split_name(k, driver), _freeze(v))
                for k, v in values.items()
                if domain is None or split_name(k, driver)[0] == domain
            )
        )

    return domain_values


class DeviceSet:
    """Devices of one driver, each reduced to a row of the values `reads` names, grouped by owner.

    `add(owner, devices)` takes the devices of one owner (a node, a ResourceSlice pool); verdicts
    are computed per row (`DeviceSelector.row_verdicts`) and counted per owner with `counts`.
    Selectors served by the set must read nothing outside `reads`.
    """

    def __init__(self, driver: str, reads: Iterable[Read]) -> None:
        self.driver = driver
        self.reads: tuple[Read, ...] = tuple(sorted(set(reads), key=repr))
        self.position = {read: i for i, read in enumerate(self.reads)}
        self._getters = [_getter(read, driver) for read in self.reads]
        self._row_ids: dict[tuple[Any, ...], int] = {}
        self.rows: list[tuple[Any, ...]] = []
        """Distinct rows: the value of each read, then `_health` (list attributes off, on)."""
        self.representatives: list[Mapping[str, Any]] = []
        self._signatures: dict[tuple[tuple[int, int], ...], int] = {}
        self.signatures: list[tuple[tuple[int, int], ...]] = []
        """Distinct owners' contents: (row, number of devices) pairs."""
        self.owners: dict[Hashable, int] = {}
        """Owner → index of its signature."""

    def __len__(self) -> int:
        sizes = [sum(n for _, n in signature) for signature in self.signatures]
        return sum(sizes[index] for index in self.owners.values())

    def add(self, owner: Hashable, devices: Iterable[Mapping[str, Any]]) -> list[int]:
        """Reduce `devices` to rows, record them under `owner` (merged if it exists); their rows."""
        devices = list(devices)
        keys = list(
            zip(*[list(map(get, devices)) for get in self._getters], map(_health, devices), strict=False)
        )
        counts: Counter[int] = Counter()
        row_ids = self._row_ids
        for key, n in Counter(keys).items():
            row = row_ids.get(key)
            if row is None:
                row = row_ids[key] = len(self.rows)
                self.rows.append(key)
                self.representatives.append(devices[keys.index(key)])
            counts[row] += n
        if owner in self.owners:
            counts.update(dict(self.signatures[self.owners[owner]]))
        signature = tuple(sorted(counts.items()))
        index = self._signatures.get(signature)
        if index is None:
            index = self._signatures[signature] = len(self.signatures)
            self.signatures.append(signature)
        self.owners[owner] = index
        return list(map(row_ids.__getitem__, keys))

    def add_like(self, owner: Hashable, like: Hashable) -> None:
        """Record `owner` as holding the same devices as `like` (a node identical in what is read)."""
        self.owners[owner] = self.owners[like]

    def signature_counts(self, alive: Sequence[bool]) -> list[int]:
        """Per signature, how many of its devices have a row marked True in `alive`."""
        return [sum(n for row, n in sig if alive[row]) for sig in self.signatures]

    def counts(self, alive: Sequence[bool]) -> dict[Hashable, int]:
        """Per owner, how many of its devices have a row marked True in `alive`."""
        per_signature = self.signature_counts(alive)
        return {owner: per_signature[index] for owner, index in self.owners.items()}
