"""Validation of rendered objects: kubernetes-validate for built-in kinds, own schemas for the rest."""

from __future__ import annotations

from typing import Any

from gpuplatform.validate.kubernetes import SchemaMissing, validate_builtin
from gpuplatform.validate.schemas import own_validator

__all__ = ["SchemaMissing", "validate_object"]


def validate_object(obj: dict[str, Any], minor: str) -> list[str]:
    """Every violation of `obj` for Kubernetes `minor`; SchemaMissing for a kind nobody declared."""
    try:
        return validate_builtin(obj, minor)
    except SchemaMissing:
        validator = own_validator(obj["apiVersion"], obj["kind"])
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}" for e in errors]
