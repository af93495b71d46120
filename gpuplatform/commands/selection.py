"""What a command runs on: the platforms of a stack (`STACK`, `--overlay`, `--platform`) and one
transition (`--from`/`--to`, or `--all`), refused with exit 2 when the options do not fit."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpuplatform.errors import InputError
from gpuplatform.load.stacks import LoadedPlatform, discover_stacks, load_stack, load_stacks

__all__ = ["STACKS_DIR", "load_platforms", "load_selected", "one_transition", "select_platform"]

STACKS_DIR = Path("stacks")


def load_selected(stack: str | None, overlays: Sequence[str]) -> list[LoadedPlatform]:
    """The platforms of one stack (with `--overlay`s) or of every stack in `stacks/`."""
    if stack is None:
        if overlays:
            raise InputError.single("--overlay", "", "an overlay needs a STACK to merge onto")
        return load_stacks(discover_stacks(STACKS_DIR))
    return load_stack(Path(stack), [Path(o) for o in overlays] or None)


def select_platform(
    stack: str, loaded: list[LoadedPlatform], platform: str | None, one: bool
) -> list[LoadedPlatform]:
    """`--platform`: the named platform, or all of them (`one`: a stack of several needs the name)."""
    names = [lp.platform.name for lp in loaded]
    if platform is not None and platform not in names:
        raise InputError.single(
            "--platform", "", f"{stack} has no platform {platform!r} (it has {', '.join(names)})"
        )
    if platform is None and one and len(loaded) > 1:
        raise InputError.single("--platform", "", f"{stack} has platforms {', '.join(names)}: choose one")
    return [lp for lp in loaded if platform in (None, lp.platform.name)]


def load_platforms(
    stack: str | None, overlays: Sequence[str], platform: str | None, one: bool = False
) -> list[LoadedPlatform]:
    """`load_selected`, narrowed to `--platform` (exit 2 naming the platforms when it is unknown)."""
    return select_platform(stack or str(STACKS_DIR), load_selected(stack, overlays), platform, one)


def one_transition(source: str | None, target: str | None, every: bool = False, verb: str = "") -> None:
    """`--from WAVE --to WAVE` come together, and not with `--all` (which `verb`s every transition)."""
    if (source is None) != (target is None):
        raise InputError.single("--from/--to", "", "give both --from WAVE and --to WAVE")
    if every and source is not None:
        raise InputError.single("--all", "", f"--all {verb} every transition: leave out --from/--to")
