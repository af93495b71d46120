"""A wave PR shows only what changed: advancing `activeWave` rewrites no file whose only change is a
label (issue 36: the wave label once rewrote every object of `delivery/` each wave)."""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import pairwise

import pytest

from gpuplatform.commands.synth import serialized_tree
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.tree import render_tree

_WAVE_LINE = re.compile(rb"^\s*gpuplatform\.dev/wave: .*\n", re.MULTILINE)


def _files(loaded: LoadedPlatform, wave: str) -> dict[str, bytes]:
    """The platform's files rendered with `wave` active (the lock file and README come later)."""
    platform = loaded.platform.model_copy(update={"active_wave": wave})
    return serialized_tree(
        replace(loaded, platform=platform), render_tree(plan_platform(platform)), validate=False
    )


def _label_only(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    return sorted(
        path
        for path in before.keys() & after.keys()
        if before[path] != after[path]
        and _WAVE_LINE.sub(b"", before[path]) == _WAVE_LINE.sub(b"", after[path])
    )


def test_the_reference_pilot_to_driver_validation_pr_touches_no_label_only_file(
    reference_loaded: list[LoadedPlatform],
) -> None:
    # GIVEN the reference platform with `pilot-pool` active, then `driver-validation`
    loaded = next(p for p in reference_loaded if p.platform.name == "reference")
    before, after = _files(loaded, "pilot-pool"), _files(loaded, "driver-validation")
    # THEN the files that change are the entry's (its paths name the wave), none only by a label
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    assert changed and all(p.startswith("delivery/") for p in changed), changed
    assert _label_only(before, after) == []


@pytest.mark.parametrize("name", ["reference", "reference-staging"])
def test_every_wave_pr_of_the_reference_stack_touches_no_label_only_file(
    reference_loaded: list[LoadedPlatform], name: str
) -> None:
    loaded = next(p for p in reference_loaded if p.platform.name == name)
    waves = [w.name for w in loaded.platform.waves]
    files = {w: _files(loaded, w) for w in waves}
    for a, b in pairwise(waves):
        assert _label_only(files[a], files[b]) == [], (a, b)
