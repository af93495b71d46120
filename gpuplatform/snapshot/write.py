"""`snapshot --out DIR` replaces DIR whole: a fresh folder beside it, swapped in once complete.

Nothing of an earlier snapshot survives into a new one (a kind the new run could not read has no
file), and a run that fails or is interrupted leaves DIR as it was. DIR may be absent, empty, or a
snapshot gpuplatform took; anything else is refused, as is a link.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Collection
from pathlib import Path

from gpuplatform.adopt.running import HELM_FOLDER
from gpuplatform.errors import InputError
from gpuplatform.output.write import refuse_linked_folder, swap_folder
from gpuplatform.snapshot.manifest import MANIFEST, read_manifest

__all__ = ["fresh_folder", "swap_in"]

#: Sub-folders a snapshot writes, and the suffix of their files.
_FOLDERS = {"logs": ".log", "nvidia-smi": ".csv", HELM_FOLDER: ".json"}


def _not_a_snapshot(folder: Path, kinds: Collection[str]) -> str:
    """Why `folder` is not a snapshot gpuplatform took ("" when it is one)."""
    files = {f"{kind}.json" for kind in kinds} | {MANIFEST}
    for entry in os.scandir(folder):
        suffix = _FOLDERS.get(entry.name)
        if suffix is not None and entry.is_dir(follow_symlinks=False):
            for inner in os.scandir(entry.path):
                if not (inner.is_file(follow_symlinks=False) and inner.name.endswith(suffix)):
                    return f"{entry.name}/{inner.name} is not a file a snapshot writes"
        elif entry.name not in files or not entry.is_file(follow_symlinks=False):
            return f"{entry.name} is not a file a snapshot writes"
    try:
        if read_manifest(folder) is None:
            return f"it has no {MANIFEST}"
    except InputError as exc:
        return exc.problems[0].message
    return ""


def fresh_folder(out: Path, kinds: Collection[str]) -> Path:
    """Check that `out` may be replaced by a snapshot of `kinds`; the new empty folder beside it."""
    refuse_linked_folder(out)
    if out.is_dir() and any(out.iterdir()):
        why = _not_a_snapshot(out, kinds)
        if why:
            raise InputError.single(
                str(out), "", f"is not empty and not a snapshot gpuplatform took ({why}); name a new folder"
            )
    out.parent.mkdir(parents=True, exist_ok=True)
    fresh = out.parent / f".{out.name}.gpuplatform-snapshot.{secrets.token_hex(8)}"
    fresh.mkdir(0o755)
    return fresh


def swap_in(fresh: Path, out: Path) -> None:
    """Put the complete snapshot `fresh` at `out` and remove the one it replaces."""
    old = swap_folder(fresh, out)
    if old is not None:
        shutil.rmtree(old)
