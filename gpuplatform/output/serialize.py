"""Tree -> validated bytes, each distinct object validated and dumped once.

Objects that repeat across waves differ only in their wave label, the Nodes of a pool only in their
name, a tenant's objects often only in their namespace; the cache key replaces those values with
placeholders, so each distinct shape is validated and dumped once and the real values are written
back into its text.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from gpuplatform import __version__
from gpuplatform.errors import GpuplatformError
from gpuplatform.model.base import is_dns_label, is_dns_subdomain
from gpuplatform.output.write import LOCK_FILE
from gpuplatform.output.yaml import dump_many, dump_yaml, needs_quotes
from gpuplatform.render.meta import WAVE_LABEL, Obj
from gpuplatform.render.tree import Tree
from gpuplatform.validate import SchemaMissing, validate_object

__all__ = ["LOCK_FILE", "RenderedOutputInvalid", "Serializer", "lock_document"]

_WAVE = "gpuplatform-wave-placeholder-0"
_NAME = "gpuplatform-name-placeholder-0"
_NAMESPACE = "gpuplatform-namespace-placeholder-0"


class RenderedOutputInvalid(GpuplatformError):
    """A rendered object failed validation: a bug in a renderer, reported with the object named."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class _Template:
    """An object with its wave label and name replaced by placeholders, and what they were."""

    key: str
    obj: Obj
    wave: str | None
    name: str | None
    namespace: str | None


def _template(obj: Obj) -> _Template:
    """The object with its wave label, name and namespace masked, keyed by that shape.

    Masking is sound only when each placeholder used occurs once in the shape and the others not
    at all: an object whose own content holds a placeholder's text is kept whole (its own key),
    so restoring the values can never rewrite user content.
    """
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return _whole(obj)
    meta = dict(meta)
    labels = meta.get("labels")
    wave = None
    if (
        isinstance(labels, dict)
        and isinstance(labels.get(WAVE_LABEL), str)
        and is_dns_label(labels[WAVE_LABEL])
    ):
        wave = labels[WAVE_LABEL]
        meta["labels"] = {**labels, WAVE_LABEL: _WAVE}
    name, namespace = _mask(meta, "name", _NAME), _mask(meta, "namespace", _NAMESPACE)
    masked = {**obj, "metadata": meta}
    key = json.dumps(masked, separators=(",", ":"))
    for placeholder, value in ((_WAVE, wave), (_NAME, name), (_NAMESPACE, namespace)):
        if key.count(placeholder) != (value is not None):
            return _whole(obj)
    return _Template("masked:" + key, masked, wave, name, namespace)


def _whole(obj: Obj) -> _Template:
    return _Template("whole:" + json.dumps(obj, separators=(",", ":")), obj, None, None, None)


def _mask(meta: Obj, key: str, placeholder: str) -> str | None:
    """Replace `meta[key]` by `placeholder` when it is a DNS name; return what it was."""
    value = meta.get(key)
    if not isinstance(value, str) or not is_dns_subdomain(value):
        return None
    meta[key] = placeholder
    return value


@cache
def _scalar(name: str) -> str:
    """How the dumper writes `name` (a DNS name, never holding a quote): plain or single-quoted."""
    return f"'{name}'" if needs_quotes(name) else name


@dataclass
class Serializer:
    """Validates and dumps objects for one Kubernetes minor, memoised by content.

    Objects that differ only in their name, namespace or wave label (a pool's Nodes, every wave's copy of an
    object) share one template: validated once (the schemas constrain neither), dumped once, and
    the real name and wave are written back into the text.
    """

    minor: str
    validate: bool = True
    _texts: dict[str, str] = field(default_factory=dict)
    _errors: dict[str, list[str]] = field(default_factory=dict)

    def _check(self, template: _Template) -> list[str]:
        errors = self._errors.get(template.key)
        if errors is None:
            errors = []
            if self.validate:
                try:
                    errors = validate_object(template.obj, self.minor)
                except SchemaMissing as exc:
                    errors = [str(exc)]
            self._errors[template.key] = errors
        return errors

    def _restore(self, template: _Template) -> str:
        text = self._texts[template.key]
        if template.wave is not None:
            text = text.replace(_WAVE, _scalar(template.wave))
        if template.name is not None:
            text = text.replace(_NAME, _scalar(template.name))
        if template.namespace is not None:
            text = text.replace(_NAMESPACE, _scalar(template.namespace))
        return text

    def dump(self, obj: Obj) -> tuple[str, list[str]]:
        """The YAML text of `obj` and its validation errors."""
        template = _template(obj)
        if template.key not in self._texts:
            self._texts[template.key] = dump_yaml(template.obj)
        return self._restore(template), self._check(template)

    def files(self, tree: Tree) -> dict[str, bytes]:
        """Every file of the tree as bytes; RenderedOutputInvalid names every invalid object.

        Templates not seen before are dumped together in one emitter run.
        """
        entries: dict[str, list[_Template]] = {}
        missing: dict[str, Obj] = {}
        for path, content in tree.files.items():
            if isinstance(content, list):
                entries[path] = [_template(obj) for obj in content]
                for t in entries[path]:
                    if t.key not in self._texts:
                        missing.setdefault(t.key, t.obj)
        self._texts.update(zip(missing, dump_many(list(missing.values())), strict=True))
        out: dict[str, bytes] = {}
        problems: list[str] = []
        for path in sorted(tree.files):
            content = tree.files[path]
            if isinstance(content, str):
                out[path] = content.encode()
                continue
            texts = []
            for t in entries[path]:
                texts.append(self._restore(t))
                name = t.name or (t.obj.get("metadata") or {}).get("name")
                label = f"{t.obj.get('kind')}/{name}"
                problems += [f"{tree.platform}/{path}: {label}: {e}" for e in self._check(t)]
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
