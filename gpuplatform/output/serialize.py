"""Tree -> validated bytes, each distinct object validated and dumped once.

Objects that repeat across waves differ only in their wave label, the Nodes of a pool only in their
name, a tenant's objects often only in their namespace; the cache key replaces those values with
placeholders, so each distinct shape is validated and dumped once and the real values are written
back into its text.
"""

from __future__ import annotations

import hashlib
import json
import marshal
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cache
from json.encoder import encode_basestring_ascii
from typing import Any

from gpuplatform.errors import RenderedOutputInvalid
from gpuplatform.labels import WAVE_LABEL
from gpuplatform.model.base import is_dns_label, is_dns_subdomain
from gpuplatform.output.write import LOCK_FILE
from gpuplatform.output.yaml import dump_many, dump_yaml, scalar
from gpuplatform.render.meta import Obj
from gpuplatform.render.tree import Tree
from gpuplatform.validate import SchemaMissing, validate_object
from gpuplatform.versions import SDK_VERSION

__all__ = ["LOCK_FILE", "RenderedOutputInvalid", "Serializer", "lock_document"]

_WAVE = "gpuplatform-wave-placeholder-0"
_NAME = "gpuplatform-name-placeholder-0"
_NAMESPACE = "gpuplatform-namespace-placeholder-0"
_WAVE_B, _NAME_B, _NAMESPACE_B = (p.encode() for p in (_WAVE, _NAME, _NAMESPACE))


@dataclass(frozen=True)
class _Template:
    """An object keyed by its shape: wave label, name and namespace replaced by placeholders."""

    key: bytes
    source: Obj
    wave: str | None
    name: str | None
    namespace: str | None

    @property
    def obj(self) -> Obj:
        """The masked object (built on demand: only shapes not seen before are dumped)."""
        if self.wave is None and self.name is None and self.namespace is None:
            return self.source
        meta = dict(self.source["metadata"])
        if self.wave is not None:
            meta["labels"] = {**meta["labels"], WAVE_LABEL: _WAVE}
        if self.name is not None:
            meta["name"] = _NAME
        if self.namespace is not None:
            meta["namespace"] = _NAMESPACE
        return {**self.source, "metadata": meta}


def _key(obj: Obj) -> bytes:
    """Equal bytes for equal plain data (marshal format 2 has no back-references; JSON otherwise)."""
    try:
        return b"m" + marshal.dumps(obj, 2)
    except ValueError:
        return b"j" + json.dumps(obj, separators=(",", ":")).encode()


def _put(meta: Obj, values: tuple[str | None, str | None, str | None]) -> None:
    """Set the wave label, name and namespace of `meta` to `values` (None: leave it)."""
    wave, name, namespace = values
    if wave is not None:
        meta["labels"][WAVE_LABEL] = wave
    if name is not None:
        meta["name"] = name
    if namespace is not None:
        meta["namespace"] = namespace


def _template(obj: Obj) -> _Template:
    """The object keyed by its shape, its wave label, name and namespace masked.

    The key is taken with the values swapped for placeholders in place and put back at once (no
    copy per object). Masking is sound only when each placeholder used occurs once in the shape
    and the others not at all: an object whose own content holds a placeholder's text is kept
    whole, so restoring the values can never rewrite user content.
    """
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return _Template(_key(obj), obj, None, None, None)
    labels = meta.get("labels")
    wave = labels.get(WAVE_LABEL) if isinstance(labels, dict) else None
    wave = wave if isinstance(wave, str) and is_dns_label(wave) else None
    name, namespace = meta.get("name"), meta.get("namespace")
    name = name if isinstance(name, str) and is_dns_subdomain(name) else None
    namespace = namespace if isinstance(namespace, str) and is_dns_subdomain(namespace) else None
    masks = (_WAVE if wave is not None else None, _NAME if name else None, _NAMESPACE if namespace else None)
    try:
        _put(meta, masks)
        key = _key(obj)
    finally:
        _put(meta, (wave, name, namespace))
    for placeholder, value in ((_WAVE_B, wave), (_NAME_B, name), (_NAMESPACE_B, namespace)):
        if key.count(placeholder) != (value is not None):
            return _Template(_key(obj), obj, None, None, None)
    return _Template(key, obj, wave, name, namespace)


@cache
def _scalar(name: str) -> str:
    """How the dumper writes `name` (a DNS name, never holding a quote), memoised."""
    return scalar(name)


@dataclass
class Serializer:
    """Validates and dumps objects for one Kubernetes minor, memoised by content.

    Objects that differ only in their name, namespace or wave label (a pool's Nodes, every wave's copy of an
    object) share one template: validated once (the schemas constrain neither), dumped once, and
    the real name and wave are written back into the text.
    """

    minor: str
    validate: bool = True
    _texts: dict[bytes, str] = field(default_factory=dict)
    _errors: dict[bytes, list[str]] = field(default_factory=dict)

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

    def files(self, tree: Tree, paths: Collection[str] | None = None) -> dict[str, bytes]:
        """Every file of the tree (or those of `paths`) as bytes, in path order;
        RenderedOutputInvalid names every invalid object.

        Templates not seen before are dumped together in one emitter run.
        """
        chosen = sorted(tree.files if paths is None else paths)
        entries: dict[str, list[_Template]] = {}
        missing: dict[bytes, _Template] = {}
        for path in chosen:
            content = tree.files[path]
            if isinstance(content, list):
                entries[path] = [_template(obj) for obj in content]
                for t in entries[path]:
                    if t.key not in self._texts:
                        missing.setdefault(t.key, t)
        self._texts.update(zip(missing, dump_many([t.obj for t in missing.values()]), strict=True))
        out: dict[str, bytes] = {}
        problems: list[str] = []
        for path in chosen:
            content = tree.files[path]
            if isinstance(content, str):
                out[path] = content.encode()
                continue
            texts = []
            for t in entries[path]:
                texts.append(self._restore(t))
                errors = self._check(t)
                if errors:
                    label = f"{t.source.get('kind')}/{(t.source.get('metadata') or {}).get('name')}"
                    problems += [f"{tree.platform}/{path}: {label}: {e}" for e in errors]
            out[path] = "---\n".join(texts).encode()
        if problems:
            raise RenderedOutputInvalid(problems)
        return out


def lock_document(
    files: dict[str, bytes], *, platform: str, spec: dict[str, Any], origin: dict[str, Any]
) -> bytes:
    """`gpuplatform.lock.json`: sdk version, spec digest, origin and the sha256 of every file."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()
    head = {
        "sdkVersion": SDK_VERSION,
        "platform": platform,
        "specDigest": "sha256:" + hashlib.sha256(canonical).hexdigest(),
        **origin,
    }
    return (
        _indented(head, {p: "sha256:" + hashlib.sha256(b).hexdigest() for p, b in sorted(files.items())})
    ).encode()


def _indented(head: dict[str, Any], files: dict[str, str]) -> str:
    """`json.dumps({**head, "files": files}, indent=2)` plus a newline, with the (large, flat) files
    mapping written by the C string encoder instead of the pure-Python indenting encoder."""
    text = json.dumps(head, indent=2)[:-2]
    if not files:
        return text + ',\n  "files": {}\n}\n'
    quote = encode_basestring_ascii  # what json.dumps does with a str, without its per-call set-up
    body = ",\n".join(f"    {quote(p)}: {quote(d)}" for p, d in files.items())
    return text + ',\n  "files": {\n' + body + "\n  }\n}\n"
