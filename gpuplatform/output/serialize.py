"""Tree -> validated bytes, each distinct object validated and dumped once.

Objects that repeat across waves differ only in their wave label; the cache key replaces that
label with a placeholder, so a Node that is the same in eight waves is validated and dumped once
and its bytes are reused with the wave name put back.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from gpuplatform import __version__
from gpuplatform.errors import GpuplatformError
from gpuplatform.output.yaml import dump_yaml
from gpuplatform.render.meta import WAVE_LABEL, Obj
from gpuplatform.render.tree import Tree
from gpuplatform.validate import SchemaMissing, validate_object

__all__ = ["LOCK_FILE", "RenderedOutputInvalid", "Serializer", "lock_document"]

LOCK_FILE = "gpuplatform.lock.json"
_PLACEHOLDER = "gpuplatform-wave-placeholder-0"


class RenderedOutputInvalid(GpuplatformError):
    """A rendered object failed validation: a bug in a renderer, reported with the object named."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))


@dataclass
class Serializer:
    """Validates and dumps objects for one Kubernetes minor, memoised by content."""

    minor: str
    validate: bool = True
    _cache: dict[str, tuple[str, list[str]]] = field(default_factory=dict)

    def _template(self, obj: Obj) -> tuple[str, str | None]:
        labels = obj.get("metadata", {}).get("labels")
        wave = labels.get(WAVE_LABEL) if isinstance(labels, dict) else None
        if wave is None:
            return json.dumps(obj, separators=(",", ":")), None
        masked = {**obj, "metadata": {**obj["metadata"], "labels": {**labels, WAVE_LABEL: _PLACEHOLDER}}}
        return json.dumps(masked, separators=(",", ":")), wave

    def dump(self, obj: Obj) -> tuple[str, list[str]]:
        """The YAML text of `obj` and its validation errors."""
        key, wave = self._template(obj)
        hit = self._cache.get(key)
        if hit is None:
            masked: Any = json.loads(key)
            errors: list[str] = []
            if self.validate:
                try:
                    errors = validate_object(masked, self.minor)
                except SchemaMissing as exc:
                    errors = [str(exc)]
            hit = (dump_yaml(masked), errors)
            self._cache[key] = hit
        text, errors = hit
        return (text.replace(_PLACEHOLDER, wave) if wave is not None else text), errors

    def files(self, tree: Tree) -> dict[str, bytes]:
        """Every file of the tree as bytes; RenderedOutputInvalid names every invalid object."""
        out: dict[str, bytes] = {}
        problems: list[str] = []
        for path in sorted(tree.files):
            content = tree.files[path]
            if isinstance(content, str):
                out[path] = content.encode()
                continue
            texts = []
            for obj in content:
                text, errors = self.dump(obj)
                texts.append(text)
                name = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
                problems += [f"{tree.platform}/{path}: {name}: {e}" for e in errors]
            out[path] = "---\n".join(texts).encode()
        if problems:
            raise RenderedOutputInvalid(problems)
        return out


def lock_document(
    files: dict[str, bytes], *, platform: str, spec: dict[str, Any], origin: dict[str, Any]
) -> bytes:
    """`gpuplatform.lock.json`: sdk version, spec digest, origin and the sha256 of every file."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()
    doc = {
        "sdkVersion": __version__,
        "platform": platform,
        "specDigest": "sha256:" + hashlib.sha256(canonical).hexdigest(),
        **origin,
        "files": {p: "sha256:" + hashlib.sha256(b).hexdigest() for p, b in sorted(files.items())},
    }
    return (json.dumps(doc, indent=2) + "\n").encode()
