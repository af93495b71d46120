"""Runbooks hand Kueue's owner the Configuration of a wave that changes it: before the merge when
classes are mapped (a converted Job with an unmapped class is inadmissible), after the sync when a
rollback removes them, and nothing in a wave that leaves the mappings as they are."""

from __future__ import annotations

import re

import pytest

from gpuplatform.commands.synth import render_files
from gpuplatform.load.stacks import load_stack
from tests.conftest import REPO

HANDOFF = "handoff/03-apps/kueueconfigurationhandoff_kueue-system_kueue-configuration.yaml"


@pytest.fixture(scope="module")
def apps() -> str:
    (loaded,) = load_stack(REPO / "stacks" / "kueue-fleet.yaml")
    files = render_files(loaded)
    assert HANDOFF in files
    return files["runbooks/03-apps.md"].decode()


def _section(book: str, direction: str, heading: str) -> str:
    """The `### heading` section of the forward (`## From ...`) or rollback part of a runbook."""
    parts = re.split(r"^## ", book, flags=re.M)
    part = next(p for p in parts if p.lower().startswith(direction))
    return part.split(f"### {heading}\n", 1)[1].split("\n### ", 1)[0]


def test_the_wave_that_maps_a_class_tells_kueues_owner_before_the_merge(apps: str) -> None:
    forward = _section(apps, "from ", "Before the merge")
    assert "Kueue's owner sets `resources.deviceClassMappings` and `featureGates`" in forward
    assert f"as `{HANDOFF}` says (mapped: any-gpu.fleet.example.com)" in forward
    assert "kubectl -n kueue-system rollout restart deployment/kueue-controller-manager" in forward
    assert "Kueue's owner" not in _section(apps, "from ", "After the sync")


def test_its_rollback_removes_the_mapping_after_the_jobs_are_back(apps: str) -> None:
    # the Job goes back before the merge (#38: never to zero at the merge), the mapping after the sync
    before = _section(apps, "rollback", "Before the merge")
    assert "Job `training/train` goes back to `nvidia.com/gpu`" in before
    assert "Kueue's owner" not in before
    back = _section(apps, "rollback", "After the sync")
    assert "Kueue's owner removes the `deviceClassMappings` entry of any-gpu.fleet.example.com" in back


def test_a_wave_that_keeps_the_mappings_has_no_kueue_step() -> None:
    (loaded,) = load_stack(REPO / "stacks" / "kueue-fleet.yaml")
    files = render_files(loaded)
    assert "Kueue's owner" not in files["runbooks/04-cutover.md"].decode()
