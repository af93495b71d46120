"""The items of a `kubectl get -o json` List, read from disk a batch at a time.

`read_data` holds a file's text, then its whole parsed tree: evidence on a million pods (a 623 MiB
`pods.json`) peaked at 4.4 GiB.
`read_list_items` reads the file in blocks, cuts each after a whole item, parses the items so far
with orjson and hands them to `keep` (evidence keeps the fields the gates read), so beside what
`keep` returns it holds one block of text and one batch of parsed items.

A cut is found where the next item's opening (the first item's `{"key"`) follows `}` and a comma,
and proven by the parse: `[` + the text up to that `}` + `]` is JSON only when the `}` ends an item
of the list (a `}` inside a string or a nested value leaves the text open). It vouches only for a
file `read_data` reads to the same items: anything else (not a JSON object with `items`, an item
that is not an object, a duplicate key, an integer orjson would read as a float, a byte orjson
refuses) returns None, and the caller reads the file with `read_data`, for its value or its error.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from gpuplatform.load.yaml_input import MAX_DATA_BYTES

__all__ = ["read_list_items"]

_BLOCK = 8 << 20
_SPACE = b" \t\n\r"
_OBJECT = re.compile(rb"[ \t\n\r]*\{")
_ITEMS = re.compile(rb'"items"[ \t\n\r]*:[ \t\n\r]*\[')
_OPENING = re.compile(rb'[ \t\n\r]*(\{[ \t\n\r]*"[^"\\]*")')
#: An escaped colon: `read_data`'s colon count cannot tell a repeated key in such a text.
_ESCAPED_COLON = re.compile(rb"\\u003[aA]")
#: A number of 19 digits or more: orjson reads those beyond 64 bits as floats, Python as integers.
_LONG_NUMBER = re.compile(rb"[:,\[][ \t\n\r]*-?[0-9]{19}")
#: Failed parses tolerated per cut before the file is left to `read_data` (an opening that also
#: starts nested objects, or a malformed file).
_TRIES = 16

Keep = Callable[[list[Any]], list[Any]]


class _Declined(Exception):
    """The file is not one the streamed read vouches for."""


def read_list_items(path: Path, keep: Keep | None = None) -> list[Any] | None:
    """The items of the List in `path`, each batch passed through `keep`; None when the file is not
    one this reader vouches for (read it with `read_data`)."""
    try:
        info = os.lstat(path)  # a link is never followed: `read_data` refuses it
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_DATA_BYTES:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            return _Stream(handle, keep).items()
    except (OSError, _Declined):
        return None


def _parsed(text: bytes | bytearray, size: int) -> Any:
    """The JSON value of `text[:size]` (parsed in place), None when it is not JSON (no text
    parsed here is `null`)."""
    with memoryview(text) as whole, whole[:size] as part:
        try:
            return orjson.loads(part)
        except orjson.JSONDecodeError:
            return None


def _vouch(text: bytes | bytearray, start: int, end: int, value: Any) -> None:
    """Decline unless `read_data` would read `text[start:end]` to `value`: no key repeated (every
    pair owns a colon outside strings, and re-serialised `value` has one fewer per repeated key;
    `read_data` counts the same way), and no integer orjson read as a float."""
    if _ESCAPED_COLON.search(text, start, end):
        raise _Declined
    try:
        dumped = orjson.dumps(value)
    except orjson.JSONEncodeError:  # deeper than orjson writes: `read_data` decides
        raise _Declined from None
    if text.count(b":", start, end) != dumped.count(b":") or (
        b"e+" in dumped and _LONG_NUMBER.search(text, start, end)
    ):
        raise _Declined


def _before(text: bytearray, index: int) -> int:
    """The last index at or before `index` that is not JSON whitespace (0 at the start)."""
    while index > 0 and text[index] in _SPACE:
        index -= 1
    return index


class _Stream:
    """One pass over the file: the head up to the list, the items batch by batch, the tail.

    The buffer always starts with a `[` (the list's own, then the separator before the next item
    overwritten), so a batch is parsed in place: only the byte after its last item is set to `]`
    for the parse.
    """

    def __init__(self, handle: BinaryIO, keep: Keep | None) -> None:
        self.handle, self.keep = handle, keep
        self.text = bytearray()
        self.read = 0
        self.opening = b"{"
        self.searched = 2
        """Where `cut` looks for an opening from: every one before was tried or cannot be a cut."""
        self.out: list[Any] = []

    def more(self) -> bool:
        """Append a block; False at the end of the file."""
        block = self.handle.read(_BLOCK)
        self.read += len(block)
        if self.read > MAX_DATA_BYTES:
            raise _Declined
        self.text += block
        return bool(block)

    def items(self) -> list[Any]:
        self.more()
        if not _OBJECT.match(self.text):
            raise _Declined
        head = self.head()
        self.opening = self.first_opening()
        while True:
            if not self.cut() and not self.more():
                break
        self.tail(head)
        return self.out

    def head(self) -> bytes:
        """The text before the list's `[` (the object with its keys before `items`); the buffer
        then starts at the `[`."""
        searched = 0
        while True:
            for end in [match.end() for match in _ITEMS.finditer(self.text, searched)]:
                head = bytes(self.text[: end - 1])
                if type(_parsed(head + b"[]}", len(head) + 3)) is dict:
                    del self.text[: end - 1]
                    return head
            searched = max(len(self.text) - 64, 0)
            if not self.more():
                raise _Declined

    def first_opening(self) -> bytes:
        """The first item's opening up to its first key (`{"metadata"`), which every item of a
        kubectl List shares; `{` when it has none (the match object is let go: it pins the buffer)."""
        match = _OPENING.match(self.text, 1)
        return match.group(1) if match else b"{"

    def cut(self) -> bool:
        """Take the items up to the latest cut in the buffer a parse proves; False when it holds
        none yet."""
        text, tries, start = self.text, 0, len(self.text)
        while tries < _TRIES:
            start = text.rfind(self.opening, self.searched, start)
            if start < 0:
                self.searched = max(2, len(text) - len(self.opening) + 1)
                return False
            end = _before(text, start - 1)
            if text[end] != ord(","):
                continue
            end = _before(text, end - 1)
            if text[end] != ord("}"):
                continue
            kept, text[end + 1] = text[end + 1], ord("]")
            batch = _parsed(text, end + 2)
            text[end + 1] = kept
            if batch is not None:
                self.take(end + 1, batch)
                del text[: start - 1]
                text[0] = ord("[")
                self.searched = max(2, len(text) - len(self.opening) + 1)
                return True
            tries += 1
        raise _Declined

    def take(self, end: int, batch: list[Any]) -> None:
        """Check and keep the items `batch` parsed from the buffer up to `end`."""
        if not all(type(item) is dict for item in batch):
            raise _Declined
        _vouch(self.text, 1, end, batch)
        self.out += batch if self.keep is None else self.keep(batch)

    def tail(self, head: bytes) -> None:
        """The last items, up to the list's `]`, and the object's keys after it."""
        text, close = self.text, len(self.text)
        for _ in range(_TRIES):
            close = text.rfind(b"]", 0, close)
            if close < 0:
                break
            batch = _parsed(text, close + 1)
            if batch is None:
                continue
            self.take(close, batch)
            rest = head + b"[" + bytes(text[close:])
            document = _parsed(rest, len(rest))
            if type(document) is not dict:
                break
            _vouch(rest, 0, len(rest), document)
            return
        raise _Declined
