"""Reading fields of snapshot objects: a missing field is empty, a malformed one an InputError naming
the file and the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuplatform.errors import InputError

__all__ = ["mapping_at", "mappings_at"]


def _value(obj: Mapping[str, Any], path: str) -> Any:
    value: Any = obj
    for key in path.split("."):
        if not isinstance(value, Mapping):
            return value
        value = value.get(key)
        if value is None:
            return None
    return value


def mapping_at(obj: Mapping[str, Any], path: str, file: str, loc: str) -> Mapping[str, Any]:
    """The mapping at the dotted `path` of `obj` ({} when absent)."""
    value = _value(obj, path)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError.single(file, f"{loc}.{path}", "expected a mapping")
    return value


def mappings_at(obj: Mapping[str, Any], path: str, file: str, loc: str) -> list[Mapping[str, Any]]:
    """The list of mappings at the dotted `path` of `obj` ([] when absent)."""
    value = _value(obj, path)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise InputError.single(file, f"{loc}.{path}", "expected a list of mappings")
    return value
