"""The writer's state file is data, not instructions: every name it records is proved ours first.

A record names folders the next run renames and removes. A crafted one (the state file sits in a
folder a pull request can change) must not reach beyond `--out`: every name must be a platform
folder name (a DNS label) or the writer's staging or backup name of that platform with one run id,
a direct child of `--out` that is not a link. Anything else refuses the run before it acts. That
the record was written here at all is proved by its MAC (`state_key.py`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from gpuplatform.errors import Problem
from gpuplatform.model.base import is_dns_label

__all__ = ["BACKUP", "STAGING", "state_problems"]

STAGING = ".gpuplatform-staging"
BACKUP = ".gpuplatform-backup"
_PHASES = ("staging", "swapping", "committed", "idle")
_ENTRY_KEYS = ("name", "staging", "backup", "old", "new")
_RUN = r"[0-9a-f]{16}"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def _entry_problems(entry: Any, where: str, out: Path) -> list[str]:
    """The problems of one recorded entry, each `<field>: <what>`."""
    if not isinstance(entry, dict) or sorted(entry) != sorted(_ENTRY_KEYS):
        return [f"{where}: expected an object with exactly {', '.join(_ENTRY_KEYS)}"]
    name = entry["name"]
    if not isinstance(name, str) or not is_dns_label(name):
        return [f"{where}.name: {name!r} is not a platform folder name (a DNS label)"]
    found = []
    runs = set()
    for key, prefix in (("staging", STAGING), ("backup", BACKUP)):
        value = entry[key]
        match = (
            re.fullmatch(rf"{re.escape(prefix)}\.({_RUN})\.{re.escape(name)}", value)
            if isinstance(value, str)
            else None
        )
        if match is None:
            found.append(f"{where}.{key}: {value!r} is not the writer's {key} folder of platform {name!r}")
        else:
            runs.add(match.group(1))
    if len(runs) > 1:
        found.append(f"{where}.backup: its run id is not the staging folder's")
    for key in ("old", "new"):
        if entry[key] is not None and not (isinstance(entry[key], str) and _DIGEST.fullmatch(entry[key])):
            found.append(f"{where}.{key}: {entry[key]!r} is not a lock digest (sha256:<64 hex>) or null")
    if not found:
        for key in ("name", "staging", "backup"):
            if os.path.islink(out / entry[key]):
                found.append(f"{where}.{key}: {out / entry[key]} is a symbolic link")
    return found


def state_problems(doc: Any, out: Path, file: str) -> list[Problem]:
    """Every reason the parsed record `doc` of `<out>/.gpuplatform.lock` cannot be acted on."""
    if not isinstance(doc, dict):
        return [Problem(file, "", "", "expected a JSON object")]
    lines = []
    if doc.get("phase") not in _PHASES:
        lines.append(f"phase: {doc.get('phase')!r} is not one of {', '.join(_PHASES)}")
    extra = sorted(set(doc) - {"format", "phase", "entries", "leftovers", "mac"})
    if extra:
        lines.append(f"{extra[0]}: unknown field")
    seen: set[str] = set()
    for key in ("entries", "leftovers"):
        entries = doc.get(key, [] if key == "leftovers" else None)
        if not isinstance(entries, list):
            lines.append(f"{key}: expected a list")
            continue
        for i, entry in enumerate(entries):
            found = _entry_problems(entry, f"{key}[{i}]", out)
            lines += found
            if not found and entry["staging"] in seen:
                lines.append(f"{key}[{i}].staging: recorded twice")
            if not found:
                seen.add(entry["staging"])
    return [
        Problem(file, loc, "", f"{what}; gpuplatform acts only on folders it can prove it created")
        for loc, _, what in (line.partition(": ") for line in lines)
    ]
