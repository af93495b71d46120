"""Each ResourceSlice's devices, summed up by kind: what the gate programs read instead of devices.

The programs judge a node's devices by kind (type, product, MIG profile, memory): a node publishes
a handful of kinds and thousands of devices, and 2,000 DRA nodes publish ~30 MB of ResourceSlices.
So a slice's `spec.devices` is replaced by `spec.kinds`, one entry per distinct kind in order of
first appearance:

    {type, productName, profile, memory, names: [device names], uuids: [their uuid or null]}

A slice with `perDeviceNodeSelection: true` also keeps `spec.deviceNodes`: each distinct node
selection of its devices (`nodeName`, `nodeSelector`, `allNodes`), so that allocator exclusivity
sees every node its devices reach.

The gate Job computes it in jq (`summarised` in `gates/programs.py`), on what kubectl read.
Offline, `summarise` computes it in Python before jq parses the snapshot: the programs then read
the same summary in both places. The two are held equal by tests (every gate scenario is judged by
the Job's script and offline; a property test compares the summaries on generated slices).

A slice whose `spec.devices` is not a list is left as it is, in both. Offline, a device whose read
fields do not have the API's types (strings) is refused with the field it is in: the API server
never returns one, and jq would fail on it.
"""

from __future__ import annotations

import json
from typing import Any

from gpuplatform.errors import InputError

__all__ = ["summarise"]

#: (attribute, field) of a device read into its kind, then the uuid; all strings in the API.
_KIND = (
    ("attributes", "type"),
    ("attributes", "productName"),
    ("attributes", "profile"),
    ("capacity", "memory"),
)
_UUID = ("attributes", "uuid")
_FIELD = {"attributes": "string", "capacity": "value"}


class _Unserved(ValueError):
    """A field whose type the API would never serve: (field, what the API serves there)."""


def _read(device: dict[str, Any], where: tuple[str, str], at: str) -> str | None:
    """`.<where[0]>.<where[1]>.string` (or `.value` for a capacity), as jq reads it; None when absent."""
    group, name = where
    values = device.get(group)
    if values is None:
        return None
    if not isinstance(values, dict):
        raise _Unserved(f"{at}.{group}", "an object")
    entry = values.get(name)
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise _Unserved(f"{at}.{group}.{name}", "an object")
    value = entry.get(_FIELD[group])
    if value is not None and not isinstance(value, str):
        raise _Unserved(f"{at}.{group}.{name}.{_FIELD[group]}", "a string")
    return value


def _kind(key: tuple[str | None, ...]) -> dict[str, Any]:
    return {
        "type": key[0],
        "productName": key[1],
        "profile": key[2],
        "memory": key[3],
        "names": [],
        "uuids": [],
    }


_ABSENT: dict[str, Any] = {}


def _plain_kinds(devices: list[Any]) -> list[dict[str, Any]] | None:
    """The kinds of devices as the driver publishes them (every read object present or absent,
    names and uuids strings, read values strings); None for any other shape (`_kinds` judges it)."""
    kinds: dict[tuple[str | None, ...], dict[str, Any]] = {}
    try:
        for device in devices:
            attributes = device.get("attributes", _ABSENT)
            key = (
                attributes.get("type", _ABSENT).get("string"),
                attributes.get("productName", _ABSENT).get("string"),
                attributes.get("profile", _ABSENT).get("string"),
                device.get("capacity", _ABSENT).get("memory", _ABSENT).get("value"),
            )
            name = device.get("name")
            uuid = attributes.get("uuid", _ABSENT).get("string")
            if type(name) is not str or type(uuid) is not str:
                return None
            kind = kinds.get(key)
            if kind is None:
                if not all(value is None or type(value) is str for value in key):
                    return None
                kind = kinds[key] = _kind(key)
            kind["names"].append(name)
            kind["uuids"].append(uuid)
    except AttributeError:  # a read object that is null or not an object
        return None
    return list(kinds.values())


def _kinds(devices: list[Any], at: str) -> list[dict[str, Any]]:
    """The kinds of `devices` (`at` is their field): `_plain_kinds`, or read field by field."""
    plain = _plain_kinds(devices)
    if plain is not None:
        return plain
    kinds: dict[tuple[str | None, ...], dict[str, Any]] = {}
    for j, device in enumerate(devices):
        here = f"{at}[{j}]"
        if not isinstance(device, dict):
            raise _Unserved(here, "an object")
        name = device.get("name")
        if name is not None and not isinstance(name, str):
            raise _Unserved(f"{here}.name", "a string")
        key = tuple(_read(device, where, here) for where in _KIND)
        kind = kinds.get(key)
        if kind is None:
            kind = kinds[key] = _kind(key)
        kind["names"].append(name)
        kind["uuids"].append(_read(device, _UUID, here))
    return list(kinds.values())


_NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes")


def _device_nodes(devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`device_nodes`: the distinct node selections of `devices`, in order of first appearance."""
    out: dict[str, dict[str, Any]] = {}
    for device in devices:
        selection = {key: device[key] for key in _NODE_SELECTION if device.get(key) is not None}
        out.setdefault(json.dumps(selection, sort_keys=True), selection)
    return list(out.values())


def summarise(slices: list[dict[str, Any]], origin: str) -> list[dict[str, Any]]:
    """`slices` with each one's devices summed up by kind (`origin` names the file in errors)."""
    out = []
    for i, item in enumerate(slices):
        spec = item.get("spec")
        if not isinstance(spec, dict) or not isinstance(spec.get("devices"), list):
            out.append(item)
            continue
        try:
            kinds = _kinds(spec["devices"], f"items[{i}].spec.devices")
        except _Unserved as exc:
            field, expected = exc.args
            raise InputError.single(origin, field, f"expected {expected}, as the API serves it") from None
        summary = {key: value for key, value in spec.items() if key != "devices"} | {"kinds": kinds}
        if spec.get("perDeviceNodeSelection") is True:
            summary["deviceNodes"] = _device_nodes(spec["devices"])
        out.append(item | {"spec": summary})
    return out
