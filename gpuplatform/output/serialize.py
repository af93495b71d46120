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
from gpuplatform.output.yaml import dump_many, dump_yaml
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


def _masked(obj: Obj) -> tuple[Obj, str | None]:
    """`obj` with its wave label replaced by the placeholder, and the wave it had."""
    labels = obj.get("metadata", {}).get("labels")
    wave = labels.get(WAVE_LABEL) if isinstance(labels, dict) else None
    if wave is None:
        return obj, None
    return {**obj, "metadata": {**obj["metadata"], "labels": {**labels, WAVE_LABEL: _PLACEHOLDER}}}, wave


def _shape_key(obj: Obj) -> str:
    """Validation key: the schemas constrain no name, so objects differing only in name share it."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "name" in meta:
        obj = {**obj, "metadata": {**meta, "name": _PLACEHOLDER}}
    return json.dumps(obj, separators=(",", ":"))


@dataclass
class Serializer:
    """Validates and dumps objects for one Kubernetes minor, memoised by content."""

    minor: str
    validate: bool = True
    _texts: dict[str, str] = field(default_factory=dict)
    _errors: dict[str, list[str]] = field(default_factory=dict)
    _shape_errors: dict[str, list[str]] = field(default_factory=dict)

    def _check(self, key: str, masked: Obj) -> list[str]:
        errors = self._errors.get(key)
        if errors is None:
            errors = self._errors[key] = self._check_shape(masked) if self.validate else []
        return errors

    def _check_shape(self, masked: Obj) -> list[str]:
        shape = _shape_key(masked)
        errors = self._shape_errors.get(shape)
        if errors is None:
            try:
                errors = validate_object(masked, self.minor)
            except SchemaMissing as exc:
                errors = [str(exc)]
            self._shape_errors[shape] = errors
        return errors

    def dump(self, obj: Obj) -> tuple[str, list[str]]:
        """The YAML text of `obj` and its validation errors."""
        masked, wave = _masked(obj)
        key = json.dumps(masked, separators=(",", ":"))
        if key not in self._texts:
            self._texts[key] = dump_yaml(masked)
        return self._restore(key, wave), self._check(key, masked)

    def _restore(self, key: str, wave: str | None) -> str:
        text = self._texts[key]
        return text.replace(_PLACEHOLDER, wave) if wave is not None else text

    def files(self, tree: Tree) -> dict[str, bytes]:
        """Every file of the tree as bytes; RenderedOutputInvalid names every invalid object.

        Objects not seen before are dumped together in one emitter run.
        """
        entries: dict[str, list[tuple[str, str | None, Obj]]] = {}
        missing: dict[str, Obj] = {}
        for path, content in tree.files.items():
            if isinstance(content, list):
                entries[path] = []
                for obj in content:
                    masked, wave = _masked(obj)
                    key = json.dumps(masked, separators=(",", ":"))
                    entries[path].append((key, wave, masked))
                    if key not in self._texts:
                        missing.setdefault(key, masked)
        self._texts.update(zip(missing, dump_many(list(missing.values())), strict=True))
        out: dict[str, bytes] = {}
        problems: list[str] = []
        for path in sorted(tree.files):
            content = tree.files[path]
            if isinstance(content, str):
                out[path] = content.encode()
                continue
            texts = []
            for key, wave, masked in entries[path]:
                texts.append(self._restore(key, wave))
                name = f"{masked.get('kind')}/{masked.get('metadata', {}).get('name')}"
                problems += [f"{tree.platform}/{path}: {name}: {e}" for e in self._check(key, masked)]
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
