"""JSON Schemas of a spec (`kind: Platform`) and of an overlay (`kind: PlatformOverlay`).

Titles and descriptions come from the model's docstrings (class docstrings for objects, field
docstrings for properties), so editors show the same help as the code. An overlay is a partial
spec: nothing is required, and an item of a list merged by name may carry `$add: true`.
"""

from __future__ import annotations

import ast
import copy
import inspect
from collections.abc import Iterator
from functools import cache
from typing import Any, get_args

from pydantic import BaseModel

from gpuplatform.load.documents import API_VERSION, OVERLAY_KIND, PLATFORM_KIND
from gpuplatform.load.merge import ADD_MARKER, REMOVE_MARKER
from gpuplatform.model.platform import Platform

__all__ = ["YAML_READING", "overlay_schema", "schema_objects", "spec_schema"]

_ADD = {
    "title": "Add this item",
    "description": "Marks an overlay item whose name is not in the base as an addition (appended); "
    "without it an unknown name is refused. Removed before validation.",
    "const": True,
}
_REMOVE = {
    "title": "Remove this item",
    "description": "Removes the base's item of this name (the overlay item has only its name). Removed before "
    "validation.",
    "const": True,
}


#: How a spec or overlay file is read: what its plain scalars mean.
YAML_READING = (
    "A YAML file is read as Helm and Kubernetes read it (sigs.k8s.io/yaml, go-yaml v2), not as YAML 1.1: "
    "10:30 and 2026-12-04 are strings; 0o17, 017, 0x1F and 1e3 are numbers; y, yes, on and their "
    "n, no, off twins are booleans, as Helm reads them (quote them for strings); .inf and .nan are refused; "
    "mapping keys are strings."
)


def _title(description: str) -> str:
    """The first clause of a docstring's first sentence."""
    first = description.split("\n\n", 1)[0].replace("\n", " ")
    for stop in (". ", ": ", "; "):
        first = first.split(stop, 1)[0]
    return first.rstrip(".")


def _titled(node: Any) -> None:
    """Every property with a description gets its first sentence as title (pydantic's generated
    titles, `Gpuspernode`, are dropped)."""
    if isinstance(node, dict):
        for prop in (node.get("properties") or {}).values():
            prop.pop("title", None)
            if "description" in prop:
                prop["title"] = _title(prop["description"])
        for value in node.values():
            _titled(value)
    elif isinstance(node, list):
        for value in node:
            _titled(value)


def _envelope(
    kind: str, spec: dict[str, Any], defs: dict[str, Any], *, required: list[str]
) -> dict[str, Any]:
    slug = kind.lower()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://gpuplatform.dev/schemas/v1alpha1/{slug}.json",
        "title": kind,
        "description": YAML_READING,
        "type": "object",
        "additionalProperties": False,
        "required": required,
        "properties": {
            "apiVersion": {"const": API_VERSION},
            "kind": {"const": kind},
            "metadata": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name"] if kind == PLATFORM_KIND else [],
                "properties": {
                    "name": {
                        "type": "string",
                        "pattern": "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
                        "title": "Platform name",
                        "description": "Names the platform (the folder under dist/); an overlay's names the result.",
                    },
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
            "spec": spec,
        },
        "$defs": defs,
    }


def schema_objects(node: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object in a schema `node` (itself included), depth first."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from schema_objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from schema_objects(value)


def _array_item_refs(node: Any) -> list[str]:
    """`$ref`s used as the items of an array anywhere in `node`."""
    return [
        ref
        for obj in schema_objects(node)
        if obj.get("type") == "array" and isinstance(ref := obj.get("items", {}).get("$ref"), str)
    ]


@cache
def _field_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """The docstrings of the fields `model` itself declares: the string right after `name: type`."""
    try:
        body = ast.parse(inspect.getsource(model)).body[0]
    except (OSError, TypeError):  # no source (a frozen or generated class): no descriptions
        return {}
    assert isinstance(body, ast.ClassDef)
    docs: dict[str, str] = {}
    for statement, following in zip(body.body, body.body[1:], strict=False):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _nested_models(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in get_args(annotation):
        yield from _nested_models(arg)


def _describe(model: type[BaseModel], done: set[type[BaseModel]]) -> None:
    """Describe the models `model` nests, then its own fields (from the class declaring each), then
    rebuild it so that its schema carries them: what pydantic's `use_attribute_docstrings` does."""
    if model in done:
        return
    done.add(model)
    for info in model.model_fields.values():
        for nested in _nested_models(info.annotation):
            _describe(nested, done)
    declared = [c for c in model.__mro__ if issubclass(c, BaseModel) and c is not BaseModel]
    for name, info in model.model_fields.items():
        owner = next((c for c in declared if name in inspect.get_annotations(c)), None)
        if info.description is None and owner is not None:
            info.description = _field_docstrings(owner).get(name)
    model.model_rebuild(force=True)


@cache
def _described_platform() -> type[Platform]:
    """Platform, its fields and the models it nests described by their docstrings (once)."""
    _describe(Platform, set())
    return Platform


def spec_schema() -> dict[str, Any]:
    """Envelope + the Platform model (its `name` moves to `metadata.name`)."""
    body = _described_platform().model_json_schema(by_alias=True)
    defs = body.pop("$defs", {})
    body["properties"].pop("name")
    body["required"] = [r for r in body.get("required", []) if r != "name"]
    body["title"] = "PlatformSpec"
    schema = _envelope(PLATFORM_KIND, body, defs, required=["apiVersion", "kind", "metadata", "spec"])
    _titled(schema)
    return schema


def overlay_schema() -> dict[str, Any]:
    """The spec schema made partial: nothing required, `$add` and `$remove` on items of lists merged by name."""
    platform = spec_schema()
    spec, defs = platform["properties"]["spec"], copy.deepcopy(platform["$defs"])
    spec = copy.deepcopy(spec)
    items = {ref.rsplit("/", 1)[1] for ref in _array_item_refs([spec, defs])}
    for name, node in (("", spec), *defs.items()):
        node.pop("required", None)
        if name in items and "name" in node.get("properties", {}):
            node["properties"][ADD_MARKER] = dict(_ADD)
            node["properties"][REMOVE_MARKER] = dict(_REMOVE)
    spec["title"] = "PlatformOverlaySpec"
    return _envelope(OVERLAY_KIND, spec, defs, required=["apiVersion", "kind"])
