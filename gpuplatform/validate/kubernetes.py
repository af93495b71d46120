"""Strict validation of built-in kinds with kubernetes-validate's schemas, one validator per kind.

kubernetes-validate re-reads its schema files on every call; we load each schema once per
(kind, apiVersion, Kubernetes minor) and keep the compiled validator.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
from referencing import Registry, Resource

from gpuplatform.errors import GpuplatformError

__all__ = ["SchemaMissing", "kubernetes_validator", "schema_minor", "validate_builtin"]


class SchemaMissing(GpuplatformError):
    """No schema for this kind and apiVersion in the target release."""


@cache
def _versions() -> tuple[str, ...]:
    root = resources.files("kubernetes_validate").joinpath("kubernetes-json-schema")
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


def _schema_dir(minor: str) -> Any:
    root = resources.files("kubernetes_validate").joinpath("kubernetes-json-schema")
    return root.joinpath(f"v{schema_minor(minor)}.0-local-strict")


@cache
def _registry(minor: str) -> Registry[Any]:
    definitions = json.loads(_schema_dir(minor).joinpath("_definitions.json").read_text())
    return Resource.from_contents(definitions) @ Registry()


@cache
def kubernetes_validator(api_version: str, kind: str, minor: str) -> jsonschema.protocols.Validator:
    """The compiled strict validator of `kind` in `api_version` for Kubernetes `minor`."""
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    path = _schema_dir(minor).joinpath(f"{kind.lower()}-{group_version}.json")
    try:
        schema = json.loads(path.read_text())
    except FileNotFoundError:
        raise SchemaMissing(f"no schema for {kind} {api_version} in Kubernetes {minor}") from None
    registry = Resource.from_contents(schema) @ _registry(minor)
    return jsonschema.Draft202012Validator(schema, registry=registry)


def validate_builtin(obj: dict[str, Any], minor: str) -> list[str]:
    """Every schema violation of `obj` as `<path>: <message>` (empty when valid)."""
    validator = kubernetes_validator(obj["apiVersion"], obj["kind"], minor)
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}" for e in errors]
