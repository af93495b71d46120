"""Free text from the spec as Markdown text: it shows as the characters written, never as structure.

The spec keeps descriptions to one line (`model.base.Description`), so no text can end the line it is
written on; here every character that could open inline structure (emphasis, code, a link or its
target, an image, HTML and its comments, an entity, strikethrough, a table cell) is
backslash-escaped (CommonMark: any ASCII punctuation may be), a block marker at the start of the
text too (a heading, a list item, a quote, a fence, a thematic break), and every word a GitHub
autolink would turn into a link (`https://…`, `www.…`) is a code span, in which nothing is read.
"""

from __future__ import annotations

import re

__all__ = ["markdown_text"]

#: Characters that open inline structure anywhere in a line (a link's `(` follows its `]`, escaped).
_INLINE = frozenset("\\`*_[]<>&|~")
#: Characters that open a block only at the start of a line (`#` a heading, `-`, `+` a list item,
#: `=` and `-` a setext underline).
_LEADING = frozenset("#-+=")
#: An ordered list marker: digits followed by `.` or `)`.
_ORDERED = re.compile(r"\A([0-9]{1,9})([.)])")
#: A word GitHub's autolink extension links (a scheme's `://`, or `www.`).
_LINKED = re.compile(r"\S*(?:://|www\.)\S*", re.IGNORECASE)


def _escaped(text: str, start: bool) -> str:
    out = "".join(f"\\{c}" if c in _INLINE else c for c in text)
    if start:
        out = _ORDERED.sub(r"\1\\\2", out)
        if out[:1] in _LEADING:
            out = "\\" + out
    return out


def _code(word: str) -> str:
    """`word` as a code span: a fence longer than any run of backticks in it."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", word)), default=0) + 1)
    pad = " " if word.startswith("`") or word.endswith("`") else ""
    return f"{fence}{pad}{word}{pad}{fence}"


def markdown_text(text: str) -> str:
    """`text` (one line) as Markdown that renders as exactly those characters, with no structure."""
    out, at = [], 0
    for match in _LINKED.finditer(text):
        out += [_escaped(text[at : match.start()], at == 0), _code(match.group())]
        at = match.end()
    out.append(_escaped(text[at:], at == 0))
    return "".join(out)
