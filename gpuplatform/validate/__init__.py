"""Validation of rendered objects: kubernetes-validate for built-in kinds, own schemas for the rest."""

from __future__ import annotations

from typing import Any

from gpuplatform.validate.kubernetes import SchemaMissing, error_messages, validate_builtin
from gpuplatform.validate.schemas import own_fast_validator, own_validator

__all__ = ["SchemaMissing", "validate_object"]


def validate_object(obj: dict[str, Any], minor: str) -> list[str]:
    """Every violation of `obj` for Kubernetes `minor`; SchemaMissing for a kind nobody declared."""
    try:
        return validate_builtin(obj, minor)
    except SchemaMissing:
        api_version, kind = obj["apiVersion"], obj["kind"]
        if own_fast_validator(api_version, kind).is_valid(obj):
            return []
    return error_messages(own_validator(api_version, kind), obj)
