"""Overlay merge semantics: mappings merge, named lists merge by name, other lists replace."""

from __future__ import annotations

from gpuplatform.load.merge import merge_spec


def test_mappings_merge_recursively_and_inputs_are_untouched() -> None:
    base = {"a": {"b": 1, "c": 2}, "d": 3}
    overlay = {"a": {"c": 20, "e": 5}}
    assert merge_spec(base, overlay) == {"a": {"b": 1, "c": 20, "e": 5}, "d": 3}
    assert base == {"a": {"b": 1, "c": 2}, "d": 3}


def test_named_lists_merge_by_name_keeping_base_order_and_appending_new() -> None:
    base = {"pools": [{"name": "a", "nodes": ["n1"]}, {"name": "b", "nodes": ["n2"]}]}
    overlay = {"pools": [{"name": "b", "nodes": ["x2"]}, {"name": "c", "nodes": ["n3"]}]}
    assert merge_spec(base, overlay)["pools"] == [
        {"name": "a", "nodes": ["n1"]},
        {"name": "b", "nodes": ["x2"]},
        {"name": "c", "nodes": ["n3"]},
    ]


def test_other_lists_and_scalars_replace() -> None:
    assert merge_spec({"engines": ["argocd"]}, {"engines": ["flux"]}) == {"engines": ["flux"]}
    assert merge_spec({"a": {"b": 1}}, {"a": None}) == {"a": None}
