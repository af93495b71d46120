"""`gpuplatform schema`: the JSON Schema an editor checks a spec or an overlay with."""

from __future__ import annotations

import json

from gpuplatform.load.schema import overlay_schema, spec_schema

__all__ = ["schema_text"]


def schema_text(kind: str) -> str:
    """The schema of `kind: Platform` (a spec) or `kind: PlatformOverlay`, as indented JSON."""
    return json.dumps(spec_schema() if kind == "Platform" else overlay_schema(), indent=2)
