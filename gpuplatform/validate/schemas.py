"""The project's own JSON Schemas for the non-built-in kinds it writes; unknown kinds fail closed."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from gpuplatform.validate.kubernetes import SchemaMissing

if TYPE_CHECKING:
    import jsonschema

__all__ = ["own_fast_validator", "own_schema_kinds", "own_validator"]


def _key(api_version: str, kind: str) -> str:
    return f"{api_version.replace('/', '_')}_{kind}".lower()


@cache
def _schemas() -> dict[str, dict[str, Any]]:
    folder = resources.files("gpuplatform.validate").joinpath("schemas")
    out: dict[str, dict[str, Any]] = {}
    for entry in folder.iterdir():
        if entry.name.endswith(".json"):
            schema = json.loads(entry.read_text())
            out[_key(schema["x-api-version"], schema["x-kind"])] = schema
    return out


def own_schema_kinds() -> list[tuple[str, str]]:
    """(apiVersion, kind) of every kind the project has a schema for."""
    return sorted((s["x-api-version"], s["x-kind"]) for s in _schemas().values())


def _own_schema(api_version: str, kind: str) -> dict[str, Any]:
    schema = _schemas().get(_key(api_version, kind))
    if schema is None:
        raise SchemaMissing(f"no schema for {kind} {api_version}: the renderer may not emit unknown kinds")
    return schema


@cache
def own_fast_validator(api_version: str, kind: str) -> jsonschema_rs.Validator:
    """The jsonschema-rs validator of a project-schema kind (SchemaMissing for an unknown kind)."""
    return jsonschema_rs.validator_for(_own_schema(api_version, kind))


@cache
def own_validator(api_version: str, kind: str) -> jsonschema.protocols.Validator:
    """The `jsonschema` validator of a project-schema kind (SchemaMissing for an unknown kind)."""
    import jsonschema

    return jsonschema.Draft202012Validator(_own_schema(api_version, kind))
