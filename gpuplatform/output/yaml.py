"""The only YAML writer of the package: PyYAML's C dumper, no wrapping, literal multi-line strings.

Every reader of the output must read a string as a string. PyYAML quotes what YAML 1.1 (as PyYAML
implements it) would resolve to another type; this writer also quotes what YAML 1.1 proper (y/n),
YAML 1.2's core schema and go-yaml resolve to a boolean, null, number or timestamp. go-yaml's rules,
read in go-yaml/yaml `resolve.go` (v3, commit 0d383ff): the words true/false/null/~ in their three
spellings and `<<`; a plain scalar starting with a digit, `+`, `-` or `.` that strconv.ParseInt /
ParseUint (base 0: 0x, 0o, 0b, leading-0 octal) or ParseFloat (`yamlStyleFloat`) accepts after
every `_` is removed, or that looks like a timestamp (`2006-1-2`, with or without a time). yaml.v2,
which sigs.k8s.io/yaml embeds (kubectl, the API machinery of Argo CD and Flux), also reads
y/Y/yes/no/on/off in their spellings as booleans. `kubectl kustomize` (go-yaml v3) is the oracle of
tests/output/test_readers_agree.py.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import yaml

__all__ = ["dump_documents", "dump_many", "dump_yaml", "needs_quotes", "scalar"]

_DOCUMENT_START = re.compile(r"^---\n", re.MULTILINE)
_STR = "tag:yaml.org,2002:str"
_MAP, _SEQ, _BOOL, _INT_TAG, _NULL = (f"tag:yaml.org,2002:{t}" for t in ("map", "seq", "bool", "int", "null"))
_RESOLVER = yaml.resolver.Resolver()
_WORDS = frozenset(
    [
        "y",
        "Y",
        "yes",
        "Yes",
        "YES",
        "n",
        "N",
        "no",
        "No",
        "NO",
        "true",
        "True",
        "TRUE",
        "false",
        "False",
        "FALSE",
        "on",
        "On",
        "ON",
        "off",
        "Off",
        "OFF",
        "null",
        "Null",
        "NULL",
        "~",
        "<<",
        "=",
    ]
) | {""}
_NUMBER_START = frozenset("+-.0123456789")
_INT = re.compile(r"[-+]?(?:0[xX][0-9a-fA-F]+|0[oO]?[0-7]+|0[bB][01]+|[0-9]+)")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_SPECIAL_FLOAT = re.compile(r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:\Z|[Tt ])")


def _other_readers_resolve(value: str) -> bool:
    """Whether YAML 1.1, YAML 1.2 core or go-yaml reads the plain scalar `value` as a non-string."""
    if value in _WORDS:
        return True
    if value[0] not in _NUMBER_START:
        return False
    plain = value.replace("_", "")
    return bool(
        _INT.fullmatch(plain)
        or _FLOAT.fullmatch(plain)
        or _SPECIAL_FLOAT.fullmatch(value)
        or _TIMESTAMP.match(value)
    )


def needs_quotes(value: str) -> bool:
    """Whether `value`, written plain, would be read as something other than this string by any reader."""
    if _other_readers_resolve(value):
        return True
    tag: str = _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    return tag != _STR


def scalar(value: str) -> str:
    """How the dumper writes `value`, a one-line string without quotes (a DNS name): plain, or
    single-quoted when a reader would take it for something else (`'123'`, `'y'`)."""
    return f"'{value}'" if needs_quotes(value) else value


_RESOLVED: dict[tuple[str, tuple[bool, bool]], str] = {}


class _Dumper(yaml.CSafeDumper):
    """Block style, insertion order, never wraps lines, multi-line strings as literal blocks."""

    def resolve(self, kind: type, value: Any, implicit: Any) -> Any:
        """The resolver's tag, remembered per scalar (it has no path resolvers: the value decides)."""
        if kind is not yaml.ScalarNode:
            return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
        key = (value, implicit)
        tag = _RESOLVED.get(key)
        if tag is None:
            tag = _RESOLVED[key] = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
        return tag


@cache
def _style(value: str) -> str | None:
    if "\n" in value:
        return "|"
    return "'" if _other_readers_resolve(value) else None


def _str(dumper: _Dumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar(_STR, value, style=_style(value))


_Dumper.add_representer(str, _str)
_Dumper.ignore_aliases = lambda self, data: True  # type: ignore[method-assign]


class _FastDumper(_Dumper):
    """`_Dumper` building the nodes of plain data directly: the nodes `SafeRepresenter` gives for a
    dict, list, str, int, bool or None (with `_Dumper`'s string styles, block collections and no
    aliases), without its per-value dispatch; anything else goes to the representer. The emitter
    and the resolver are `_Dumper`'s, so the text is the same (tests/output/test_yaml.py)."""

    def represent_data(self, data: Any) -> yaml.Node:
        kind = type(data)
        if kind is str:
            return yaml.ScalarNode(_STR, data, style=_style(data))
        if kind is dict:
            pairs = [(self.represent_data(k), self.represent_data(v)) for k, v in data.items()]
            return yaml.MappingNode(_MAP, pairs, flow_style=False)
        if kind is list:
            return yaml.SequenceNode(_SEQ, [self.represent_data(v) for v in data], flow_style=False)
        if kind is bool:
            return yaml.ScalarNode(_BOOL, "true" if data else "false")
        if kind is int:
            return yaml.ScalarNode(_INT_TAG, str(data))
        if data is None:
            return yaml.ScalarNode(_NULL, "null")
        return super().represent_data(data)


def dump_yaml(obj: Any) -> str:
    """One document, deterministic: keys in insertion order, LF line ends, no aliases."""
    return yaml.dump(
        obj, Dumper=_FastDumper, sort_keys=False, default_flow_style=False, width=1 << 30, allow_unicode=True
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
        Dumper=_FastDumper,
        sort_keys=False,
        default_flow_style=False,
        width=1 << 30,
        allow_unicode=True,
        explicit_start=True,
    )
    return _DOCUMENT_START.split(text)[1:]
