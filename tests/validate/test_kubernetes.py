"""Strict built-in validation, one compiled validator per kind and release."""

from __future__ import annotations

import pytest

from gpuplatform.validate import SchemaMissing, validate_object
from gpuplatform.validate.kubernetes import kubernetes_validator, schema_minor


def test_validators_are_built_once_per_kind_and_release() -> None:
    assert kubernetes_validator("v1", "Node", "1.36") is kubernetes_validator("v1", "Node", "1.36")
    assert kubernetes_validator("v1", "Node", "1.36") is not kubernetes_validator("v1", "Node", "1.34")


def test_strict_mode_rejects_unknown_fields() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labelz": {}}}
    assert validate_object(node, "1.36") == [
        "metadata: Additional properties are not allowed ('labelz' was unexpected)"
    ]


def test_device_class_v1_exists_from_134() -> None:
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "c"}, "spec": {}}
    assert validate_object(cls, "1.34") == []
    with pytest.raises(SchemaMissing):
        validate_object(cls, "1.31")


def test_newer_minor_than_the_schemas_uses_the_newest() -> None:
    assert schema_minor("1.99") >= "1.36"
