"""Unified diffs: what `synth` would change on disk, or what changes between two waves."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path

from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.output.synth import drift_of, render_all
from gpuplatform.render.meta import WAVE_LABEL

__all__ = ["diff_against_disk", "diff_waves"]

_MASK = f"{WAVE_LABEL}: <wave>\n".encode()


def _unified(old: bytes | None, new: bytes | None, old_name: str, new_name: str) -> list[str]:
    a = old.decode(errors="replace").splitlines(keepends=True) if old is not None else []
    b = new.decode(errors="replace").splitlines(keepends=True) if new is not None else []
    return list(
        difflib.unified_diff(
            a, b, old_name if old is not None else "/dev/null", new_name if new is not None else "/dev/null"
        )
    )


def diff_against_disk(loaded: Sequence[LoadedPlatform], out: Path) -> str:
    """The unified diff from the files in `out` to what synth renders now."""
    rendered = render_all(loaded)
    lines: list[str] = []
    for drift in drift_of(rendered, out):
        platform, _, rel = drift.path.partition("/")
        on_disk = out / drift.path
        old = on_disk.read_bytes() if on_disk.is_file() else None
        new = rendered[platform].get(rel)
        lines += _unified(old, new, f"a/{drift.path}", f"b/{drift.path}")
    return "".join(lines)


def diff_waves(files: Mapping[str, bytes], platform: str, old: tuple[str, str], new: tuple[str, str]) -> str:
    """The unified diff between two rendered wave folders (`(directory, wave name)` each).

    The wave label differs on every object between two waves; it is shown as `<wave>` so that the
    diff shows only what really changes in the cluster.
    """

    def inside(directory: str, wave: str) -> dict[str, bytes]:
        prefix = f"waves/{directory}/"
        label = f"{WAVE_LABEL}: {wave}\n".encode()
        return {p[len(prefix) :]: b.replace(label, _MASK) for p, b in files.items() if p.startswith(prefix)}

    before, after = inside(*old), inside(*new)
    lines: list[str] = []
    for rel in sorted(set(before) | set(after)):
        if before.get(rel) != after.get(rel):
            lines += _unified(
                before.get(rel), after.get(rel), f"{platform}/{old[0]}/{rel}", f"{platform}/{new[0]}/{rel}"
            )
    return "".join(lines)
