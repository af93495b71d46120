"""The only YAML writer of the package: PyYAML's C dumper, no wrapping, literal multi-line strings."""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["dump_documents", "dump_many", "dump_yaml"]

_DOCUMENT_START = re.compile(r"^---\n", re.MULTILINE)


class _Dumper(yaml.CSafeDumper):
    """Block style, insertion order, never wraps lines, multi-line strings as literal blocks."""


def _str(dumper: _Dumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)
_Dumper.ignore_aliases = lambda self, data: True  # type: ignore[method-assign]


def dump_yaml(obj: Any) -> str:
    """One document, deterministic: keys in insertion order, LF line ends, no aliases."""
    return yaml.dump(
        obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1 << 30, allow_unicode=True
    )


def dump_documents(objects: list[Any]) -> str:
    """A multi-document stream (`---` between documents)."""
    return "---\n".join(dump_yaml(o) for o in objects)


def dump_many(objects: list[Any]) -> list[str]:
    """`dump_yaml` of each object, in one emitter run (much cheaper than one run per object).

    Every document is a mapping, so a line that is exactly `---` at column 0 can only be a
    document start: block scalars and nested values are always indented.
    """
    if not objects:
        return []
    text = yaml.dump_all(
        objects,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        width=1 << 30,
        allow_unicode=True,
        explicit_start=True,
    )
    return _DOCUMENT_START.split(text)[1:]
