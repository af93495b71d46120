"""The JSON Schema of a spec document (`apiVersion: gpuplatform.dev/v1alpha1`, `kind: Platform`)."""

from __future__ import annotations

from typing import Any

from gpuplatform.load.documents import API_VERSION, PLATFORM_KIND
from gpuplatform.model.platform import Platform

__all__ = ["spec_schema"]


def spec_schema() -> dict[str, Any]:
    """Envelope + the Platform model (its `name` moves to `metadata.name`)."""
    body = Platform.model_json_schema(by_alias=True)
    defs = body.pop("$defs", {})
    body["properties"].pop("name")
    body["required"] = [r for r in body.get("required", []) if r != "name"]
    body["title"] = "PlatformSpec"
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://gpuplatform.dev/schemas/v1alpha1/platform.json",
        "title": "Platform",
        "type": "object",
        "additionalProperties": False,
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": API_VERSION},
            "kind": {"const": PLATFORM_KIND},
            "metadata": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
            "spec": body,
        },
        "$defs": defs,
    }
