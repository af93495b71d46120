"""A stdout that writes every byte or raises: output cut short is an error, never silently lost.

Python's buffered writer returns a short count when a pipe's reader goes away in the middle of a
write (`| head -c1` after 64 KiB), and the text layer above it drops the rest without an error;
the command would exit 0 with its output cut. Here the raw layer loops until every byte is
written, so the next write fails with EPIPE and the command can say so (exit 74).
"""

from __future__ import annotations

import io
import os
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

__all__ = ["whole_writes"]


class _WholeWrites(io.RawIOBase):
    """The file descriptor `fd`, written whole (EPIPE and every other error raised)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data: ReadableBuffer) -> int:
        view = memoryview(data).cast("B")
        size = len(view)
        while view:
            view = view[os.write(self._fd, view) :]
        return size


def whole_writes(stream: TextIO) -> TextIO:
    """`stream` (sys.stdout) with the same encoding and buffering, whose writes are whole."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return stream
    return io.TextIOWrapper(
        io.BufferedWriter(_WholeWrites(fd)),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=bool(stream.line_buffering),
    )
