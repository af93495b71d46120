"""A snapshot's `manifest.json`: which kinds were read, and when the snapshot was taken.

The manifest, not the files beside it, says what a snapshot holds: a kind it lists as missing, or
does not list as read, is unknown even when a `<kind>.json` is there (a file left from an older
run must never make a gate hold). `evidence` judges only snapshots younger than a bound.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gpuplatform.errors import InputError
from gpuplatform.load.yaml_input import read_data

__all__ = [
    "MANIFEST",
    "TIME_FORMAT",
    "check_age",
    "parse_duration",
    "read_manifest",
    "unread_kinds",
]

MANIFEST = "manifest.json"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
#: A clock a little ahead of the machine that judges the snapshot is not a snapshot from the future.
_SKEW = timedelta(minutes=5)
_DURATION = re.compile(r"([0-9]{1,6})([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def _check(
    path: Path, doc: dict[str, Any], key: str, kind: type[list[Any]] | type[dict[str, Any]], what: str
) -> None:
    value = doc.get(key)
    if not (isinstance(value, kind) and all(isinstance(v, str) for v in value)):
        raise InputError.single(str(path), key, f"expected {what}")


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of the snapshot in `folder` (None for a folder of `kubectl get -o json` files)."""
    path = folder / MANIFEST
    if not os.path.lexists(path):
        return None
    doc = read_data(path, follow_links=False)
    if not isinstance(doc, dict):
        raise InputError.single(
            str(path), "", "expected the manifest `gpuplatform snapshot` writes (an object)"
        )
    _check(path, doc, "missing", list, "a list of what could not be read")
    _check(path, doc, "kinds", dict, "an object: kind -> what was read")
    when = {key: _when(path, doc, key) for key in ("started", "time") if key in doc}
    if len(when) == 2 and when["time"] < when["started"]:
        raise InputError.single(
            str(path),
            "time",
            f"{doc['time']} is before the snapshot started ({doc['started']}): not a snapshot's manifest",
        )
    return doc


def _when(path: Path, doc: dict[str, Any], key: str) -> datetime:
    value = doc.get(key)
    if isinstance(value, str):
        try:
            return datetime.strptime(value, TIME_FORMAT).replace(tzinfo=UTC)
        except ValueError:
            pass
    raise InputError.single(str(path), key, f"expected a UTC time like 2026-12-02T10:00:00Z, not {value!r}")


def unread_kinds(manifest: dict[str, Any], kinds: Collection[str]) -> set[str]:
    """The `kinds` the manifest does not record as read (listed as missing, or not listed at all)."""
    missing = set(manifest["missing"])
    return {k for k in kinds if k in missing or k not in manifest["kinds"]}


def parse_duration(text: str) -> timedelta:
    """`90s`, `30m`, `24h`, `7d` as a duration; InputError naming `--max-age` otherwise."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise InputError.single("--max-age", "", f"{text!r} is not a duration like 30m, 24h or 7d")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def check_age(folder: Path, manifest: dict[str, Any] | None, max_age: timedelta, now: datetime) -> None:
    """Refuse a snapshot taken more than `max_age` before `now`, undated, or dated in the future."""
    path = folder / MANIFEST
    hint = "take a new snapshot, or pass --allow-stale to judge it anyway"
    if manifest is None or not ({"started", "time"} & manifest.keys()):
        raise InputError.single(str(path), "time", f"the snapshot does not say when it was taken; {hint}")
    key = "started" if "started" in manifest else "time"
    taken = _when(path, manifest, key)
    if taken > now + _SKEW:
        raise InputError.single(str(path), key, f"{manifest[key]} is in the future of this machine's clock")
    if now - taken > max_age:
        age = now - taken
        raise InputError.single(
            str(path),
            key,
            f"the snapshot was taken {_human(age)} ago ({manifest[key]}), longer than --max-age "
            f"{_human(max_age)}; {hint}",
        )


def _human(delta: timedelta) -> str:
    """`3d`, `36h`, `90m` or `45s`: the largest unit of which `delta` holds at least two."""
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= 2 * size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
