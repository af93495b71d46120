"""Validation of rendered objects: kubernetes-validate for built-in kinds, own schemas for the rest."""

from __future__ import annotations

from typing import Any

from gpuplatform.validate.kubernetes import (
    SchemaMissing,
    error_messages,
    fast_validator,
    kubernetes_validator,
)
from gpuplatform.validate.schemas import own_fast_validator, own_validator

__all__ = ["SchemaMissing", "validate_object"]


def validate_object(obj: dict[str, Any], minor: str) -> list[str]:
    """Every violation of `obj` for Kubernetes `minor` (built-in kinds by kubernetes-validate's
    schemas, the rest by the project's own); SchemaMissing for a kind nobody declared."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    builtin = fast_validator(api_version, kind, minor)
    if builtin is not None:
        return (
            []
            if builtin.is_valid(obj)
            else error_messages(kubernetes_validator(api_version, kind, minor), obj)
        )
    if own_fast_validator(api_version, kind).is_valid(obj):
        return []
    return error_messages(own_validator(api_version, kind), obj)
