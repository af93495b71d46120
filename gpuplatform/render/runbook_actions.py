"""What a runbook step is: the words and the commands an operator runs, and the two phases."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Action", "Steps", "numbered"]


@dataclass(frozen=True)
class Action:
    """One step: what and why, then the commands an operator runs (in order)."""

    text: str
    commands: tuple[str, ...] = ()


@dataclass
class Steps:
    """The steps of a transition, by phase."""

    before: list[Action] = field(default_factory=list)
    after: list[Action] = field(default_factory=list)


def numbered(actions: list[Action]) -> list[str]:
    """Markdown: a numbered list, each step's commands in a `sh` block under it."""
    lines: list[str] = []
    for i, action in enumerate(actions, 1):
        lines.append(f"{i}. {action.text}")
        if action.commands:
            lines += ["", "   ```sh", *(f"   {c}" for c in action.commands), "   ```"]
    return lines
