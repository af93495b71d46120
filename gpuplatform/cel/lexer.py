"""Split CEL source into tokens with cel-go's lexer rules.

The rules are cel-go's (google/cel-go v0.26.0 `parser/gen/CEL.g4`, the lexer Kubernetes 1.36 uses):
tokens do not depend on where they stand, the longest match wins, `true`/`false`/`null`/`in` are
keywords, `1.` is an int and a dot, `.5` is a float, a string's escapes are checked while lexing.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["Token", "tokenize"]

_ESCAPE = r"""\\(?:[abfnrtv"'\\?`]|[0-3][0-7]{2}|[xX][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})"""
_QUOTED = (
    r"""[rR](?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"[^"\n\r]*"|'[^'\n\r]*')"""
    rf"""|\"\"\"(?:{_ESCAPE}|[^\\])*?\"\"\"|'''(?:{_ESCAPE}|[^\\])*?'''"""
    rf"""|"(?:{_ESCAPE}|[^\\"\n\r])*"|'(?:{_ESCAPE}|[^\\'\n\r])*'"""
)
_EXPONENT = r"[eE][+-]?[0-9]+"
_TOKEN = re.compile(
    r"(?P<space>[\t\n\f\r ]+|//[^\n]*)"
    rf"|(?P<bytes>[bB](?:{_QUOTED}))"
    rf"|(?P<string>{_QUOTED})"
    rf"|(?P<float>[0-9]+\.[0-9]+(?:{_EXPONENT})?|[0-9]+{_EXPONENT}|\.[0-9]+(?:{_EXPONENT})?)"
    r"|(?P<uint>(?:0x[0-9a-fA-F]+|[0-9]+)[uU])"
    r"|(?P<int>0x[0-9a-fA-F]+|[0-9]+)"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>==|!=|<=|>=|&&|\|\||[-+*/%!<>?:.,()\[\]{}])"
)
_KEYWORDS = frozenset({"true", "false", "null", "in"})


class Token(NamedTuple):
    """`kind` is int/uint/float/string/bytes/ident, the keyword or operator itself, eof or error."""

    kind: str
    text: str
    line: int
    column: int


def tokenize(text: str) -> list[Token]:
    """All tokens of `text`, then `eof` at the end; an unreadable character ends the list with `error`."""
    tokens: list[Token] = []
    append = tokens.append
    match = _TOKEN.match
    line, line_start, offset, end = 1, 0, 0, len(text)
    while offset < end:
        found = match(text, offset)
        if found is None:
            append(Token("error", text[offset], line, offset - line_start + 1))
            return tokens
        kind = found.lastgroup or "op"
        value = found.group()
        if kind != "space":
            if kind == "op" or (kind == "ident" and value in _KEYWORDS):
                kind = value
            append(Token(kind, value, line, offset - line_start + 1))
        newlines = value.count("\n")
        if newlines:
            line += newlines
            line_start = offset + value.rfind("\n") + 1
        offset = found.end()
    append(Token("eof", "", line, offset - line_start + 1))
    return tokens
