"""The project's own JSON Schemas for the non-built-in kinds it writes; unknown kinds fail closed."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from gpuplatform.validate.kubernetes import SchemaMissing

__all__ = ["own_schema_kinds", "own_validator"]


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


@cache
def own_validator(api_version: str, kind: str) -> jsonschema.protocols.Validator:
    """The validator of a project-schema kind (SchemaMissing for a kind nobody declared)."""
    schema = _schemas().get(_key(api_version, kind))
    if schema is None:
        raise SchemaMissing(f"no schema for {kind} {api_version}: the renderer may not emit unknown kinds")
    return jsonschema.Draft202012Validator(schema)
