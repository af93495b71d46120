"""What a runbook step is: the words, the commands an operator runs, and its parts (per pool, per owner)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Action", "Steps", "numbered"]


@dataclass(frozen=True)
class Action:
    """One step: what and why, the commands an operator runs (in order), and its parts."""

    text: str
    commands: tuple[str, ...] = ()
    parts: tuple[Action, ...] = ()


@dataclass
class Steps:
    """Runbook steps by phase: before the merge, during the sync, after it."""

    before: list[Action] = field(default_factory=list)
    during: list[Action] = field(default_factory=list)
    after: list[Action] = field(default_factory=list)


def _commands(commands: tuple[str, ...], indent: str) -> list[str]:
    return ["", f"{indent}```sh", *(f"{indent}{c}" for c in commands), f"{indent}```"] if commands else []


def numbered(actions: list[Action]) -> list[str]:
    """Markdown: a numbered list, each step's commands in a `sh` block under it, its parts as a list."""
    lines: list[str] = []
    for i, action in enumerate(actions, 1):
        lines.append(f"{i}. {action.text}")
        lines += _commands(action.commands, "   ")
        for part in action.parts:
            lines += ["", f"   - {part.text}", *_commands(part.commands, "     ")]
    return lines
