"""Unified diffs: what `synth` would change on disk, or what really changes between two waves
(`commands.wave_diff`), and the transition a reviewer reads (`plan --from/--to`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gpuplatform.commands.selection import load_platforms
from gpuplatform.commands.synth import drift_of, render_all, render_files
from gpuplatform.commands.wave_diff import WaveDiff, diff_waves, unified
from gpuplatform.convert.handoff import add_converted_manifests
from gpuplatform.errors import InputError, Problem
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.output.serialize import Serializer
from gpuplatform.output.write import read_regular_file
from gpuplatform.plan.review import reviewed_steps
from gpuplatform.plan.transitions import Transition, platform_transitions
from gpuplatform.plan.waves import WaveState, plan_platform
from gpuplatform.render.tree import LAYERS, Tree, render_wave
from gpuplatform.versions import parse_release

__all__ = [
    "DiffReport",
    "diff_against_disk",
    "diff_command",
    "loaded_wave_diffs",
    "platform_wave_diff",
    "reviewed_transitions",
]

#: A file of a rendered tree read back for the diff (the writer's lock files are the largest).
_READ_LIMIT = 64 * 1024 * 1024


@dataclass(frozen=True)
class DiffReport:
    """`gpuplatform diff`: the unified diff, empty when nothing differs."""

    unified: str

    @property
    def exit_code(self) -> int:
        """1 when there are differences (like `git diff --exit-code`)."""
        return 1 if self.unified else 0


def diff_command(
    stack: str | None,
    overlays: Sequence[str],
    platform: str | None,
    out: Path,
    waves: tuple[str, str] | None = None,
) -> DiffReport:
    """What synth would change in `out`, or (`waves`) what really changes between two waves."""
    loaded = load_platforms(stack, overlays, platform)
    if waves is None:
        return DiffReport(diff_against_disk(loaded, out))
    return DiffReport("".join(d.unified() for d in loaded_wave_diffs(loaded, *waves)))


def diff_against_disk(loaded: Sequence[LoadedPlatform], out: Path) -> str:
    """The unified diff from the files in `out` to what synth renders now (empty: no change)."""
    rendered = render_all(loaded)
    parts: list[str] = []
    for drift in drift_of(rendered, out):
        platform, _, rel = drift.path.partition("/")
        old = None
        if drift.state != "missing":
            old = read_regular_file(out / drift.path, _READ_LIMIT)
            if old is None:
                parts.append(f"not a regular file, not read (a link is never followed): a/{drift.path}\n")
        parts.append(unified(old, rendered[platform].get(rel), f"a/{drift.path}", f"b/{drift.path}"))
    return "".join(parts)


def loaded_wave_diffs(loaded: Sequence[LoadedPlatform], source: str, target: str) -> list[WaveDiff]:
    """`diff --waves FROM TO` of every platform; InputError naming the waves when one is unknown."""
    problems, pairs = [], []
    for lp in loaded:
        plan = plan_platform(lp.platform)
        names = [w.name for w in plan.waves]
        missing = [w for w in dict.fromkeys((source, target)) if w not in names]
        problems += [Problem("--waves", "", "", plan.no_wave(wave)) for wave in missing]
        if not missing:
            pairs.append((lp, plan.wave(source), plan.wave(target)))
    if problems:
        raise InputError(problems)
    return [platform_wave_diff(lp, a, b) for lp, a, b in pairs]


def platform_wave_diff(loaded: LoadedPlatform, old: WaveState, new: WaveState) -> WaveDiff:
    """Render only the two waves' folders and hand-offs of `loaded`, diff them, and validate what
    the diff shows strictly, as synth would (RenderedOutputInvalid names an invalid object)."""
    plan = plan_platform(loaded.platform)
    tree = Tree(loaded.platform.name)
    states = (old,) if old.index == new.index else (old, new)
    for state in states:
        render_wave(tree, plan, state, LAYERS)
    add_converted_manifests(loaded, plan, tree, states)
    found = diff_waves(
        render_files(loaded, tree=tree, validate=False, runbooks=False), loaded.platform.name, old, new
    )
    shown = {p for c in found.changes for p in (c.old_path, c.new_path) if p is not None}
    objects = {p: content for p, content in tree.files.items() if p in shown and isinstance(content, list)}
    Serializer(parse_release(loaded.platform.kubernetes.version).minor).files(
        Tree(tree.platform, dict(objects))
    )
    return found


def reviewed_transitions(loaded: Sequence[LoadedPlatform], source: str, target: str) -> list[Transition]:
    """`plan --from/--to`: each platform's transition with the steps the runbooks read
    (`plan.review.reviewed_steps`: sync steps cut to the units whose rendered files change), and the
    hand-offs that change."""
    found = []
    for lp, t in zip(loaded, platform_transitions(loaded, source, target), strict=True):
        plan = plan_platform(lp.platform)
        changed = platform_wave_diff(lp, plan.wave(source), plan.wave(target))
        steps = reviewed_steps(t.steps, changed.units)
        found.append(replace(t, steps=steps, handoffs=tuple(c.describe() for c in changed.handoffs)))
    return found
