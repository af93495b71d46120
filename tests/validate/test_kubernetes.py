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


def _broken(obj: dict[str, object]) -> list[dict[str, object]]:
    """Copies of `obj` with an unknown field, and a label of the wrong type."""
    meta = dict(obj.get("metadata") or {})  # type: ignore[call-overload]
    return [
        {**obj, "metadata": {**meta, "labelz": {}}},
        {**obj, "metadata": {**meta, "labels": {"a": 1}}},
        {**obj, "spek": {}},
    ]


def test_the_fast_validator_agrees_with_jsonschema_on_every_rendered_kind() -> None:
    # GIVEN every object the stacks render, and broken copies of one object per kind
    from gpuplatform.commands.synth import render_trees
    from gpuplatform.load.stacks import discover_stacks, load_stack
    from gpuplatform.validate.kubernetes import fast_validator
    from gpuplatform.validate.schemas import own_fast_validator, own_validator
    from tests.conftest import REPO

    checked = 0
    for stack in discover_stacks(REPO / "stacks"):
        loaded = load_stack(stack)
        for tree in render_trees(loaded).values():
            kinds: set[tuple[str, str]] = set()
            for content in tree.files.values():
                for obj in content if isinstance(content, list) else []:
                    key = (obj["apiVersion"], obj["kind"])
                    samples = [obj] + (_broken(obj) if key not in kinds else [])
                    kinds.add(key)
                    builtin = fast_validator(*key, "1.36")
                    if builtin is not None:
                        fast, slow = builtin, kubernetes_validator(*key, "1.36")
                    else:
                        fast, slow = own_fast_validator(*key), own_validator(*key)
                    # THEN both validators judge each the same way
                    for sample in samples:
                        assert fast.is_valid(sample) == (not list(slow.iter_errors(sample))), key
                        checked += 1
    assert checked > 100
