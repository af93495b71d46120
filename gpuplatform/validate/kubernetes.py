"""Strict validation of built-in kinds with kubernetes-validate's schemas, one validator per kind.

kubernetes-validate re-reads its schema files on every call; we load each schema once per
(kind, apiVersion, Kubernetes minor) and keep the compiled validator. Valid objects (nearly all)
are judged by jsonschema-rs, about 200 times faster than the pure-Python `jsonschema`; only an
invalid object goes through `jsonschema`, whose messages name the field.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from gpuplatform.errors import GpuplatformError

if TYPE_CHECKING:
    import jsonschema

__all__ = [
    "SchemaMissing",
    "error_messages",
    "fast_validator",
    "kubernetes_validator",
    "schema_minor",
]

_DEFINITIONS_URI = "https://kubernetes.io/api/_definitions.json"


class SchemaMissing(GpuplatformError):
    """No schema for this kind and apiVersion in the target release."""


@cache
def _schema_root() -> Path:
    """kubernetes-validate's schema folder, found without importing the package: its import pulls
    in `jsonschema` (~0.1 s), which only an invalid object needs."""
    spec = find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise SchemaMissing("kubernetes-validate is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"


@cache
def _versions() -> tuple[str, ...]:
    root = _schema_root()
    found = {
        m.group(1) for p in root.iterdir() if (m := re.match(r"^v(\d+\.\d+)\.\d+-local-strict$", p.name))
    }
    return tuple(sorted(found, key=lambda v: tuple(int(x) for x in v.split("."))))


def schema_minor(minor: str) -> str:
    """The newest schema release not newer than `minor`."""
    key = tuple(int(x) for x in minor.split("."))
    usable = [v for v in _versions() if tuple(int(x) for x in v.split(".")) <= key]
    if not usable:
        raise SchemaMissing(f"kubernetes-validate has no schemas for Kubernetes {minor}")
    return usable[-1]


def _schema_dir(minor: str) -> Path:
    return _schema_root() / f"v{schema_minor(minor)}.0-local-strict"


@cache
def _definitions(minor: str) -> Any:
    return json.loads(_schema_dir(minor).joinpath("_definitions.json").read_text())


def _schema(api_version: str, kind: str, minor: str) -> dict[str, Any]:
    found = _schema_or_none(api_version, kind, minor)
    if found is None:
        raise SchemaMissing(f"no schema for {kind} {api_version} in Kubernetes {minor}")
    return found


@cache
def _schema_or_none(api_version: str, kind: str, minor: str) -> dict[str, Any] | None:
    """The kind's schema; None when kubernetes-validate has none (remembered: a custom kind is
    looked up once, not once per object)."""
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    path = _schema_dir(minor).joinpath(f"{kind.lower()}-{group_version}.json")
    try:
        return dict(json.loads(path.read_text()))
    except FileNotFoundError:
        return None


@cache
def _rs_registry(minor: str) -> jsonschema_rs.Registry:
    return jsonschema_rs.Registry([(_DEFINITIONS_URI, _definitions(minor))])


@cache
def fast_validator(api_version: str, kind: str, minor: str) -> jsonschema_rs.Validator | None:
    """The compiled jsonschema-rs validator of `kind` in `api_version` for Kubernetes `minor`;
    None when it is not a built-in kind (no schema in kubernetes-validate)."""
    schema = _schema_or_none(api_version, kind, minor)
    if schema is None:
        return None
    return jsonschema_rs.validator_for(
        schema,
        registry=_rs_registry(minor),
        base_uri=f"https://kubernetes.io/api/{kind.lower()}-{api_version.replace('/', '-')}.json",
    )


@cache
def kubernetes_validator(api_version: str, kind: str, minor: str) -> jsonschema.protocols.Validator:
    """The `jsonschema` validator of `kind` in `api_version` for Kubernetes `minor` (for messages)."""
    import jsonschema
    from referencing import Registry, Resource

    schema = _schema(api_version, kind, minor)
    registry: Registry[Any] = Resource.from_contents(_definitions(minor)) @ Registry()
    registry = Resource.from_contents(schema) @ registry
    return jsonschema.Draft202012Validator(schema, registry=registry)


def error_messages(validator: jsonschema.protocols.Validator, obj: dict[str, Any]) -> list[str]:
    """Every violation as `<path>: <message>`, sorted by path."""
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}" for e in errors]
