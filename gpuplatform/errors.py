"""One exception family and one problem record for every layer."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "EnvironmentFailure",
    "GpuplatformError",
    "InputError",
    "Problem",
    "RenderedOutputInvalid",
    "Severity",
    "format_loc",
    "format_problems",
]

Severity = Literal["error", "warning", "info"]


def format_loc(loc: Sequence[int | str]) -> str:
    """Render a location tuple as `spec.nodePools[1].nodes[0]`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass(frozen=True, order=True)
class Problem:
    """One finding: where it is, how bad it is, what is wrong and how to fix it."""

    file: str
    loc: str
    code: str
    message: str
    severity: Severity = "error"
    hint: str = field(default="", compare=False)

    def line(self) -> str:
        """The one-line form: `error: <file>:<loc>: <CODE> <message>`."""
        where = f"{self.file}:{self.loc}" if self.loc else self.file
        code = f"{self.code} " if self.code else ""
        text = f"{self.severity}: {where}: {code}{self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def as_dict(self) -> dict[str, str]:
        """Fixed-key JSON form for `--format json`."""
        return {
            "severity": self.severity,
            "file": self.file,
            "loc": self.loc,
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
        }


def format_problems(problems: Iterable[Problem]) -> str:
    """Sorted one-line-per-problem text (file, then loc, then code); duplicates shown once."""
    return "\n".join(
        p.line() for p in sorted(set(problems), key=lambda p: (p.file, p.loc, p.code, p.message))
    )


class GpuplatformError(Exception):
    """Base of every error the library raises on purpose."""


class InputError(GpuplatformError):
    """The input could not be used (exit code 2); carries one Problem per defect."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__(format_problems(self.problems))

    @classmethod
    def single(cls, file: str, loc: str, message: str, code: str = "") -> InputError:
        """Shortcut for one problem."""
        return cls([Problem(file=file, loc=loc, code=code, message=message)])


class EnvironmentFailure(GpuplatformError):
    """The machine refused what a valid run needed: disk full, permission denied, read-only file
    system, closed stdout (exit 74, sysexits' EX_IOERR); the message names the path and the cause."""

    def __init__(self, where: str, what: str, cause: OSError | str) -> None:
        self.where = where
        reason = cause if isinstance(cause, str) else (cause.strerror or type(cause).__name__)
        super().__init__(f"{where}: {what}: {reason}")


class RenderedOutputInvalid(GpuplatformError):
    """A rendered object failed validation: a bug in a renderer, reported with the object named."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))
