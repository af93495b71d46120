"""Where the rendered tree lives in the Git repository, against where its entry points say it is.

The entry points (Argo CD Application `source.path`, Flux Kustomization `spec.path`) name
`<delivery.path>/<platform>/...` inside the repository Argo CD and Flux read. When the output folder
is inside a Git work tree its real path there is known, and a tree written anywhere else than
`delivery.path` would send the engines to a folder that does not hold it: that is refused, naming
both. Outside a work tree (a preview in /tmp) the tree is written as declared, with a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpuplatform.errors import InputError, Problem
from gpuplatform.load.stacks import LoadedPlatform

__all__ = ["check_location", "git_location"]


def git_location(out: Path) -> tuple[Path, str] | None:
    """(work tree root, path of `out` inside it) when `out` is in a Git work tree, else None."""
    target = out.resolve()
    for folder in (target, *target.parents):
        if (folder / ".git").exists():
            return folder, target.relative_to(folder).as_posix()
    return None


def check_location(loaded: Sequence[LoadedPlatform], out: Path) -> list[Problem]:
    """Refuse (InputError) a tree whose entry points would name another folder than the one it is
    written to; return an `info` note when `out` is outside any Git work tree."""
    found = git_location(out)
    if found is None:
        paths = sorted({lp.platform.delivery.path for lp in loaded})
        message = (
            f"not inside a Git work tree: the entry points name {' and '.join(p + '/' for p in paths)} "
            "in the delivery repository; commit the tree there"
        )
        return [Problem(str(out), "", "", message, severity="info")]
    root, rel = found
    problems = [
        Problem(
            lp.source,
            "spec.delivery.path",
            "",
            f"the tree is written to {rel or '.'}/ of the Git work tree {root}, but the entry points would send "
            f"Argo CD and Flux to {lp.platform.delivery.path}/: set delivery.path: {rel} "
            f"(or write to {lp.platform.delivery.path}/)",
        )
        for lp in loaded
        if lp.platform.delivery.path != rel
    ]
    if problems:
        raise InputError(problems)
    return []
