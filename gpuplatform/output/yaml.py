"""The only YAML writer of the package: PyYAML's C dumper (or, for plain data, the same text built
directly), no wrapping, literal multi-line strings.

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
from functools import cache, lru_cache
from typing import Any

import yaml

__all__ = ["dump_documents", "dump_many", "dump_yaml", "needs_quotes", "scalar"]

_STR = "tag:yaml.org,2002:str"
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


def _pyyaml(obj: Any) -> str:
    """`obj` written by PyYAML (the reference writer, and the writer of what `_emit` cannot write)."""
    return yaml.dump(
        obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1 << 30, allow_unicode=True
    )


class _Unsupported(Exception):
    """A value `_emit` leaves to PyYAML (a float, a tuple, a key that is not a simple key...)."""


_PRINTABLE_LINE = re.compile(r"[\x20-\x7e]*")
_FIRST_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")
_LONGEST_SIMPLE_KEY = 100
_BREAKS = frozenset("\r\n\x85\u2028\u2029")
_OTHER_BREAKS = _BREAKS - {"\n"}


def _block_plain(value: str) -> bool:
    """Whether the emitter (libyaml's, under PyYAML's C dumper) may write `value`, one line of
    printable ASCII, as a plain scalar in block context (its scalar analysis: no indicator that
    would start another token, no leading or trailing space, no `: ` or ` #`, not a document
    marker; the YAML 1.1 spec's plain scalar rules, held equal to libyaml by tests)."""
    if not value or value.startswith(("---", "...")) or value[0] in _FIRST_INDICATORS:
        return False
    if value[0] in "?:-" and value[1:2] in ("", " "):
        return False
    return value[0] != " " and value[-1] not in " :" and ": " not in value and " #" not in value


@lru_cache(maxsize=1 << 16)
def _string(value: str) -> str:
    """How the dumper writes the string `value`: one line (plain or quoted) or, for a literal
    block, its header and lines as PyYAML writes them at the top level (indented by 2).

    One line of printable ASCII is decided here as PyYAML decides it: plain when PyYAML may write
    it plain and every reader reads it back as this string (`_style`, `needs_quotes`), else single
    quotes. Anything else (line breaks, Unicode, control characters) is written by PyYAML itself,
    whose top-level text of a one-line scalar is its text anywhere in a block mapping or sequence
    (_Unsupported for line breaks other than LF, and when the text spans lines and is not a
    literal block).
    """
    if _PRINTABLE_LINE.fullmatch(value):
        if _style(value) is None and _block_plain(value) and not needs_quotes(value):
            return value
        return "'" + value.replace("'", "''") + "'"
    if not _OTHER_BREAKS.isdisjoint(value):  # libyaml writes these breaks as they are
        raise _Unsupported
    text = _pyyaml(value)
    if text.startswith("|"):
        return text
    line = text.removesuffix("\n...\n").removesuffix("\n")
    if not _BREAKS.isdisjoint(line):  # a quoted scalar over lines: indented by its context
        raise _Unsupported
    return line


def _scalar(value: Any) -> str:
    if type(value) is str:
        return _string(value)
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    raise _Unsupported


def _node(head: str, value: Any, indent: int, out: list[str]) -> None:
    """Write `head` (`key:` or `-`, at column `indent`) and `value` after it, in PyYAML's block
    style: nested mappings two deeper, sequences in a mapping at the key's column, empty
    collections in flow style, literal blocks two deeper than `head`."""
    kind = type(value)
    if kind is dict and value:
        out.append(head + "\n")
        _mapping(value, indent + 2, out, inline=False)
    elif kind is list and value:
        if head.endswith(":"):  # a sequence in a mapping is not indented
            out.append(head + "\n")
            _sequence(value, indent, out, inline=False)
        else:
            out.append(head + " ")
            _sequence(value, indent + 2, out, inline=True)
    elif kind is dict:
        out.append(head + " {}\n")
    elif kind is list:
        out.append(head + " []\n")
    else:
        text = _scalar(value)
        if text.startswith("|"):  # a literal block: its lines two deeper than `head`
            header, _, body = text.partition("\n")
            if "+" in header:  # kept final line breaks: libyaml ends the document with `...`
                raise _Unsupported
            pad = " " * indent
            out.append(f"{head} {header}\n")
            out += [f"{pad}{line}\n" if line else "\n" for line in body[:-1].split("\n")]
        else:
            out.append(f"{head} {text}\n")


def _mapping(mapping: dict[Any, Any], indent: int, out: list[str], *, inline: bool) -> None:
    pad = " " * indent
    for i, (key, value) in enumerate(mapping.items()):
        if type(key) is not str or not key or len(key) > _LONGEST_SIMPLE_KEY or not _BREAKS.isdisjoint(key):
            raise _Unsupported  # PyYAML writes it as a complex key (`? key`)
        _node(f"{'' if inline and i == 0 else pad}{_string(key)}:", value, indent, out)


def _sequence(items: list[Any], indent: int, out: list[str], *, inline: bool) -> None:
    pad = " " * indent
    for i, value in enumerate(items):
        head = "-" if inline and i == 0 else f"{pad}-"
        if type(value) is dict and value:
            out.append(head + " ")
            _mapping(value, indent + 2, out, inline=True)
        else:
            _node(head, value, indent, out)


def _emit(obj: Any) -> str | None:
    """The text PyYAML would write for a non-empty mapping of plain data (dict, list, str, int,
    bool, None), built directly: about four times faster than building PyYAML's nodes and
    emitting them. None for anything else, which PyYAML writes (tests/output/test_yaml.py holds
    the two texts equal on generated data and on every object of the stacks)."""
    if type(obj) is not dict or not obj:
        return None
    out: list[str] = []
    try:
        _mapping(obj, 0, out, inline=False)
    except _Unsupported:
        return None
    return "".join(out)


def dump_yaml(obj: Any) -> str:
    """One document, deterministic: keys in insertion order, LF line ends, no aliases."""
    text = _emit(obj)
    return _pyyaml(obj) if text is None else text


def dump_documents(objects: list[Any]) -> str:
    """A multi-document stream (`---` between documents)."""
    return "---\n".join(dump_yaml(o) for o in objects)


def dump_many(objects: list[Any]) -> list[str]:
    """`dump_yaml` of each object."""
    return [dump_yaml(o) for o in objects]
