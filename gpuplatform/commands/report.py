"""What every command returns: a typed report a person reads, a program reads, and an exit code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["Report", "exit_code"]


class Report(Protocol):
    """A command's outcome for one platform (or one run): `text()` for a terminal, `as_dict()` for
    `--format json`, `exit_code` as the CLI exits (0 success, 1 the job ran and found problems)."""

    @property
    def exit_code(self) -> int:
        """0 when the job found nothing wrong, 1 when it did."""
        ...

    def text(self) -> str:
        """What a person reads."""
        ...

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data with fixed keys."""
        ...


def exit_code(reports: Sequence[Report]) -> int:
    """The run's exit code: the worst of its reports' (0 when there are none)."""
    return max((r.exit_code for r in reports), default=0)
