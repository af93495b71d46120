"""Golden snapshots: one per (stack platform, wave), every file of the wave in output order.

Update with `pytest tests/test_snapshots.py --snapshot-update` and review the diff like code.
"""

from __future__ import annotations

from functools import cache

import pytest
from syrupy.assertion import SnapshotAssertion

from gpuplatform.commands.synth import render_all
from gpuplatform.load.stacks import discover_stacks, load_stack
from tests.conftest import REPO


@cache
def _rendered() -> dict[str, dict[str, bytes]]:
    out: dict[str, dict[str, bytes]] = {}
    for stack in discover_stacks(REPO / "stacks"):
        out |= render_all(load_stack(stack))
    return out


def _cases() -> list[tuple[str, str]]:
    cases = []
    for platform, files in _rendered().items():
        waves = sorted({p.split("/")[1] for p in files if p.startswith("waves/")})
        cases += [(platform, wave) for wave in waves]
    return cases


@pytest.mark.parametrize(("platform", "wave"), _cases(), ids=lambda v: str(v))
def test_wave_snapshot(platform: str, wave: str, yaml_snapshot: SnapshotAssertion) -> None:
    files = _rendered()[platform]
    parts = []
    for prefix in (f"waves/{wave}/", f"handoff/{wave}/"):
        for path in sorted(p for p in files if p.startswith(prefix)):
            parts.append(f"# {path}\n{files[path].decode()}")
    assert "".join(parts) == yaml_snapshot


def _platforms() -> list[str]:
    return sorted(_rendered())


@pytest.mark.parametrize("platform", _platforms())
def test_delivery_snapshot(platform: str, yaml_snapshot: SnapshotAssertion) -> None:
    files = _rendered()[platform]
    parts = [f"# {p}\n{files[p].decode()}" for p in sorted(files) if p.startswith("delivery/")]
    assert "".join(parts) == yaml_snapshot
