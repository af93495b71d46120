"""A rendered runbook read as the program it is: one transition's steps, their shell blocks, and when
each runs (before the merge, once a sync unit has applied, after the sync).

The Markdown is the one `render/runbooks.py` writes: `## From <a> to <b>` or `## Rollback to <a>`,
then `### Before the merge`, `### Sync`, `### After the sync`, each a numbered list whose items and
sub-items carry `sh` blocks. A Sync item that says "(once `<unit>` has applied" waits for that unit;
a Sync item naming a unit (`` `enable` (`15-allocator-switch/enable`): ``) is the engine's; a Sync
item with commands and neither is run once the sync is over ("Follow the engine").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Block", "Item", "RunbookSection", "read_section"]

_ITEM = re.compile(r"^(\d+)\. (.*)$")
_PART = re.compile(r"^ {3}- (.*)$")
_FENCE = re.compile(r"^( *)```sh\s*$")
_UNIT = re.compile(r"^`([\w-]+)` \(`[^`]+`\):")
_AFTER = re.compile(r"once `([\w-]+)` has applied")


@dataclass
class Block:
    """One `sh` block and the words it sits under (a check that "prints nothing" is judged by that)."""

    script: str
    text: str

    @property
    def expects_nothing(self) -> bool:
        return "prints nothing" in self.text


@dataclass
class Item:
    """A numbered step: its words, its own blocks, and its sub-items' (in order)."""

    text: str
    blocks: list[Block] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    unit: str = ""
    """The engine's sync unit this Sync item names ('' for a step of the operator's)."""
    after: str = ""
    """The sync unit an operator's Sync step waits for."""


@dataclass
class RunbookSection:
    """One transition of a runbook file."""

    title: str
    before: list[Item] = field(default_factory=list)
    sync: list[Item] = field(default_factory=list)
    after: list[Item] = field(default_factory=list)

    @property
    def during(self) -> list[Item]:
        """Operator steps during the sync, each waiting for its unit."""
        return [i for i in self.sync if i.after]

    @property
    def following(self) -> list[Item]:
        """Sync items with commands that are neither a unit nor waiting for one: run once the sync is over."""
        return [i for i in self.sync if not i.unit and not i.after and i.blocks]


def _items(lines: list[str]) -> list[Item]:
    items: list[Item] = []
    context = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence is not None and items:
            indent = len(fence.group(1))
            body: list[str] = []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
                i += 1
            items[-1].blocks.append(Block("\n".join(body) + "\n", context))
        elif (item := _ITEM.match(line)) is not None:
            text = item.group(2)
            unit = _UNIT.match(text)
            after = _AFTER.search(text)
            items.append(
                Item(text, unit=unit.group(1) if unit else "", after=after.group(1) if after else "")
            )
            context = text
        elif (part := _PART.match(line)) is not None and items:
            items[-1].parts.append(part.group(1))
            context = part.group(1)
        elif line.startswith("     ") and items and not line.strip().startswith("```"):
            context += " " + line.strip()
        i += 1
    return items


def read_section(markdown: str, heading: str) -> RunbookSection | None:
    """The section whose `## ` heading starts with `heading` (`From 00-a to 01-b`, `Rollback to 00-a`,
    `Before the merge` of a first wave, whose items are all before the merge)."""
    lines = markdown.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(f"## {heading}")), None)
    if start is None:
        return None
    end = next((j for j in range(start + 1, len(lines)) if lines[j].startswith("## ")), len(lines))
    section = RunbookSection(heading)
    parts: dict[str, list[str]] = {}
    current = ""
    for line in lines[start + 1 : end]:
        if line.startswith("### "):
            current = line[4:].strip()
            parts[current] = []
        elif current:
            parts[current].append(line)
    if not parts:
        section.before = _items(lines[start + 1 : end])
        return section
    section.before = _items(parts.get("Before the merge", []))
    section.sync = _items(parts.get("Sync", []))
    section.after = _items(parts.get("After the sync", []))
    return section
