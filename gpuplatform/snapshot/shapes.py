"""The fields every command reads from a snapshot, checked once, when a kind is read.

The API server serves each field with one type; a snapshot that holds another (an `allocatable`
that is a list, a device memory `"abc"`, `devices` as a mapping, a pod without `metadata`) was
not written by kubectl, and every command that reads it (`evidence`, `inventory`, `init`,
`capacity`) refuses it the same way: `error: <file>:items[i].<field>: ...`, exit 2. A field that
is absent is the reader's business (a node without `status` is unknown to the gates).

`SHAPES` is the tree of read fields per kind: `STR`, `BOOL`, `SCALAR` (a string or a number),
`QUANTITY` (one Kubernetes parses: a device's capacity, which the gates compute with), a dict (an object: those fields of it), a one-element list
(a list of that shape), `MapOf(shape)` (an object whose every value has that shape).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from gpuplatform.cel.quantity import QuantityError, parse_quantity
from gpuplatform.errors import InputError, Problem

__all__ = ["SHAPES", "check_items"]

STR = "a string"
BOOL = "a boolean"
SCALAR = "a string or a number"
QUANTITY = "a quantity"


@dataclass(frozen=True)
class MapOf:
    """An object whose every value has `shape`."""

    shape: Shape


Shape = str | MapOf | dict[str, "Shape"] | list["Shape"]

_LABELS = MapOf(STR)
_META: dict[str, Shape] = {
    "name": STR,
    "namespace": STR,
    "uid": STR,
    "labels": _LABELS,
    "annotations": _LABELS,
    "ownerReferences": [{"kind": STR, "name": STR, "uid": STR}],
}
_POD_META: dict[str, Shape] = {
    "name": STR,
    "namespace": STR,
    "labels": _LABELS,
    "ownerReferences": [{"kind": STR}],
}
_CONTAINERS: list[Shape] = [{"resources": {"limits": MapOf(SCALAR), "requests": MapOf(SCALAR)}}]

SHAPES: dict[str, dict[str, Shape]] = {
    "nodes": {
        "metadata": _META,
        "spec": {"taints": [{"key": STR, "value": STR, "effect": STR}]},
        "status": {"allocatable": MapOf(SCALAR), "capacity": MapOf(SCALAR)},
    },
    "pods": {
        "metadata": _POD_META,
        "spec": {"nodeName": STR, "nodeSelector": _LABELS, "containers": _CONTAINERS},
        "status": {"phase": STR, "containerStatuses": [{"ready": BOOL}]},
    },
    "resourceslices": {
        "metadata": _META,
        "spec": {
            "driver": STR,
            "nodeName": STR,
            "devices": [{"name": STR, "attributes": MapOf({}), "capacity": MapOf({"value": QUANTITY})}],
        },
    },
    "resourceclaims": {
        "metadata": _META,
        "status": {"allocation": {"devices": {"results": [{"driver": STR, "pool": STR, "device": STR}]}}},
    },
}
_DEFAULT: dict[str, Shape] = {"metadata": _META}
_REQUIRED = ("metadata",)
_MAX_PROBLEMS = 20


@lru_cache(maxsize=4096)
def _quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _problem(value: Any, shape: Shape) -> str | None:
    """What is wrong with `value` at a leaf (None when it has the shape)."""
    if shape is STR:
        return None if type(value) is str else "expected a string, as the API serves it"
    if shape is BOOL:
        return None if type(value) is bool else "expected a boolean, as the API serves it"
    if type(value) in (int, float) or (type(value) is str and (shape is SCALAR or _quantity(value))):
        return None
    if shape is SCALAR:
        return "expected a string or a number, as the API serves it"
    return f"expected a quantity (e.g. 80Gi), not {value!r}"


def _compile(shape: Shape) -> Callable[[Any], bool]:
    """A quick test that a value has `shape` (no locations built; `_walk` finds them after)."""
    if isinstance(shape, dict):
        fields = [(name, _compile(inner)) for name, inner in shape.items()]

        def obj(value: Any) -> bool:
            if value is None:
                return True
            if type(value) is not dict:
                return False
            for name, ok in fields:
                inner = value.get(name)
                if inner is not None and not ok(inner):
                    return False
            return True

        return obj
    if isinstance(shape, list):
        item = _compile(shape[0])
        return lambda value: value is None or (type(value) is list and all(map(item, value)))
    if isinstance(shape, MapOf):
        entry = _compile(shape.shape)
        return lambda value: value is None or (type(value) is dict and all(map(entry, value.values())))
    if shape is STR:
        return lambda value: value is None or type(value) is str
    return lambda value: value is None or _problem(value, shape) is None


def _walk(value: Any, shape: Shape, loc: str, out: list[str]) -> None:
    """Append `(loc, message)` texts for every field of `value` that does not have `shape`."""
    if value is None or len(out) >= _MAX_PROBLEMS:
        return
    if isinstance(shape, dict):
        if type(value) is not dict:
            out.append(f"{loc}\0expected an object, as the API serves it")
            return
        for name, inner in shape.items():
            if name in value:
                _walk(value[name], inner, f"{loc}.{name}", out)
    elif isinstance(shape, list):
        if type(value) is not list:
            out.append(f"{loc}\0expected a list, as the API serves it")
            return
        for i, item in enumerate(value):
            _walk(item, shape[0], f"{loc}[{i}]", out)
    elif isinstance(shape, MapOf):
        if type(value) is not dict:
            out.append(f"{loc}\0expected an object, as the API serves it")
            return
        for key, item in value.items():
            _walk(item, shape.shape, f"{loc}[{key}]" if "." in key or "/" in key else f"{loc}.{key}", out)
    else:
        problem = _problem(value, shape)
        if problem is not None:
            out.append(f"{loc}\0{problem}")


_QUICK = {kind: _compile(shape) for kind, shape in SHAPES.items()}
_QUICK_DEFAULT = _compile(_DEFAULT)


def check_items(kind: str, items: list[Any], file: str, start: int = 0) -> None:
    """Refuse (InputError naming `file` and each field) items whose read fields the API never serves;
    `start` is the index of the first of `items` in the file (a streamed batch)."""
    shape = SHAPES.get(kind, _DEFAULT)
    quick = _QUICK.get(kind, _QUICK_DEFAULT)
    found: list[str] = []
    for i, item in enumerate(items, start):
        here = f"items[{i}]"
        if type(item) is not dict:
            found.append(f"{here}\0expected an object")
        else:
            missing = [f"{here}.{name}\0missing" for name in _REQUIRED if type(item.get(name)) is not dict]
            found += missing
            if not missing and not quick(item):
                _walk(item, shape, here, found)
        if len(found) >= _MAX_PROBLEMS:
            break
    if found:
        problems = [Problem(file, loc, "", message) for loc, message in (f.split("\0", 1) for f in found)]
        raise InputError(problems)
