"""The values of CEL literals, computed as cel-go v0.26.0 computes them.

`parser/parser.go` (`VisitInt`, `VisitUint`, `VisitDouble`): decimal or `0x` hex, ints in int64,
uints in uint64, doubles finite. `parser/unescape.go`: newlines normalised to `\\n`, raw literals
taken as written, octal and `\\x` escapes are bytes in a bytes literal and code points in a string,
`\\u`/`\\U` refused in bytes and checked to be Unicode in strings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

__all__ = ["KINDS", "Uint", "literal_value"]

_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_ESCAPE_PARTS = re.compile(
    r"\\(?:([0-3][0-7]{2})|[xX]([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))", re.S
)


class Uint(int):
    """CEL uint (kept distinct from int)."""


def literal_value(kind: str, text: str) -> object:
    """The value of a literal token of `kind` (one of `KINDS`); an int's or a double's `text` may
    start with `-`. ValueError with cel-go's message when the literal has no value."""
    return _VALUES[kind](text)


def _int(text: str) -> int:
    digits = text.lstrip("-")
    value = int(digits[2:], 16) if digits.startswith("0x") else int(digits, 10)
    value = -value if text.startswith("-") else value
    if not -(2**63) <= value < 2**63:
        raise ValueError("invalid int literal")
    return value


def _uint(text: str) -> Uint:
    digits = text[:-1]
    value = int(digits[2:], 16) if digits.startswith("0x") else int(digits, 10)
    if value >= 2**64:
        raise ValueError("invalid uint literal")
    return Uint(value)


def _double(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError("invalid double literal")
    return value


def _body(token: str) -> tuple[str, bool]:
    """The text between the quotes (newlines normalised) and whether the literal is raw."""
    raw = token[0] in "rR"
    quoted = token[1:] if raw else token
    width = 3 if len(quoted) >= 6 and quoted[:3] in ('"""', "'''") else 1
    body = quoted[width:-width]
    if "\r" in body:
        body = body.replace("\r\n", "\n").replace("\r", "\n")
    return body, raw


def _string(token: str) -> str:
    body, raw = _body(token)
    if raw or "\\" not in body:
        return body
    return _ESCAPE_PARTS.sub(_string_escape, body)


def _string_escape(part: re.Match[str]) -> str:
    octal, hex2, hex4, hex8, char = part.groups()
    if char is not None:
        return _ESCAPES.get(char, char)
    code = int(octal, 8) if octal else int(hex2 or hex4 or hex8, 16)
    if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        raise ValueError("invalid unicode code point")
    return chr(code)


def _bytes(token: str) -> bytes:
    body, raw = _body(token[1:])
    if raw or "\\" not in body:
        return body.encode()
    out = bytearray()
    last = 0
    for part in _ESCAPE_PARTS.finditer(body):
        octal, hex2, hex4, hex8, char = part.groups()
        if hex4 or hex8:
            raise ValueError("unable to unescape string")
        out += body[last : part.start()].encode()
        if char is not None:
            out += _ESCAPES.get(char, char).encode()
        else:
            out.append(int(octal, 8) if octal else int(hex2, 16))
        last = part.end()
    out += body[last:].encode()
    return bytes(out)


_VALUES: dict[str, Callable[[str], object]] = {
    "int": _int,
    "uint": _uint,
    "float": _double,
    "string": _string,
    "bytes": _bytes,
    "true": lambda _: True,
    "false": lambda _: False,
    "null": lambda _: None,
}
#: The token kinds that are literals.
KINDS = frozenset(_VALUES)
